// builtin/matmul: out[i, j] = sum_p a[i, p] b[p, j], row-major; one invocation per output.
// The loop over k takes 16 terms per iteration (same order as one at a time): lavapipe
// (llvmpipe) ends a shader invocation's loops after 65535 iterations in total (gallivm's loop
// limiter), so a one-term loop silently dropped every term past the 65535th (k > 65535);
// now every k <= 16 * 65520 (1_048_320) sums in full there (65520 iterations of 16, at most
// 15 of one). Other drivers have no limiter.
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
    let r = i * p.k;
    var s = 0.0;
    var q = 0u;
    for (; q + 15u < p.k; q = q + 16u) {
        s = s + a[r + q] * b[q * p.n + j];
        s = s + a[r + q + 1u] * b[(q + 1u) * p.n + j];
        s = s + a[r + q + 2u] * b[(q + 2u) * p.n + j];
        s = s + a[r + q + 3u] * b[(q + 3u) * p.n + j];
        s = s + a[r + q + 4u] * b[(q + 4u) * p.n + j];
        s = s + a[r + q + 5u] * b[(q + 5u) * p.n + j];
        s = s + a[r + q + 6u] * b[(q + 6u) * p.n + j];
        s = s + a[r + q + 7u] * b[(q + 7u) * p.n + j];
        s = s + a[r + q + 8u] * b[(q + 8u) * p.n + j];
        s = s + a[r + q + 9u] * b[(q + 9u) * p.n + j];
        s = s + a[r + q + 10u] * b[(q + 10u) * p.n + j];
        s = s + a[r + q + 11u] * b[(q + 11u) * p.n + j];
        s = s + a[r + q + 12u] * b[(q + 12u) * p.n + j];
        s = s + a[r + q + 13u] * b[(q + 13u) * p.n + j];
        s = s + a[r + q + 14u] * b[(q + 14u) * p.n + j];
        s = s + a[r + q + 15u] * b[(q + 15u) * p.n + j];
    }
    for (; q < p.k; q = q + 1u) {
        s = s + a[r + q] * b[q * p.n + j];
    }
    out[t] = s;
}
