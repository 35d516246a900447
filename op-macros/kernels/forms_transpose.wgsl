// A 2-D launch (op-macros/src/forms.md): one invocation per output element, x along n, y along m.
struct Params { m: u32, n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let i = gid.y;
    if (i >= p.m || j >= p.n) { return; }
    out[j * p.m + i] = x[i * p.n + j];
}
