// Deliberately broken VJP kernel of exp (a negative control, the form before the fix):
// d_x = e^x g with e^x rounded first. From x = -87.3 e^x is subnormal: rounded to as few as one
// bit and then scaled by a large g into a normal result, it is tens to thousands of ulps off,
// so conformance against the rule ((g h) h, h = e^(x / 2)) must reject it on such inputs.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "../../op-builtins/kernels/lib/exp.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_x[i] = exp_(x[i]) * d_out[i];
}
