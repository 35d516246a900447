// DELIBERATELY BROKEN (conformance must reject it, or its receipt must say such writes were not
// tested): y = 2x, and for n > 5 each invocation also writes 4 MiB past the end of the output,
// beyond the far band of canaries a conformance run binds after it. An adapter that clamps
// writes past a binding puts it on the band's last canary (rejected); one that discards them
// drops it (the receipt says writes that far were not tested).
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
        out[i + p.n + (1u << 20u)] = 7.0;
    }
}
