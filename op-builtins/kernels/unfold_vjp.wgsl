// VJP of builtin/unfold, as a gather (no float atomics): d_x[q] sums, over the windows i that
// contain element q in ascending order (the rule's order, so the sum is bit-exact), the
// cotangent d_out[i w + q - i s]. The additions are `add_exact`'s. One invocation per input
// element, linear launch (rows of nwg.x workgroups of 64).
struct Params { n: u32, w: u32, s: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> d_out: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// @include "lib/add_exact.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = gid.x + gid.y * nwg.x * 64u;
    if (q >= p.n) { return; }
    let rows = (p.n - p.w) / p.s + 1u;
    // Windows i with i s <= q < i s + w: from ceil((q + 1 - w) / s) to min(q / s, rows - 1).
    var first = 0u;
    if (q + 1u > p.w) { first = (q + 1u - p.w + p.s - 1u) / p.s; }
    let last = min(q / p.s, rows - 1u);
    var acc: f32 = 0.0;
    for (var i = first; i <= last; i = i + 1u) {
        acc = add_exact(acc, d_out[i * p.w + q - i * p.s]);
    }
    d_x[q] = acc;
}
