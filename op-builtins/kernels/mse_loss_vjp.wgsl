// VJP of builtin/mse_loss (out = sum((a - b)^2) / n): d_a[i] = (a[i] - b[i]) (2 / n) d_out and
// d_b[i] = -d_a[i]. One invocation per element. The three factors are multiplied with their
// exponents taken apart (`lib/scale.wgsl`), so that no intermediate overflows or
// underflows where the exact gradient does not: `a - b` of finite values may overflow (then
// it is formed as `a / 2 - b / 2`, exact for such large values, and the exponent made up),
// and `(2 / n) d_out` overflows for a large cotangent, where the rule's f64 result is finite.
// Zeros and non-finite factors keep IEEE's product (a zero times a finite factor is a zero of
// the product's sign).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_a: array<f32>;
@group(0) @binding(4) var<storage, read_write> d_b: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

fn is_finite_(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

// @include "lib/scale.wgsl"

// d c g: the fractions multiplied (rounded twice), the exponents added, scaled once.
fn product3(d: f32, c: f32, g: f32, extra: i32) -> f32 {
    if (!is_finite_(d) || !is_finite_(g)) { return d * (c * g); }
    if (d == 0.0 || g == 0.0) { return bitcast<f32>((bitcast<u32>(d) ^ bitcast<u32>(g)) & 0x80000000u); }
    let fd = split_(d);
    let fc = split_(c);
    let fg = split_(g);
    return scale_((fd.x * fc.x) * fg.x, i32(fd.y) + i32(fc.y) + i32(fg.y) + extra);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    var d = a[i] - b[i];
    var extra = 0;
    if (!is_finite_(d) && is_finite_(a[i]) && is_finite_(b[i])) {
        d = a[i] * 0.5 - b[i] * 0.5;
        extra = 1;
    }
    let v = product3(d, 2.0 / f32(p.n), d_out[0], extra);
    d_a[i] = v;
    d_b[i] = -v;
}
