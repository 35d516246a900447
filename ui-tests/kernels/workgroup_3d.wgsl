// out[i] = x[i] + x[i] with a 4 x 4 x 4 workgroup over a 2-D launch (x, y).
struct Params { m: u32, n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(4, 4, 4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= p.n || gid.y >= p.m) { return; }
    let i = gid.y * p.n + gid.x;
    out[i] = x[i] + x[i];
}
