// DELIBERATELY BROKEN (conformance must reject it): computes x / 10 as x * 0.1, which rounds twice (0.1 is not a binary fraction): within 1 ulp of the reference, but `ulp(0)` allows none.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    out[i] = x[i] * 0.1;
}
