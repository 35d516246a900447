// DELIBERATELY BROKEN (conformance must reject it): for n > 5 every invocation loops forever,
// working on its value in every turn (the loop's exit needs `k` to reach n, but `k` only counts
// for n <= 5). An adapter that ends loops early returns a wrong value, slowly; a GPU never
// returns. y = 2x otherwise.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    var k = 0u;
    var y = 2.0 * x[i];
    loop {
        if (k >= p.n) { break; }
        if (p.n <= 5u) { k = k + 1u; } else { y = y * 0.999 + x[i]; }
    }
    out[i] = y;
}
