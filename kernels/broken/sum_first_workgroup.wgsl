// DELIBERATELY BROKEN (conformance must reject it): sums only the first workgroup's share. One
// workgroup of 256 invocations, each adding its 16 strided elements of the first tile
// (256 x 16 = 4096 elements); everything past element 4095 is never read. Right for every
// n <= 4096, which covers every small case (rank-1 dims stop at 512), so only the `large`
// family can reject it. Non-finite terms are kept out of the sum and decide it at the end, as
// in the built-in sum (`op-builtins/kernels/sum.wgsl`): otherwise an infinity could meet the
// opposite infinity from a partial sum that overflowed in this order but not in the
// reference's, a small-case defect that would hide the one this fixture is for.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

const WG: u32 = 256u;
const ITEMS: u32 = 16u;
var<workgroup> part: array<f32, 256>;
var<workgroup> wflags: array<u32, 256>;
// Non-finite terms kept out of the sum (`fin`), the exact-arithmetic result from their flags
// (`finish`): the built-ins' own helpers.
// @include "../../op-builtins/kernels/lib/nonfinite_flags.wgsl"

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    for (var k = 0u; k < ITEMS; k = k + 1u) {
        let i = lid + k * WG;
        if (i < p.n) {
            s = s + fin(x[i]);
        }
    }
    part[lid] = s;
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
        out[0] = finish(wflags[0], part[0]);
    }
}
