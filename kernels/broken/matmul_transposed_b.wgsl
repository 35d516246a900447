// DELIBERATELY BROKEN (conformance must reject it): reads b as if it were stored transposed (b[j, q] instead of b[q, j]).
// builtin/matmul: out[i, j] = sum_p a[i, p] b[p, j], row-major; one invocation per output.
struct Params { m: u32, k: u32, n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x;
    if (t >= p.m * p.n) { return; }
    let i = t / p.n;
    let j = t % p.n;
    var s = 0.0;
    for (var q = 0u; q < p.k; q = q + 1u) {
        s = s + a[i * p.k + q] * b[j * p.k + q];
    }
    out[t] = s;
}
