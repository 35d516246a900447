// DELIBERATELY BROKEN (conformance must reject it): the strided loop stops at n - 1, so the last element is never added.
// builtin/sum: out[0] = sum of x. One workgroup of 256 invocations: each accumulates a strided
// partial sum, then a tree reduction in workgroup memory. The order differs from the
// reference's left-to-right loop; `accum` bounds exactly that difference.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

const WG: u32 = 256u;
var<workgroup> part: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    for (var i = lid; i + 1u < p.n; i = i + WG) {
        s = s + x[i];
    }
    part[lid] = s;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            part[lid] = part[lid] + part[lid + stride];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        out[0] = part[0];
    }
}
