// DELIBERATELY BROKEN (conformance must reject it): the index of the largest element in IEEE total order, but on ties the last one (`>=`) where the reference takes the first: tie order.
// One invocation; four elements per iteration (lavapipe's loop limiter ends an invocation's
// loops after 65535 iterations in total).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

fn key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
}

@compute @workgroup_size(1)
fn main() {
    var best = 0u;
    var i = 0u;
    for (; i + 3u < p.n; i = i + 4u) {
        if (key(x[i]) >= key(x[best])) { best = i; }
        if (key(x[i + 1u]) >= key(x[best])) { best = i + 1u; }
        if (key(x[i + 2u]) >= key(x[best])) { best = i + 2u; }
        if (key(x[i + 3u]) >= key(x[best])) { best = i + 3u; }
    }
    for (; i < p.n; i = i + 1u) {
        if (key(x[i]) >= key(x[best])) { best = i; }
    }
    out[0] = best;
}
