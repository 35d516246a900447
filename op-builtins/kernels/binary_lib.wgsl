// builtin/maximum and builtin/minimum: the operand larger (smaller) in IEEE total order, NaN
// winning (a's first), decided on the bits: a float compare sees -0 and +0 as equal and may
// treat subnormals as zero. One invocation per element, linear launch.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/takes_first.wgsl"

@compute @workgroup_size(64)
fn maximum_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = select(b[i], a[i], takes_first(a[i], b[i], true));
}

@compute @workgroup_size(64)
fn minimum_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = select(b[i], a[i], takes_first(a[i], b[i], false));
}
