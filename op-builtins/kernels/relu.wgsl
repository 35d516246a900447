// builtin/relu: out[i] = x[i] if x[i] > 0 or x[i] is NaN, else +0, elementwise over n.
// Decided on the bits (no float compare, which may treat subnormals as zero under DAZ and
// NaN as anything): positive values and NaN (either sign, payload kept) pass unchanged,
// everything else (-0, negatives) gives +0.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

fn relu(v: f32) -> f32 {
    let b = bitcast<u32>(v);
    let positive = (b >> 31u) == 0u && b != 0u;
    let nan = (b & 0x7fffffffu) > 0x7f800000u;
    return select(0.0, v, positive || nan);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = relu(x[i]);
}
