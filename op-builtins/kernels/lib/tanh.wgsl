// @include "exp.wgsl"

// tanh is written out rather than WGSL's tanh(), whose software implementations may compute
// (e^2x - 1) / (e^2x + 1): inaccurate near 0 and NaN for large |x|. Odd Taylor series through
// x^17 for |x| < 0.5 (truncation < 1e-8 relative), 1 - 2 / (e^2|x| + 1) up to |x| = 9, and
// +-1 beyond (tanh(9) rounds to 1 in f32). The sign is restored last, so tanh(-0) = -0.
// NaN is tested on the bits, never with `x != x`: WGSL lets implementations assume no NaN,
// and lavapipe folded `a != a` to false, so tanh(NaN) came back as 1.
fn tanh_(v: f32) -> f32 {
    if (is_nan_(v)) { return v; }
    let a = abs(v);
    var r: f32;
    if (a < 0.5) {
        let z = a * a;
        // tanh x = x (1 - z/3 + 2z^2/15 - 17z^3/315 + 62z^4/2835 - 1382z^5/155925
        //             + 21844z^6/6081075 - 929569z^7/638512875 + 6404582z^8/10854718875)
        var s = 6404582.0 / 10854718875.0;
        s = s * z - 929569.0 / 638512875.0;
        s = s * z + 21844.0 / 6081075.0;
        s = s * z - 1382.0 / 155925.0;
        s = s * z + 62.0 / 2835.0;
        s = s * z - 17.0 / 315.0;
        s = s * z + 2.0 / 15.0;
        s = s * z - 1.0 / 3.0;
        r = a + a * (s * z);
    } else if (a < 9.0) {
        r = 1.0 - 2.0 / (exp_(2.0 * a) + 1.0);
    } else {
        r = 1.0;
    }
    return select(r, -r, bitcast<u32>(v) >= 0x80000000u);
}
