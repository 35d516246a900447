// VJPs of builtin/sort_rows and builtin/median_rows: every element of a row ranks itself as the
// forward kernels do (total-order key, then index: the rules' stable sort) and takes the
// cotangent of its rank: sort_rows the cotangent of the sorted position it went to, median_rows
// the row's cotangent if it is the median, else +0. No arithmetic. One invocation per input
// element, linear launch (rows of nwg.x workgroups of 64).
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/total_order.wgsl"

fn rank_in_row(row: u32, j: u32) -> u32 {
    let base = row * p.c;
    let kj = total_order_key(x[base + j]);
    var rank = 0u;
    for (var k = 0u; k < p.c; k = k + 1u) {
        let kk = total_order_key(x[base + k]);
        if (kk < kj || (kk == kj && k < j)) { rank = rank + 1u; }
    }
    return rank;
}

@compute @workgroup_size(64)
fn sort_rows_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.r * p.c) { return; }
    let row = i / p.c;
    d_x[i] = d_out[row * p.c + rank_in_row(row, i - row * p.c)];
}

@compute @workgroup_size(64)
fn median_rows_vjp(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.r * p.c) { return; }
    let row = i / p.c;
    let selected = rank_in_row(row, i - row * p.c) == (p.c - 1u) / 2u;
    d_x[i] = select(0.0, d_out[row], selected);
}
