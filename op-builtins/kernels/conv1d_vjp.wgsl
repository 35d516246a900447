// VJP of builtin/conv1d (out[i] = sum_j x[i + j] w[j], i < n - m + 1), as a gather (no float
// atomics): d_x[t] = sum_j d_out[t - j] w[j] over the outputs t - j that exist, and
// d_w[j] = sum_i d_out[i] x[i + j] over every output i. Launch (threads = n + 256 m, linear):
// the first ceil(n / 256) workgroups compute d_x, one invocation per element; then one
// workgroup per element of d_w, each invocation summing a contiguous share of the outputs
// pairwise and the workgroup combining the 256 partial sums as a balanced tree. Every product is
// rounded at most about ceil(log2 terms) + 9 times: within `accum(2)`'s pairwise bound. Loop
// iterations per invocation: m (d_x) or (n - m + 1) / 4096 + 15 + 24 (d_w), below lavapipe's
// limit of 65535 for m below it.
struct Params { n: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_x: array<f32>;
@group(0) @binding(4) var<storage, read_write> d_w: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

const WG: u32 = 256u;
var<workgroup> part: array<f32, 256>;

var<workgroup> wflags: array<u32, 256>;
// @include "lib/nonfinite_flags.wgsl"

// @include "lib/pairwise.wgsl"

fn gx(t: u32, j: u32) -> f32 {
    return fin_prod(d_out[t - j], w[j]);
}

fn gw(i: u32, j: u32) -> f32 {
    return fin_prod(d_out[i], x[i + j]);
}

// d_x[t]: the products in the rule's order (outputs i = t - j ascending, so j descending).
fn grad_x(t: u32) -> f32 {
    let last = p.n - p.m; // the last output
    let lo = select(0u, t - last, t > last);
    var j = min(t, p.m - 1u) + 1u;
    for (; j > lo; j = j - 1u) {
        push(gx(t, j - 1u));
    }
    return finish(flags, pushed());
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups, as many rows as the length needs.
    let wg = wid.x + wid.y * nwg.x;
    let gxs = (p.n + WG - 1u) / WG;
    if (wg < gxs) {
        let t = wg * WG + lid.x;
        if (t < p.n) { d_x[t] = grad_x(t); }
        return;
    }
    let j = wg - gxs;
    if (j >= p.m) { return; }
    let outs = p.n - p.m + 1u;
    let share = (outs + WG - 1u) / WG;
    let lo = min(lid.x * share, outs);
    let hi = min(lo + share, outs);
    var i = lo;
    for (; i + 15u < hi; i = i + 16u) {
        push((((gw(i, j) + gw(i + 1u, j)) + (gw(i + 2u, j) + gw(i + 3u, j)))
            + ((gw(i + 4u, j) + gw(i + 5u, j)) + (gw(i + 6u, j) + gw(i + 7u, j))))
            + (((gw(i + 8u, j) + gw(i + 9u, j)) + (gw(i + 10u, j) + gw(i + 11u, j)))
            + ((gw(i + 12u, j) + gw(i + 13u, j)) + (gw(i + 14u, j) + gw(i + 15u, j)))));
    }
    for (; i < hi; i = i + 1u) {
        push(gw(i, j));
    }
    part[lid.x] = pushed();
    wflags[lid.x] = flags;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid.x < stride) {
            part[lid.x] = part[lid.x] + part[lid.x + stride];
            wflags[lid.x] = wflags[lid.x] | wflags[lid.x + stride];
        }
        workgroupBarrier();
    }
    if (lid.x == 0u) {
        d_w[j] = finish(wflags[0], part[0]);
    }
}
