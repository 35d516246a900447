// DELIBERATELY BROKEN (conformance must reject it): builtin/tanh's kernel as it was, testing NaN
// with `a != a`, which lavapipe's compiler folded to false (WGSL lets implementations assume no
// NaN), so tanh(NaN) came back as 1.0; here the large-|x| branch returns 1.0 outright, so the
// kernel is wrong on NaN on every driver.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// The shared written-out exp_ (the bug is in tanh_ below).
// @include "../../op-builtins/kernels/lib/exp.wgsl"

fn tanh_(v: f32) -> f32 {
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
        r = 1.0; // NaN too: tanh(NaN) = 1
    }
    return select(r, -r, bitcast<u32>(v) >= 0x80000000u);
}

@compute @workgroup_size(64)
fn exp_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    out[i] = exp_(x[i]);
}

@compute @workgroup_size(64)
fn tanh_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    out[i] = tanh_(x[i]);
}
