// builtin/conv1d: out[i] = sum_j x[i + j] w[j] (valid correlation); one invocation per output.
// The loop over m takes 16 terms per iteration (same order as one at a time): lavapipe
// (llvmpipe) ends a shader invocation's loops after 65535 iterations in total (gallivm's loop
// limiter), which a one-term loop reaches past m = 65535; now every m <= 16 * 65520
// (1_048_320) sums in full there (65520 iterations of 16, at most 15 of one). Other drivers
// have no limiter.
struct Params { n: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n - p.m + 1u) { return; }
    var s = 0.0;
    var j = 0u;
    for (; j + 15u < p.m; j = j + 16u) {
        s = s + x[i + j] * w[j];
        s = s + x[i + j + 1u] * w[j + 1u];
        s = s + x[i + j + 2u] * w[j + 2u];
        s = s + x[i + j + 3u] * w[j + 3u];
        s = s + x[i + j + 4u] * w[j + 4u];
        s = s + x[i + j + 5u] * w[j + 5u];
        s = s + x[i + j + 6u] * w[j + 6u];
        s = s + x[i + j + 7u] * w[j + 7u];
        s = s + x[i + j + 8u] * w[j + 8u];
        s = s + x[i + j + 9u] * w[j + 9u];
        s = s + x[i + j + 10u] * w[j + 10u];
        s = s + x[i + j + 11u] * w[j + 11u];
        s = s + x[i + j + 12u] * w[j + 12u];
        s = s + x[i + j + 13u] * w[j + 13u];
        s = s + x[i + j + 14u] * w[j + 14u];
        s = s + x[i + j + 15u] * w[j + 15u];
    }
    for (; j < p.m; j = j + 1u) {
        s = s + x[i + j] * w[j];
    }
    out[i] = s;
}
