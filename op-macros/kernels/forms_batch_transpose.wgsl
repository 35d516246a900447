// A 3-D launch (op-macros/src/forms.md): out[k, j, i] = x[k, i, j] for b matrices of m rows
// and n columns, over `threads = (n, m, b)`: x is the column j, y the row i, z the matrix k.
struct Params { b: u32, m: u32, n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(4, 4, 4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let i = gid.y;
    let k = gid.z;
    if (j >= p.n || i >= p.m || k >= p.b) { return; }
    let base = k * p.m * p.n;
    out[base + j * p.m + i] = x[base + i * p.n + j];
}
