// Deliberately broken VJP of builtin/median_rows: of equal elements the later one ranks lower,
// so at a tie the cotangent goes to the later element.
struct Params { r: u32, c: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.r * p.c) { return; }
    let row = i / p.c;
    let j = i - row * p.c;
    let kj = key(x[i]);
    var rank = 0u;
    for (var k = 0u; k < p.c; k = k + 1u) {
        let kk = key(x[row * p.c + k]);
        if (kk < kj || (kk == kj && k > j)) { rank = rank + 1u; }
    }
    d_x[i] = select(0.0, d_out[row], rank == (p.c - 1u) / 2u);
}
