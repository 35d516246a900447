// Deliberately broken builtin/sum_rows: each row's last element is left out.
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = gid.x + gid.y * nwg.x * 64u;
    if (row >= p.r) { return; }
    var s = 0.0;
    for (var j = 0u; j + 1u < p.c; j = j + 1u) { s = s + x[row * p.c + j]; }
    out[row] = s;
}
