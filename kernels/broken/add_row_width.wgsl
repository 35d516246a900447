// Deliberately broken elementwise add: a linear launch whose row width forgets the workgroup
// size (`gid.y * nwg.x` instead of `gid.y * nwg.x * 64u`), so rows overlap and most elements
// past the first row are never written. Fine while the launch is one row.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x;
    if (i >= p.n) { return; }
    out[i] = a[i] + b[i];
}
