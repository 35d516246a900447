// Elements of x by index, an index past the end clamped to the last element
// (op-macros/src/forms.md); the instance with f32 values and u32 indices.
struct Params { n: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if (k >= p.m) { return; }
    out[k] = x[min(idx[k], p.n - 1u)];
}
