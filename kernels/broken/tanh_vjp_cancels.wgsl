// Deliberately broken VJP kernel of tanh (a negative control): the textbook
// d_x = g (1 - tanh^2 x), with exp_tanh.wgsl's own tanh. Where |tanh x| is near 1 the
// subtraction cancels (~500 ulps off at |x| = 4, zero instead of ~1e-7 beyond |x| = 9), so
// conformance against the rule (g sech x sech x, computed without cancellation) must reject it.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// Whether `v` is a NaN, decided on the bits (a float compare may be folded away).
fn is_nan_(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn exp_(x: f32) -> f32 {
    if (is_nan_(x)) { return x; }
    if (x > 88.72284) { return bitcast<f32>(0x7f800000u); }
    if (x < -103.97209) { return 0.0; }
    let k = round(x * 1.4426950408889634);
    let r = (x - k * 0.693145751953125) - k * 1.4286068203094173e-6;
    var p = 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    let ki = i32(k);
    let k1 = ki / 2;
    let k2 = ki - k1;
    let s1 = bitcast<f32>(u32(k1 + 127) << 23u);
    let s2 = bitcast<f32>(u32(k2 + 127) << 23u);
    return (p * s1) * s2;
}

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

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let t = tanh_(x[i]);
    d_x[i] = d_out[i] * (1.0 - t * t);
}
