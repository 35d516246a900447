// test/grid/transpose: out[j, i] = x[i, j] for x of m rows and n columns, over a 2-D launch
// `threads = (n, m)` in 8 x 8 workgroups: gid.x is the column j, gid.y the row i.
struct Params { m: u32, n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let i = gid.y;
    if (j >= p.n || i >= p.m) { return; }
    out[j * p.m + i] = x[i * p.n + j];
}
