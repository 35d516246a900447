// `a + b` exactly as the reference's host arithmetic gives it (x86-64: IEEE 754 with gradual
// underflow; a NaN operand comes back quieted, the first one if both are; inf + -inf is the
// default NaN 0xffc00000), also on devices that flush subnormals to zero or canonicalise NaNs
// (NVIDIA's Vulkan driver does both): NaNs and infinities are decided on the bits, and a sum
// whose operands are both below 2^-100 (the only sums whose result can be subnormal) is formed
// scaled by 2^64, where every value involved is normal and rounds the same. A subnormal beside
// an operand of 2^-100 or more cannot change the rounded sum, so flushing it there changes
// nothing. (The example median's VJP kernel carries the same function.)
fn pow2_(e: i32) -> f32 {
    return bitcast<f32>(u32(127 + e) << 23u);
}

// v * 2^64, exactly, for |v| < 2^-100 given by its bits (a subnormal is its integer mantissa
// times 2^-149).
fn scale_up_(u: u32) -> f32 {
    let mag = u & 0x7fffffffu;
    var s = bitcast<f32>(mag) * pow2_(64);
    if (mag < 0x00800000u) { s = f32(mag) * pow2_(-85); }
    return select(s, -s, (u >> 31u) == 1u);
}

// s * 2^-64, exactly: a subnormal result built from its integer mantissa.
fn scale_down_(s: f32) -> f32 {
    let u = bitcast<u32>(s);
    if ((u & 0x7fffffffu) >= (65u << 23u)) { return s * pow2_(-64); } // |s| >= 2^-62: normal
    return bitcast<f32>((u & 0x80000000u) | u32(abs(s) * pow2_(85)));
}

fn add_exact(a: f32, b: f32) -> f32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    if ((ua & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>(ua | 0x00400000u); }
    if ((ub & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>(ub | 0x00400000u); }
    let ia = (ua & 0x7fffffffu) == 0x7f800000u;
    let ib = (ub & 0x7fffffffu) == 0x7f800000u;
    if (ia && ib && ((ua ^ ub) >> 31u) == 1u) { return bitcast<f32>(0xffc00000u); }
    let small = 27u << 23u; // 2^-100
    if (ia || ib || (ua & 0x7fffffffu) >= small || (ub & 0x7fffffffu) >= small) { return a + b; }
    return scale_down_(scale_up_(ua) + scale_up_(ub));
}
