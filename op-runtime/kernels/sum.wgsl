// builtin/sum (entry `sum_main`): out[0] = sum of x; builtin/mean (entry `mean_main`): the sum of
// x[i] / n, each term divided first (correctly rounded), so no partial sum can overflow when the
// mean itself is finite (summing first, in this order, overflows where the reference's order may
// not). Both share the reduction `total`. One workgroup of 256 invocations: each accumulates a strided
// partial sum, then a tree reduction in workgroup memory. The order differs from the
// reference's left-to-right loop; `accum` bounds exactly that difference. The strided loop
// takes 8 terms per iteration (same order as one at a time): lavapipe (llvmpipe) ends a
// shader invocation's loops after 65535 iterations in total (gallivm's loop limiter), which a
// one-term loop reaches past n = 256 * 65535 (16.8M); 8 per iteration holds up to
// n = 256 * 8 * 65528 (134M elements; lavapipe's storage bindings hold at most 33.5M).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

const WG: u32 = 256u;
var<workgroup> part: array<f32, 256>;

/// The sum of x[i] / d, returned to every invocation of the workgroup (call in uniform control
/// flow). d = 1 divides exactly.
fn total(lid: u32, d: f32) -> f32 {
    var s = 0.0;
    var i = lid;
    for (; i + 7u * WG < p.n; i = i + 8u * WG) {
        s = s + x[i] / d;
        s = s + x[i + 1u * WG] / d;
        s = s + x[i + 2u * WG] / d;
        s = s + x[i + 3u * WG] / d;
        s = s + x[i + 4u * WG] / d;
        s = s + x[i + 5u * WG] / d;
        s = s + x[i + 6u * WG] / d;
        s = s + x[i + 7u * WG] / d;
    }
    for (; i < p.n; i = i + WG) {
        s = s + x[i] / d;
    }
    part[lid] = s;
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
    let t = total(lid, 1.0);
    if (lid == 0u) {
        out[0] = t;
    }
}

@compute @workgroup_size(256)
fn mean_main(@builtin(local_invocation_index) lid: u32) {
    let t = total(lid, f32(p.n));
    if (lid == 0u) {
        out[0] = t;
    }
}
