// VJPs of builtin/max_rows and builtin/min_rows: each row's cotangent to the element the forward
// selects (`lib/row_select.wgsl`, the same decisions), +0 to the others. One invocation per
// row: the selection, then the row's gradient, four elements per loop iteration (lavapipe's
// loop limit). Linear launch (rows of nwg.x workgroups of 64).
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/row_select.wgsl"

fn route(row: u32, larger: bool) {
    let at = row_select(row, larger);
    let base = row * p.c;
    let g = d_out[row];
    var j = 0u;
    for (; j + 3u < p.c; j = j + 4u) {
        d_x[base + j] = select(0.0, g, j == at);
        d_x[base + j + 1u] = select(0.0, g, j + 1u == at);
        d_x[base + j + 2u] = select(0.0, g, j + 2u == at);
        d_x[base + j + 3u] = select(0.0, g, j + 3u == at);
    }
    for (; j < p.c; j = j + 1u) {
        d_x[base + j] = select(0.0, g, j == at);
    }
}

@compute @workgroup_size(64)
fn max_rows_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = gid.x + gid.y * nwg.x * 64u;
    if (row >= p.r) { return; }
    route(row, true);
}

@compute @workgroup_size(64)
fn min_rows_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = gid.x + gid.y * nwg.x * 64u;
    if (row >= p.r) { return; }
    route(row, false);
}
