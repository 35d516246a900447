// Shared by the WGSL reductions (included with `// @include "lib/nonfinite_flags.wgsl"`):
// `fin` keeps non-finite terms out of the sum, recording them in `flags` (1: NaN, 2: +inf,
// 4: -inf; a kernel that combines invocations ORs their flags), and `finish` gives the
// exact-arithmetic result from the combined flags and the finite sum. `fin_prod` does the same
// for a product, except that a product of finite factors that overflows (a finite exact term)
// is recorded apart (8: positive, 16: negative) and decides the result only where no term is
// infinite or NaN: an infinite input term wins over it, as in exact arithmetic.
var<private> flags: u32;

fn is_finite_(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn fin_prod(u: f32, v: f32) -> f32 {
    let q = u * v;
    if (is_finite_(q) || !is_finite_(u) || !is_finite_(v)) { return fin(q); }
    flags = flags | select(8u, 16u, (bitcast<u32>(q) >> 31u) == 1u);
    return 0.0;
}

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
    if ((f & 24u) == 24u) { return bitcast<f32>(0x7fc00000u); }
    if ((f & 8u) != 0u) { return bitcast<f32>(0x7f800000u); }
    if ((f & 16u) != 0u) { return bitcast<f32>(0xff800000u); }
    return s;
}
