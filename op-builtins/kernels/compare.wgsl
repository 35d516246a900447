// builtin/greater, builtin/less, builtin/equal: a u32 mask (0 or 1) by IEEE 754 comparison,
// decided on the bits (a float compare may treat subnormals as zero, and a shader compiler may
// fold NaN tests away): a NaN compares false, -0 equals +0, otherwise the total-order keys
// compare. One invocation per element, linear launch.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/nan.wgsl"
// @include "lib/total_order.wgsl"

// The total-order key with -0 taken as +0 (IEEE equality of zeros).
fn ieee_key(v: f32) -> u32 {
    let z = (bitcast<u32>(v) & 0x7fffffffu) == 0u;
    return total_order_key(select(v, 0.0, z));
}

// -1, 0 or 1 for a < b, a == b, a > b; 2 when unordered (a NaN).
fn compare(x: f32, y: f32) -> i32 {
    if (is_nan_(x) || is_nan_(y)) { return 2; }
    let kx = ieee_key(x);
    let ky = ieee_key(y);
    return select(select(0, 1, kx > ky), -1, kx < ky);
}

@compute @workgroup_size(64)
fn greater_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = select(0u, 1u, compare(a[i], b[i]) == 1);
}

@compute @workgroup_size(64)
fn less_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = select(0u, 1u, compare(a[i], b[i]) == -1);
}

@compute @workgroup_size(64)
fn equal_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = select(0u, 1u, compare(a[i], b[i]) == 0);
}
