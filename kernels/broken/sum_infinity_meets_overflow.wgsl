// BROKEN on purpose (tests/conformance_infinities.rs): builtin/sum's pairwise reduction with
// infinite terms summed in with the finite ones, so an infinity can meet the opposite infinity
// of a partial sum that overflowed in this order (MAX + MAX) but not in the reference's: NaN
// where the reference has -inf.
// builtin/sum (entry `sum_main`): out[0] = sum of x; builtin/mean (entry `mean_main`): that sum
// divided by n. Both share the reduction `total`. One workgroup of 256 invocations: each sums
// its strided share pairwise (units of 8 strided terms summed as a balanced tree, pushed on a
// binary counter), then a tree reduction in workgroup memory: every term is rounded at most
// about ceil(log2 n) + 1 times, within `accum`'s pairwise bound on any input (a strided
// sequential loop drifted like a sequential sum on a biased input, 0.1 repeated). Loop
// iterations per invocation: n / 2048 + 7 + 24, far below lavapipe's limit of 65535 for any
// n its storage bindings hold (33.5M).
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

const WG: u32 = 256u;
var<workgroup> part: array<f32, 256>;

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

/// The sum of x, returned to every invocation of the workgroup (call in uniform control flow).
fn total(lid: u32) -> f32 {
    var i = lid;
    for (; i + 7u * WG < p.n; i = i + 8u * WG) {
        let a = (x[i] + x[i + 1u * WG]) + (x[i + 2u * WG] + x[i + 3u * WG]);
        let b = (x[i + 4u * WG] + x[i + 5u * WG]) + (x[i + 6u * WG] + x[i + 7u * WG]);
        push(a + b);
    }
    for (; i < p.n; i = i + WG) {
        push(x[i]);
    }
    part[lid] = pushed();
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            part[lid] = part[lid] + part[lid + stride];
        }
        workgroupBarrier();
    }
    return part[0];
}

@compute @workgroup_size(256)
fn sum_main(@builtin(local_invocation_index) lid: u32) {
    let t = total(lid);
    if (lid == 0u) {
        out[0] = t;
    }
}
