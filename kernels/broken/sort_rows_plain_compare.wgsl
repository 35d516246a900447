// Deliberately broken builtin/sort_rows: ranks with a plain float `<`, which sees -0 and +0 as
// equal (and NaN as unordered), instead of the total order.
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.r * p.c) { return; }
    let row = i / p.c;
    let j = i - row * p.c;
    let v = x[i];
    var rank = 0u;
    for (var k = 0u; k < p.c; k = k + 1u) {
        let u = x[row * p.c + k];
        if (u < v || (u == v && k < j)) { rank = rank + 1u; }
    }
    out[row * p.c + min(rank, p.c - 1u)] = v;
}
