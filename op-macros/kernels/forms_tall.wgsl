// A workgroup taller than WebGPU's default (op-macros/src/forms.md): 512 invocations along y,
// one column of a matrix of m rows and n columns each: out = -x.
struct Params { m: u32, n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(1, 512)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let i = gid.y;
    if (j >= p.n || i >= p.m) { return; }
    out[i * p.n + j] = -x[i * p.n + j];
}
