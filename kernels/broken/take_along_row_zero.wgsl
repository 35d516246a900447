// Deliberately broken builtin/take_along: every row's indices read row 0 (a gather of the first
// row, the row offset forgotten).
struct Params { r: u32, c: u32, k: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    if (t >= p.r * p.k) { return; }
    out[t] = x[min(idx[t], p.c - 1u)];
}
