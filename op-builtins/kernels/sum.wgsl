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

// @include "lib/pairwise.wgsl"

// Non-finite terms do not enter the sum: `fin` records them in `flags` (1: NaN, 2: +inf,
// 4: -inf) and returns 0; the flags are OR-ed across the workgroup with the partial sums, and
// `finish` gives the exact-arithmetic result: NaN if a term is NaN or both infinities occur,
// else the infinity that occurs, else the pairwise sum of the finite terms. (Summed in with
// the finite ones, an infinity could meet the opposite infinity from a partial sum of finite
// terms that overflowed in this order but not in the reference's.)
var<workgroup> wflags: array<u32, 256>;
// @include "lib/nonfinite_flags.wgsl"

/// The sum of `x[i] * sc` (`sc` a power of two), returned to every invocation of the workgroup
/// (call in uniform control flow).
fn total(lid: u32, sc: f32) -> f32 {
    var i = lid;
    for (; i + 7u * WG < p.n; i = i + 8u * WG) {
        let a = (fin(x[i]) * sc + fin(x[i + 1u * WG]) * sc) + (fin(x[i + 2u * WG]) * sc + fin(x[i + 3u * WG]) * sc);
        let b = (fin(x[i + 4u * WG]) * sc + fin(x[i + 5u * WG]) * sc) + (fin(x[i + 6u * WG]) * sc + fin(x[i + 7u * WG]) * sc);
        push(a + b);
    }
    for (; i < p.n; i = i + WG) {
        push(fin(x[i]) * sc);
    }
    part[lid] = pushed();
    wflags[lid] = flags;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            part[lid] = part[lid] + part[lid + stride];
            wflags[lid] = wflags[lid] | wflags[lid + stride];
        }
        workgroupBarrier();
    }
    return finish(wflags[0], part[0]);
}

@compute @workgroup_size(256)
fn sum_main(@builtin(local_invocation_index) lid: u32) {
    let t = total(lid, 1.0);
    if (lid == 0u) {
        out[0] = t;
    }
}

// The mean sums the terms scaled by 2^-s, s = ceil(log2 n), so that no partial sum of finite
// terms overflows where the mean itself is finite (n terms of at most f32::MAX sum to at most
// 2^s MAX); the scaling is exact except for terms below 2^(s - 126), whose loss (at most
// 2^(s - 150) on the mean) is far inside accum's absolute term. Then `(t / n) 2^s`.
@compute @workgroup_size(256)
fn mean_main(@builtin(local_invocation_index) lid: u32) {
    let s = 32u - countLeadingZeros(max(p.n, 1u) - 1u);
    let t = total(lid, bitcast<f32>((127u - s) << 23u));
    if (lid == 0u) {
        out[0] = (t / f32(p.n)) * bitcast<f32>((127u + s) << 23u);
    }
}
