// VJP of builtin/mse_loss (out = sum((a - b)^2) / n): d_a[i] = (a[i] - b[i]) k and
// d_b[i] = -d_a[i], with k = (2 / n) d_out, the rule's arithmetic (2 / n rounded to f32 once,
// then one product per factor). One invocation per element.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_a: array<f32>;
@group(0) @binding(4) var<storage, read_write> d_b: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let k = (2.0 / f32(p.n)) * d_out[0];
    let v = (a[i] - b[i]) * k;
    d_a[i] = v;
    d_b[i] = -v;
}
