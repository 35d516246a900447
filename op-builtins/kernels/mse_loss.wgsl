// builtin/mse_loss: out[0] = sum((a - b)^2) / n. One workgroup of 256 invocations: each sums
// its strided share of the squared differences pairwise (units of 8 strided terms summed as a
// balanced tree, pushed on a binary counter), then a tree reduction in workgroup memory, so
// every term is rounded at most about ceil(log2 n) + 4 times (subtract, square, the tree, the
// division): within `accum(4)`'s pairwise bound on any input. Loop iterations per invocation:
// n / 2048 + 7 + 24, far below lavapipe's limit of 65535.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

const WG: u32 = 256u;
var<workgroup> part: array<f32, 256>;

// Non-finite terms do not enter the sum: `fin` records them in `flags` (1: NaN, 2: +inf,
// 4: -inf) and returns 0; the flags are OR-ed across the workgroup with the partial sums, and
// `finish` gives the exact-arithmetic result: NaN if a term is NaN or both infinities occur,
// else the infinity that occurs, else the pairwise sum of the finite terms. (Summed in with
// the finite ones, an infinity could meet the opposite infinity from a partial sum of finite
// terms that overflowed in this order but not in the reference's.)
var<workgroup> wflags: array<u32, 256>;
// @include "lib/nonfinite_flags.wgsl"

fn term(i: u32) -> f32 {
    let d = a[i] - b[i];
    return fin(d * d);
}

// @include "lib/pairwise.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var i = lid;
    for (; i + 7u * WG < p.n; i = i + 8u * WG) {
        let s = (term(i) + term(i + 1u * WG)) + (term(i + 2u * WG) + term(i + 3u * WG));
        let t = (term(i + 4u * WG) + term(i + 5u * WG)) + (term(i + 6u * WG) + term(i + 7u * WG));
        push(s + t);
    }
    for (; i < p.n; i = i + WG) {
        push(term(i));
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
    if (lid == 0u) {
        out[0] = finish(wflags[0], part[0]) / f32(p.n);
    }
}
