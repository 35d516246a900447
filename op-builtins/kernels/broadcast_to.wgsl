// builtin/broadcast_to: out[(i m + k) q + j] = x[i q + j]. One invocation per output element,
// linear launch.
struct Params { p: u32, q: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> u: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 64u;
    if (e >= u.p * u.m * u.q) { return; }
    out[e] = x[(e / (u.m * u.q)) * u.q + e % u.q];
}
