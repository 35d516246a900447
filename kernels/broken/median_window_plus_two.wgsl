// DELIBERATELY BROKEN (conformance must reject it): every window is w + 2 elements wide (and its median is that window's middle): the median of the wrong window, reading past the end for the last two.
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
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n - p.w + 1u) { return; }
    let ww = p.w + 2u;
    var win: array<f32, 33>;
    for (var j = 0u; j < ww; j = j + 1u) {
        let v = x[min(i + j, p.n - 1u)];
        var k = j;
        while (k > 0u && key(win[k - 1u]) > key(v)) {
            win[k] = win[k - 1u];
            k = k - 1u;
        }
        win[k] = v;
    }
    out[i] = win[ww / 2u];
}
