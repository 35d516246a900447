// DELIBERATELY BROKEN (conformance must reject it): y = 2x, and for n > 5 each invocation also
// writes 1,000 elements past the end of the output, far beyond the 16-element guard band (but
// within the far band of canaries a conformance run binds after it).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    out[i] = 2.0 * x[i];
    if (p.n > 5u) {
        out[i + p.n + 1000u] = 7.0;
    }
}
