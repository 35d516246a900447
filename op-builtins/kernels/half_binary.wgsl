// builtin/add, sub, mul and div on f16 (entries `add_half`, `sub_half`, `mul_half`,
// `div_half`; the engine prepends `enable f16; alias T = f16;`). Each widens its inputs to f32
// (exact), computes there and rounds once to f16 (`T(...)`: round to nearest even, an f32
// beyond f16's range to infinity on IEEE devices; conformance holds each device to it). For +,
// - and * that is the
// correctly rounded f16 result, as the reference's (half's arithmetic widens to f32 too): f32
// holds more than 2 x 11 + 2 significant bits, so rounding twice is innocuous. f32's division
// (within 2.5 f32 ulp) rounds to within one f16 ulp.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<T>;
@group(0) @binding(1) var<storage, read> b: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<T>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn add_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = T(f32(a[i]) + f32(b[i]));
}

@compute @workgroup_size(64)
fn sub_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = T(f32(a[i]) - f32(b[i]));
}

@compute @workgroup_size(64)
fn mul_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = T(f32(a[i]) * f32(b[i]));
}

@compute @workgroup_size(64)
fn div_half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n) { return; }
    out[i] = T(f32(a[i]) / f32(b[i]));
}
