// The square root with subnormal inputs handled on the bits (a device that flushes subnormal
// operands would otherwise return 0): a subnormal x is scaled to x 2^64 from its integer
// mantissa (exact), its root taken and scaled back by 2^-32 (exact: the root is normal).
// Zeros keep their sign, NaN stays NaN, a negative value gives NaN.
fn sqrt_(v: f32) -> f32 {
    let u = bitcast<u32>(v);
    let mag = u & 0x7fffffffu;
    if (mag == 0u || mag > 0x7f800000u) { return v; }
    if ((u >> 31u) == 1u) { return bitcast<f32>(0x7fc00000u); }
    if (mag < 0x00800000u) {
        let scaled = f32(mag) * bitcast<f32>(42u << 23u); // mantissa * 2^-85 = v * 2^64
        return sqrt(scaled) * bitcast<f32>(95u << 23u);   // * 2^-32
    }
    return sqrt(v);
}
