// Deliberately broken builtin/permute4: decomposes the output index over the input's dims
// (d[k]) instead of the output's (d[pk]); right only where the permutation keeps every dim.
struct Params { d0: u32, d1: u32, d2: u32, d3: u32, p0: u32, p1: u32, p2: u32, p3: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> u: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    var t = gid.x + gid.y * nwg.x * 64u;
    let n = u.d0 * u.d1 * u.d2 * u.d3;
    if (t >= n) { return; }
    let me = t;
    var d = array<u32, 4>(u.d0, u.d1, u.d2, u.d3);
    var perm = array<u32, 4>(u.p0, u.p1, u.p2, u.p3);
    var stride = array<u32, 4>(u.d1 * u.d2 * u.d3, u.d2 * u.d3, u.d3, 1u);
    var at = 0u;
    for (var k = 3; k >= 0; k = k - 1) {
        at = at + (t % d[k]) * stride[perm[k]];
        t = t / d[k];
    }
    out[me] = x[min(at, n - 1u)];
}
