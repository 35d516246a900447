// Deliberately broken VJP of builtin/max_rows: of equal maxima the first one gets the cotangent
// (the contract's: the last).
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn key(v: f32) -> u32 {
    let u = bitcast<u32>(v);
    return select(u | 0x80000000u, ~u, (u >> 31u) == 1u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = gid.x + gid.y * nwg.x * 64u;
    if (row >= p.r) { return; }
    let base = row * p.c;
    var best = 0u;
    var kb = key(x[base]);
    for (var j = 1u; j < p.c; j = j + 1u) {
        let k = key(x[base + j]);
        if (k > kb) { best = j; kb = k; }
    }
    for (var j = 0u; j < p.c; j = j + 1u) { d_x[base + j] = select(0.0, d_out[row], j == best); }
}
