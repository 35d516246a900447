// builtin/mse_loss: out[0] = sum((a - b)^2) / n. One workgroup of 256 invocations: each sums
// its strided share of the squared differences pairwise (units of 8 strided terms summed as a
// balanced tree, pushed on a binary counter), then a tree reduction in workgroup memory, so
// every term is rounded at most about ceil(log2 n) + 4 times (subtract, square, the tree, the
// division): within `accum(4)`'s pairwise bound on any input. Loop iterations per invocation:
// n / 2048 + 7 + 24, far below lavapipe's limit of 65535.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

const WG: u32 = 256u;
var<workgroup> part: array<f32, 256>;

// Non-finite terms do not enter the sum: `fin` records them in `flags` (1: NaN, 2: +inf,
// 4: -inf) and returns 0; the flags are OR-ed across the workgroup with the partial sums, and
// `finish` gives the exact-arithmetic result: NaN if a term is NaN or both infinities occur,
// else the infinity that occurs, else the pairwise sum of the finite terms. (Summed in with
// the finite ones, an infinity could meet the opposite infinity from a partial sum of finite
// terms that overflowed in this order but not in the reference's.)
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

fn term(i: u32) -> f32 {
    let d = a[i] - b[i];
    return fin(d * d);
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

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var i = lid;
    for (; i + 7u * WG < p.n; i = i + 8u * WG) {
        let s = (term(i) + term(i + 1u * WG)) + (term(i + 2u * WG) + term(i + 3u * WG));
        let t = (term(i + 4u * WG) + term(i + 5u * WG)) + (term(i + 6u * WG) + term(i + 7u * WG));
        push(s + t);
    }
    for (; i < p.n; i = i + WG) {
        push(term(i));
    }
    part[lid] = pushed();
    wflags[lid] = flags;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) {
            part[lid] = part[lid] + part[lid + stride];
            wflags[lid] = wflags[lid] | wflags[lid + stride];
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        out[0] = finish(wflags[0], part[0]) / f32(p.n);
    }
}
