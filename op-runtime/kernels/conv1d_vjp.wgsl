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

var<private> flags: u32;
var<workgroup> wflags: array<u32, 256>;

fn fin(v: f32) -> f32 {
    let bits = bitcast<u32>(v);
    if ((bits & 0x7f800000u) != 0x7f800000u) { return v; }
    if ((bits & 0x007fffffu) != 0u) {
        flags = flags | 1u;
    } else if ((bits >> 31u) == 1u) {
        flags = flags | 4u;
    } else {
        flags = flags | 2u;
    }
    return 0.0;
}

fn finish(f: u32, s: f32) -> f32 {
    if ((f & 1u) != 0u || (f & 6u) == 6u) { return bitcast<f32>(0x7fc00000u); }
    if ((f & 2u) != 0u) { return bitcast<f32>(0x7f800000u); }
    if ((f & 4u) != 0u) { return bitcast<f32>(0xff800000u); }
    return s;
}

// Pairwise summation by a binary counter (the order `accum` bounds, see the README's
// "Tolerance classes"): `lvl[l]` holds the sum of 2^l consecutive units while bit l of
// `units` is set; pushing a unit first merges the occupied low levels into it, oldest on the
// left, so every term is rounded at most ceil(log2 units) times after its unit's own tree.
// The merges are a flat chain of ifs, not a loop: lavapipe (llvmpipe) ends a shader
// invocation's loops after 65535 iterations in total (gallivm's loop limiter), and a carry
// loop would spend that budget.
var<private> lvl: array<f32, 24>;
var<private> units: u32;

fn push(u: f32) {
    let c = countTrailingZeros(~units);
    var v = u;
    if (c > 0u) { v = lvl[0] + v; }
    if (c > 1u) { v = lvl[1] + v; }
    if (c > 2u) { v = lvl[2] + v; }
    if (c > 3u) { v = lvl[3] + v; }
    if (c > 4u) { v = lvl[4] + v; }
    if (c > 5u) { v = lvl[5] + v; }
    if (c > 6u) { v = lvl[6] + v; }
    if (c > 7u) { v = lvl[7] + v; }
    if (c > 8u) { v = lvl[8] + v; }
    if (c > 9u) { v = lvl[9] + v; }
    if (c > 10u) { v = lvl[10] + v; }
    if (c > 11u) { v = lvl[11] + v; }
    if (c > 12u) { v = lvl[12] + v; }
    if (c > 13u) { v = lvl[13] + v; }
    if (c > 14u) { v = lvl[14] + v; }
    if (c > 15u) { v = lvl[15] + v; }
    if (c > 16u) { v = lvl[16] + v; }
    if (c > 17u) { v = lvl[17] + v; }
    if (c > 18u) { v = lvl[18] + v; }
    if (c > 19u) { v = lvl[19] + v; }
    if (c > 20u) { v = lvl[20] + v; }
    if (c > 21u) { v = lvl[21] + v; }
    if (c > 22u) { v = lvl[22] + v; }
    if (c > 23u) { v = lvl[23] + v; }
    lvl[min(c, 23u)] = v;
    units = units + 1u;
}

// The sum of every pushed unit (0 when none): the occupied levels, newest (lowest) first.
fn pushed() -> f32 {
    var s = 0.0;
    var seen = false;
    for (var l = 0u; l < 24u; l = l + 1u) {
        if (((units >> l) & 1u) == 1u) {
            s = select(lvl[l], lvl[l] + s, seen);
            seen = true;
        }
    }
    return s;
}

fn gx(t: u32, j: u32) -> f32 {
    return fin(d_out[t - j] * w[j]);
}

fn gw(i: u32, j: u32) -> f32 {
    return fin(d_out[i] * x[i + j]);
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
