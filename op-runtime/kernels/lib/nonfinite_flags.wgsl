// Shared by the WGSL reductions (included with `// @include "lib/nonfinite_flags.wgsl"`):
// `fin` keeps non-finite terms out of the sum, recording them in `flags` (1: NaN, 2: +inf,
// 4: -inf; a kernel that combines invocations ORs their flags), and `finish` gives the
// exact-arithmetic result from the combined flags and the finite sum.
var<private> flags: u32;

fn fin(v: f32) -> f32 {
    let bits = bitcast<u32>(v);
    if ((bits & 0x7f800000u) != 0x7f800000u) { return v; }
    if ((bits & 0x007fffffu) != 0u) {
        flags = flags | 1u;
    } else if ((bits >> 31u) == 1u) {
        flags = flags | 4u;
    } else {
        flags = flags | 2u;
    }
    return 0.0;
}

fn finish(f: u32, s: f32) -> f32 {
    if ((f & 1u) != 0u || (f & 6u) == 6u) { return bitcast<f32>(0x7fc00000u); }
    if ((f & 2u) != 0u) { return bitcast<f32>(0x7f800000u); }
    if ((f & 4u) != 0u) { return bitcast<f32>(0xff800000u); }
    return s;
}
