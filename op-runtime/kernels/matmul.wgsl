// builtin/matmul: out[i, j] = sum_p a[i, p] b[p, j], row-major, tiled: one workgroup of 256
// invocations per 16 x 16 tile of the output, one invocation per output element. Each step
// loads a 16 x 16 tile of `a` and of `b` into workgroup memory (every element read once per
// tile instead of once per output element) and sums the tile's 16 products of its row and
// column as a balanced tree, pushed as one unit on a binary counter; the products past the
// last whole tile are pushed one by one. Every product is rounded at most about
// ceil(log2 k) + 1 times: within `accum`'s pairwise bound on any input, and the same
// arithmetic, in the same order, as one invocation per element without tiles. Loop iterations
// per invocation: k / 16 + 15 + 24, below lavapipe's limit of 65535 (gallivm's loop limiter)
// for every k <= 16 * 65490 (1_047_840). Tiles are numbered along rows of the launch
// (`workgroup_id.x + workgroup_id.y * num_workgroups.x`), so any number of tiles launches.
struct Params { m: u32, k: u32, n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
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

const TILE: u32 = 16u;
var<workgroup> ta: array<f32, 256>; // ta[r * 16 + c] = a[row r of the tile, column q0 + c]
var<workgroup> tb: array<f32, 256>; // tb[r * 16 + c] = b[row q0 + r, column c of the tile]

// Loads the k-tile starting at q0 (zeros outside the matrices) and waits for every invocation.
fn load(i: u32, j: u32, q0: u32, r: u32, c: u32, lid: u32) {
    var va = 0.0;
    if (i < p.m && q0 + c < p.k) { va = a[i * p.k + q0 + c]; }
    var vb = 0.0;
    if (j < p.n && q0 + r < p.k) { vb = b[(q0 + r) * p.n + j]; }
    ta[lid] = va;
    tb[lid] = vb;
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let tiles_n = (p.n + TILE - 1u) / TILE;
    let tile = wid.x + wid.y * nwg.x;
    if (tile >= ((p.m + TILE - 1u) / TILE) * tiles_n) { return; }
    let r = lid / TILE;
    let c = lid % TILE;
    let i = (tile / tiles_n) * TILE + r;
    let j = (tile % tiles_n) * TILE + c;
    let ar = r * TILE;
    var q0 = 0u;
    for (; q0 + 15u < p.k; q0 = q0 + TILE) {
        load(i, j, q0, r, c, lid);
        push((((fin(ta[ar + 0u] * tb[0u * TILE + c]) + fin(ta[ar + 1u] * tb[1u * TILE + c]))
            + (fin(ta[ar + 2u] * tb[2u * TILE + c]) + fin(ta[ar + 3u] * tb[3u * TILE + c])))
            + ((fin(ta[ar + 4u] * tb[4u * TILE + c]) + fin(ta[ar + 5u] * tb[5u * TILE + c]))
            + (fin(ta[ar + 6u] * tb[6u * TILE + c]) + fin(ta[ar + 7u] * tb[7u * TILE + c]))))
            + (((fin(ta[ar + 8u] * tb[8u * TILE + c]) + fin(ta[ar + 9u] * tb[9u * TILE + c]))
            + (fin(ta[ar + 10u] * tb[10u * TILE + c]) + fin(ta[ar + 11u] * tb[11u * TILE + c])))
            + ((fin(ta[ar + 12u] * tb[12u * TILE + c]) + fin(ta[ar + 13u] * tb[13u * TILE + c]))
            + (fin(ta[ar + 14u] * tb[14u * TILE + c]) + fin(ta[ar + 15u] * tb[15u * TILE + c])))));
        workgroupBarrier();
    }
    if (q0 < p.k) {
        load(i, j, q0, r, c, lid);
        for (var t = 0u; q0 + t < p.k; t = t + 1u) {
            push(fin(ta[ar + t] * tb[t * TILE + c]));
        }
    }
    if (i < p.m && j < p.n) {
        out[i * p.n + j] = finish(pushed());
    }
}
