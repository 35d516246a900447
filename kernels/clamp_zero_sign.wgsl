// Clamp of x to [lo, hi] in IEEE total order (values below lo become lo, above hi become hi),
// with the total-order key of the median kernels; the result's zeros are then made +0, as a
// kernel built on WGSL's `min(max(x, lo), hi)` may do (WGSL's min and max may return either
// zero). Right for an op declaring `signed_zero = ignore`; rejected by the default (exact).
struct Params { n: u32, lo: f32, hi: f32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

fn key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    var v = x[i];
    if (key(v) < key(p.lo)) {
        v = p.lo;
    } else if (key(v) > key(p.hi)) {
        v = p.hi;
    }
    out[i] = select(v, 0.0, bitcast<u32>(v) == 0x80000000u);
}
