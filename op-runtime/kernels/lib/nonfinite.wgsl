// Shared by the WGSL contractions (included with `// @include "lib/nonfinite.wgsl"`).
// Non-finite products do not enter the sum: `fin` records them and returns 0, and `finish`
// gives the exact-arithmetic result: NaN if any product is NaN or both infinities occur, else
// the infinity that occurs, else the pairwise sum of the finite products. (Summed in with the
// finite ones, an infinity could meet the opposite infinity from a partial sum of finite
// products that overflowed in this order but not in the reference's: NaN where the reference
// has an infinity.)
var<private> nan_seen: bool;
var<private> first_nan: f32;
var<private> pos_inf: bool;
var<private> neg_inf: bool;

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
    return s;
}
