// Deliberately broken builtin/greater: compares total-order keys, so +0 > -0 (IEEE: equal).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

fn key(v: f32) -> u32 {
    let u = bitcast<u32>(v);
    return select(u | 0x80000000u, ~u, (u >> 31u) == 1u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    let nan = (bitcast<u32>(a[i]) & 0x7fffffffu) > 0x7f800000u || (bitcast<u32>(b[i]) & 0x7fffffffu) > 0x7f800000u;
    out[i] = select(0u, 1u, !nan && key(a[i]) > key(b[i]));
}
