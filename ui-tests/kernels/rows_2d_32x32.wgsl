// out[i, j] = x[i, j] + x[i, j] over a 2-D launch (n, m) in 32 x 32 workgroups: 1,024
// invocations each, above WebGPU's default limit of 256.
struct Params { m: u32, n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(32, 32)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= p.n || gid.y >= p.m) { return; }
    let i = gid.y * p.n + gid.x;
    out[i] = x[i] + x[i];
}
