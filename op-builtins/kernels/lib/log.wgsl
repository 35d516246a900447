// ln x for f32 (`log_`), written out: WGSL only bounds log() to an absolute 2^-21 near 1
// (lavapipe is ~30 ulp off at x = 0.97). NaN propagates, ln(+-0) = -inf, ln(negative) = NaN,
// ln(+inf) = +inf. fdlibm's scheme: x = 2^e m with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
// s = f / (2 + f), ln(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2))), ln 2 split in a high part with
// trailing zero bits and a low part. Exponent and mantissa come from the bits (subnormals are
// normalised with integer ops, so they are exact even where the device flushes denormals).
fn log_(v: f32) -> f32 {
    let b = bitcast<u32>(v);
    let mag = b & 0x7fffffffu;
    if (mag > 0x7f800000u) { return v; }                         // NaN
    if (mag == 0u) { return bitcast<f32>(0xff800000u); }         // +-0 -> -inf
    if (b >= 0x80000000u) { return bitcast<f32>(0x7fc00000u); }  // negative -> NaN
    if (b == 0x7f800000u) { return v; }                          // +inf
    var e: i32;
    var mbits: u32;
    if (b < 0x00800000u) {
        // Subnormal: shift the leading one into the implicit-bit position.
        let shift = countLeadingZeros(b) - 8u;
        mbits = (b << shift) & 0x007fffffu;
        e = -126 - i32(shift);
    } else {
        mbits = b & 0x007fffffu;
        e = i32(b >> 23u) - 127;
    }
    var m = bitcast<f32>(mbits | 0x3f800000u);  // [1, 2)
    if (m > 1.4142135) {
        m = m * 0.5;
        e = e + 1;
    }
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    var r = 2.0 / 13.0;
    r = r * z + 2.0 / 11.0;
    r = r * z + 2.0 / 9.0;
    r = r * z + 2.0 / 7.0;
    r = r * z + 2.0 / 5.0;
    r = r * z + 2.0 / 3.0;
    r = r * z;
    let hfsq = 0.5 * f * f;
    let dk = f32(e);
    return dk * 0.693138122558593750 - ((hfsq - (s * (hfsq + r) + dk * 9.0580006145e-06)) - f);
}
