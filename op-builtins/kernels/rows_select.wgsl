// builtin/max_rows and builtin/min_rows: each row's largest (smallest) element in IEEE total
// order, the last (first) of equal ones (`lib/row_select.wgsl`), its bits copied. One
// invocation per row, linear launch (rows of nwg.x workgroups of 64).
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// @include "lib/row_select.wgsl"

@compute @workgroup_size(64)
fn max_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = gid.x + gid.y * nwg.x * 64u;
    if (row >= p.r) { return; }
    out[row] = x[row * p.c + row_select(row, true)];
}

@compute @workgroup_size(64)
fn min_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = gid.x + gid.y * nwg.x * 64u;
    if (row >= p.r) { return; }
    out[row] = x[row * p.c + row_select(row, false)];
}
