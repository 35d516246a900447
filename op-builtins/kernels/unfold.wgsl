// builtin/unfold: out[i w + j] = x[i s + j] for the (n - w) / s + 1 windows. A copy: one
// invocation per output element, linear launch (rows of nwg.x workgroups of 64).
struct Params { n: u32, w: u32, s: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.x + gid.y * nwg.x * 64u;
    let rows = (p.n - p.w) / p.s + 1u;
    if (k >= rows * p.w) { return; }
    let i = k / p.w;
    out[k] = x[i * p.s + (k - i * p.w)];
}
