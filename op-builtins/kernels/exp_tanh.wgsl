// builtin/exp and builtin/tanh (entries `exp_main`, `tanh_main`): elementwise over n; tanh is
// built on the same written-out exp, so both ops share this file.
// exp_ and tanh_ are written out (lib/exp.wgsl and lib/tanh.wgsl say why).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// @include "lib/tanh.wgsl"

@compute @workgroup_size(64)
fn exp_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = exp_(x[i]);
}

@compute @workgroup_size(64)
fn tanh_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = tanh_(x[i]);
}
