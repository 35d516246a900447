// builtin/conv1d: out[i] = sum_j x[i + j] w[j] (valid correlation); one invocation per output.
// The m products are summed pairwise (units of 16 consecutive products summed as a balanced
// tree, pushed on a binary counter), so every product is rounded at most about
// ceil(log2 m) + 1 times: within `accum`'s pairwise bound on any input. Loop iterations per
// invocation: m / 16 + 15 + 24, below lavapipe's limit of 65535 (gallivm's loop limiter) for
// every m <= 16 * 65490 (1_047_840).
struct Params { n: u32, m: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

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

// Non-finite products do not enter the sum: `fin` records them and returns 0, and `finish`
// gives the exact-arithmetic result: NaN if any product is NaN or both infinities occur, else
// the infinity that occurs, else the pairwise sum of the finite products. (Summed in with the
// finite ones, an infinity could meet the opposite infinity from a partial sum of finite
// products that overflowed in this order but not in the reference's: NaN where the reference
// has an infinity.)
var<private> nan_seen: bool;
var<private> first_nan: f32;
var<private> pos_inf: bool;
var<private> neg_inf: bool;

fn fin(v: f32) -> f32 {
    let bits = bitcast<u32>(v);
    if ((bits & 0x7f800000u) != 0x7f800000u) { return v; }
    if ((bits & 0x007fffffu) != 0u) {
        if (!nan_seen) { first_nan = v; }
        nan_seen = true;
    } else if ((bits >> 31u) == 1u) {
        neg_inf = true;
    } else {
        pos_inf = true;
    }
    return 0.0;
}

fn finish(s: f32) -> f32 {
    if (nan_seen) { return first_nan; }
    if (pos_inf && neg_inf) { return bitcast<f32>(0x7fc00000u); }
    if (pos_inf) { return bitcast<f32>(0x7f800000u); }
    if (neg_inf) { return bitcast<f32>(0xff800000u); }
    return s;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= p.n - p.m + 1u) { return; }
    var j = 0u;
    for (; j + 15u < p.m; j = j + 16u) {
        push((((fin(x[i + j + 0u] * w[j + 0u]) + fin(x[i + j + 1u] * w[j + 1u]))
            + (fin(x[i + j + 2u] * w[j + 2u]) + fin(x[i + j + 3u] * w[j + 3u])))
            + ((fin(x[i + j + 4u] * w[j + 4u]) + fin(x[i + j + 5u] * w[j + 5u]))
            + (fin(x[i + j + 6u] * w[j + 6u]) + fin(x[i + j + 7u] * w[j + 7u]))))
            + (((fin(x[i + j + 8u] * w[j + 8u]) + fin(x[i + j + 9u] * w[j + 9u]))
            + (fin(x[i + j + 10u] * w[j + 10u]) + fin(x[i + j + 11u] * w[j + 11u])))
            + ((fin(x[i + j + 12u] * w[j + 12u]) + fin(x[i + j + 13u] * w[j + 13u]))
            + (fin(x[i + j + 14u] * w[j + 14u]) + fin(x[i + j + 15u] * w[j + 15u])))));
    }
    for (; j < p.m; j = j + 1u) {
        push(fin(x[i + j] * w[j]));
    }
    out[i] = finish(pushed());
}
