// Deliberately broken VJP kernel of tanh (a negative control): the textbook
// d_x = g (1 - tanh^2 x), with the built-in kernels' own tanh_ (lib/tanh.wgsl). Where |tanh x|
// is near 1 the subtraction cancels (~500 ulps off at |x| = 4, zero instead of ~1e-7 beyond
// |x| = 9), so conformance against the rule (g sech x sech x, computed without cancellation)
// must reject it.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "../../op-builtins/kernels/lib/tanh.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let t = tanh_(x[i]);
    d_x[i] = d_out[i] * (1.0 - t * t);
}
