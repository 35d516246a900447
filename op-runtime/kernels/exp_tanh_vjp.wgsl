// VJP kernels of builtin/exp and builtin/tanh (entries `exp_vjp`, `tanh_vjp`): d_x[i] from
// x[i] and the cotangent d_out[i], the rules' arithmetic in their order. One invocation per
// element, linear launch (rows of nwg.x workgroups of 64).
// The VJP op's bindings (x, d_out, d_x, p) differ from the forward kernels' (x, out, p), so it
// is a module of its own, sharing the written-out exp_ (lib/exp.wgsl) with them.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/exp.wgsl"

// exp: d_x = (g h) h with h = e^(x / 2), the rule's form (see builtin::exp_vjp). e^x itself is
// subnormal from x = -87.3: rounded there first (to as few as one bit) and then scaled by a
// large g, it put tens to thousands of ulps into a normal result; h stays normal wherever the
// result is, so the result is within a few ulps.
@compute @workgroup_size(64)
fn exp_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let h = exp_(x[i] * 0.5);
    d_x[i] = (d_out[i] * h) * h;
}

// tanh: d_x = (g sech x) sech x, sech x = 2h / (1 + h h) with h = e^-|x|, as the rule computes
// it (1 - tanh^2 x would cancel where |tanh x| is near 1; see the rule's doc).
@compute @workgroup_size(64)
fn tanh_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let h = exp_(-abs(x[i]));
    let q = 2.0 * h / (1.0 + h * h);
    d_x[i] = (d_out[i] * q) * q;
}
