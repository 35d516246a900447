// Exponents taken apart and put back with exact multiplications only (WGSL's `frexp` and
// `ldexp` are not trusted here: drivers flush subnormals and leave `ldexp` out of range
// indeterminate). Shared by the VJP kernels that form a product of several factors without
// letting an intermediate overflow or underflow where the product does not.

// `x = f 2^e` for a finite, non-zero x: (f, e) with |f| in [0.5, 1) and x's sign; a subnormal x
// is normalised first (a driver that flushes it gives f = 0, the flushed input's own result).
fn split_(x: f32) -> vec2<f32> {
    var v = x;
    var adj = 0;
    if ((bitcast<u32>(v) & 0x7f800000u) == 0u) {
        v = v * 18446744073709551616.0; // 2^64, exact
        adj = -64;
    }
    let b = bitcast<u32>(v);
    if ((b & 0x7fffffffu) == 0u) { return vec2<f32>(v, 0.0); }
    let e = i32((b >> 23u) & 0xffu) - 126 + adj;
    return vec2<f32>(bitcast<f32>((b & 0x807fffffu) | 0x3f000000u), f32(e));
}

// `m 2^e` for |m| in [1/16, 4], rounded once: two exact power-of-two steps, the second the only
// one that can round (into the subnormals) or overflow.
fn scale_(m: f32, e: i32) -> f32 {
    let sign = bitcast<u32>(m) & 0x80000000u;
    if (e > 200) { return bitcast<f32>(sign | 0x7f800000u); }
    if (e < -200) { return bitcast<f32>(sign); }
    let e1 = e / 2;
    let e2 = e - e1;
    let s1 = bitcast<f32>(u32(e1 + 127) << 23u);
    let s2 = bitcast<f32>(u32(e2 + 127) << 23u);
    return (m * s1) * s2;
}
