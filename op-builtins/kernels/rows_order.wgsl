// builtin/sort_rows and builtin/median_rows: every element of a row ranks itself within the row
// by (total-order key, index), the order of the reference's stable sort (equal keys are equal
// bits), in O(c) work; sort_rows stores it at its rank, median_rows only the element of rank
// (c - 1) / 2. One invocation per input element, linear launch (rows of nwg.x workgroups of 64).
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// @include "lib/total_order.wgsl"

// The rank of element j of row `row` among its row.
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
fn sort_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.r * p.c) { return; }
    let row = i / p.c;
    out[row * p.c + rank_in_row(row, i - row * p.c)] = x[i];
}

@compute @workgroup_size(64)
fn median_rows(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.r * p.c) { return; }
    let row = i / p.c;
    if (rank_in_row(row, i - row * p.c) == (p.c - 1u) / 2u) { out[row] = x[i]; }
}
