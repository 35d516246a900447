// A workgroup deeper than WebGPU's default (op-macros/src/forms.md): 128 invocations along z,
// over b matrices of m rows and n columns: out = -x.
struct Params { b: u32, m: u32, n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(1, 4, 128)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let i = gid.y;
    let k = gid.z;
    if (j >= p.n || i >= p.m || k >= p.b) { return; }
    let e = (k * p.m + i) * p.n + j;
    out[e] = -x[e];
}
