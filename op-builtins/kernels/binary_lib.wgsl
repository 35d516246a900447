// builtin/maximum and builtin/minimum: the operand larger (smaller) in IEEE total order, NaN
// winning (a's first), decided on the bits: a float compare sees -0 and +0 as equal and may
// treat subnormals as zero. One invocation per element, linear launch.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/nan.wgsl"
// @include "lib/total_order.wgsl"

// Whether the selection takes `x` over `y`: x is NaN, or y is not and x is on the wanted side
// of y in total order (or equal: then the bits are equal).
fn takes_first(x: f32, y: f32, larger: bool) -> bool {
    if (is_nan_(x)) { return true; }
    if (is_nan_(y)) { return false; }
    let kx = total_order_key(x);
    let ky = total_order_key(y);
    return select(kx <= ky, kx >= ky, larger);
}

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
