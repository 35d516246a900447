// builtin/slice: out[k] = x[start + k step]. One invocation per output element, linear launch.
struct Params { n: u32, start: u32, stop: u32, step: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.x + gid.y * nwg.x * 64u;
    if (k >= (p.stop - p.start + p.step - 1u) / p.step) { return; }
    out[k] = x[p.start + k * p.step];
}
