// test/grid/affine3: out = 2 x + 1 over x of shape [a, b, c], a 3-D launch `threads = (c, b, a)`
// in 4 x 4 x 4 workgroups: gid.x indexes c, gid.y b, gid.z a.
struct Params { a: u32, b: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(4, 4, 4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= p.c || gid.y >= p.b || gid.z >= p.a) { return; }
    let k = (gid.z * p.b + gid.y) * p.c + gid.x;
    out[k] = 2.0 * x[k] + 1.0;
}
