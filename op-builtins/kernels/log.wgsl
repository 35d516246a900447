// builtin/log: out[i] = ln x[i], elementwise over n (`log_`: lib/log.wgsl says how).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// @include "lib/log.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = log_(x[i]);
}
