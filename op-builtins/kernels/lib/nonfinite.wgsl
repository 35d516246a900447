// Shared by the WGSL contractions (included with `// @include "lib/nonfinite.wgsl"`).
// Non-finite products do not enter the sum: `fin_prod` records them and returns 0, and
// `finish` gives the exact-arithmetic result: NaN if any product is NaN or both infinities
// occur, else the infinity that occurs, else the pairwise sum of the finite products. (Summed
// in with the finite ones, an infinity could meet the opposite infinity from a partial sum of
// finite products that overflowed in this order but not in the reference's: NaN where the
// reference has an infinity.) A product of two finite factors that overflows is not an
// infinite term (its exact value is finite): it is recorded apart and decides the result
// only where no factor is infinite, as an overflow of that sign (NaN for both signs), which is
// what `accum` allows a sum whose terms of that sign reach the overflow threshold.
var<private> nan_seen: bool;
var<private> first_nan: f32;
var<private> pos_inf: bool;
var<private> neg_inf: bool;
var<private> pos_over: bool;
var<private> neg_over: bool;

fn is_finite_(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn fin_prod(u: f32, v: f32) -> f32 {
    let q = u * v;
    if (is_finite_(q) || !is_finite_(u) || !is_finite_(v)) { return fin(q); }
    if ((bitcast<u32>(q) >> 31u) == 1u) { neg_over = true; } else { pos_over = true; }
    return 0.0;
}

fn fin(v: f32) -> f32 {
    let bits = bitcast<u32>(v);
    if ((bits & 0x7f800000u) != 0x7f800000u) { return v; }
    if ((bits & 0x007fffffu) != 0u) {
        if (!nan_seen) { first_nan = v; }
        nan_seen = true;
    } else if ((bits >> 31u) == 1u) {
        neg_inf = true;
    } else {
        pos_inf = true;
    }
    return 0.0;
}

fn finish(s: f32) -> f32 {
    if (nan_seen) { return first_nan; }
    if (pos_inf && neg_inf) { return bitcast<f32>(0x7fc00000u); }
    if (pos_inf) { return bitcast<f32>(0x7f800000u); }
    if (neg_inf) { return bitcast<f32>(0xff800000u); }
    if (pos_over && neg_over) { return bitcast<f32>(0x7fc00000u); }
    if (pos_over) { return bitcast<f32>(0x7f800000u); }
    if (neg_over) { return bitcast<f32>(0xff800000u); }
    return s;
}
