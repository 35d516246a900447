// Sliding-window median: out[i] = median(x[i .. i + w]), w odd and at most 31.
// Values are ordered by IEEE total order (-0 < +0), exactly as the reference's `total_cmp`.
struct Params { n: u32, w: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

fn key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n - p.w + 1u) { return; }
    var win: array<f32, 31>;
    for (var j = 0u; j < p.w; j = j + 1u) {
        let v = x[i + j];
        var k = j;
        while (k > 0u && key(win[k - 1u]) > key(v)) {
            win[k] = win[k - 1u];
            k = k - 1u;
        }
        win[k] = v;
    }
    out[i] = win[p.w / 2u];
}
