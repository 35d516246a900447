// VJP kernels of builtin/abs, sqrt, square and sigmoid, one entry point each (the rules'
// arithmetic, in their order): d_x[i] from x[i] and the cotangent d_out[i]. One invocation per
// element, linear launch (rows of nwg.x workgroups of 64).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/exp.wgsl"
// @include "lib/sqrt.wgsl"

// abs: g where x > 0, -g where x < 0, else 0 (zeros and NaN), decided on the bits (a float
// compare may treat subnormals as zero).
@compute @workgroup_size(64)
fn abs_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let u = bitcast<u32>(x[i]);
    let mag = u & 0x7fffffffu;
    let live = mag != 0u && mag <= 0x7f800000u;
    let g = d_out[i];
    d_x[i] = select(0.0, select(g, -g, (u >> 31u) == 1u), live);
}

// sqrt: g / (2 sqrt x).
@compute @workgroup_size(64)
fn sqrt_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    d_x[i] = d_out[i] / (2.0 * sqrt_(x[i]));
}

// square: (x + x) g.
@compute @workgroup_size(64)
fn square_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let v = x[i];
    d_x[i] = (v + v) * d_out[i];
}

// sigmoid: g h / (1 + h)^2 with h = e^-|x| (no cancellation where sigmoid is near 1); beyond
// |x| = 64, g e^-(|x| - 44) e^-44 (the rule's order: no subnormal h scaled up by g).
@compute @workgroup_size(64)
fn sigmoid_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let a = abs(x[i]);
    if (a > 64.0) {
        d_x[i] = d_out[i] * exp_(-(a - 44.0)) * bitcast<f32>(0x1fb7ba0fu);
        return;
    }
    let h = exp_(-a);
    let d = 1.0 + h;
    d_x[i] = d_out[i] * (h / (d * d));
}
