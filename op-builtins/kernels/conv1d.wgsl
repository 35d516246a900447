// builtin/conv1d: out[i] = sum_j x[i + j] w[j] (valid correlation); one invocation per output.
// The m products are summed pairwise (units of 16 consecutive products summed as a balanced
// tree, pushed on a binary counter), so every product is rounded at most about
// ceil(log2 m) + 1 times: within `accum`'s pairwise bound on any input. Loop iterations per
// invocation: m / 16 + 15 + 24, below lavapipe's limit of 65535 (gallivm's loop limiter) for
// every m <= 16 * 65490 (1_047_840).
struct Params { n: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/pairwise.wgsl"

// @include "lib/nonfinite.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n - p.m + 1u) { return; }
    var j = 0u;
    for (; j + 15u < p.m; j = j + 16u) {
        push((((fin_prod(x[i + j + 0u], w[j + 0u]) + fin_prod(x[i + j + 1u], w[j + 1u]))
            + (fin_prod(x[i + j + 2u], w[j + 2u]) + fin_prod(x[i + j + 3u], w[j + 3u])))
            + ((fin_prod(x[i + j + 4u], w[j + 4u]) + fin_prod(x[i + j + 5u], w[j + 5u]))
            + (fin_prod(x[i + j + 6u], w[j + 6u]) + fin_prod(x[i + j + 7u], w[j + 7u]))))
            + (((fin_prod(x[i + j + 8u], w[j + 8u]) + fin_prod(x[i + j + 9u], w[j + 9u]))
            + (fin_prod(x[i + j + 10u], w[j + 10u]) + fin_prod(x[i + j + 11u], w[j + 11u])))
            + ((fin_prod(x[i + j + 12u], w[j + 12u]) + fin_prod(x[i + j + 13u], w[j + 13u]))
            + (fin_prod(x[i + j + 14u], w[j + 14u]) + fin_prod(x[i + j + 15u], w[j + 15u])))));
    }
    for (; j < p.m; j = j + 1u) {
        push(fin_prod(x[i + j], w[j]));
    }
    out[i] = finish(pushed());
}
