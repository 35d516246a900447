// The total-order key of an f32: unsigned comparison of keys is IEEE 754 total order
// (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN); equal keys are equal bits.
fn total_order_key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
}
