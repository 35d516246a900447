// VJP of builtin/slice: d_x[q] is the cotangent of the output that copies element q (q in
// [start, stop) and q - start a multiple of step), +0 elsewhere. One invocation per input
// element, linear launch.
struct Params { n: u32, start: u32, stop: u32, step: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = gid.x + gid.y * nwg.x * 64u;
    if (q >= p.n) { return; }
    var v = 0.0;
    if (q >= p.start && q < p.stop && (q - p.start) % p.step == 0u) { v = d_out[(q - p.start) / p.step]; }
    d_x[q] = v;
}
