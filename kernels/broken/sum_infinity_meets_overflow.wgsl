// BROKEN on purpose (tests/conformance_infinities.rs): builtin/sum's pairwise reduction with
// infinite terms summed in with the finite ones, so an infinity can meet the opposite infinity
// of a partial sum that overflowed in this order (MAX + MAX) but not in the reference's: NaN
// where the reference has -inf.
// builtin/sum (entry `sum_main`): out[0] = sum of x; builtin/mean (entry `mean_main`): that sum
// divided by n. Both share the reduction `total`. One workgroup of 256 invocations: each sums
// its strided share pairwise (units of 8 strided terms summed as a balanced tree, pushed on a
// binary counter), then a tree reduction in workgroup memory: every term is rounded at most
// about ceil(log2 n) + 1 times, within `accum`'s pairwise bound on any input (a strided
// sequential loop drifted like a sequential sum on a biased input, 0.1 repeated). Loop
// iterations per invocation: n / 2048 + 7 + 24, far below lavapipe's limit of 65535 for any
// n its storage bindings hold (33.5M).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

const WG: u32 = 256u;
var<workgroup> part: array<f32, 256>;

// @include "../../op-builtins/kernels/lib/pairwise.wgsl"

/// The sum of x, returned to every invocation of the workgroup (call in uniform control flow).
fn total(lid: u32) -> f32 {
    var i = lid;
    for (; i + 7u * WG < p.n; i = i + 8u * WG) {
        let a = (x[i] + x[i + 1u * WG]) + (x[i + 2u * WG] + x[i + 3u * WG]);
        let b = (x[i + 4u * WG] + x[i + 5u * WG]) + (x[i + 6u * WG] + x[i + 7u * WG]);
        push(a + b);
    }
    for (; i < p.n; i = i + WG) {
        push(x[i]);
    }
    part[lid] = pushed();
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            part[lid] = part[lid] + part[lid + stride];
        }
        workgroupBarrier();
    }
    return part[0];
}

@compute @workgroup_size(256)
fn sum_main(@builtin(local_invocation_index) lid: u32) {
    let t = total(lid);
    if (lid == 0u) {
        out[0] = t;
    }
}
