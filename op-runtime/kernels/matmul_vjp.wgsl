// VJP of builtin/matmul (out = a b, row-major a: m x k, b: k x n): d_a = d_out b^T and
// d_b = a^T d_out, one invocation per gradient element (threads = m k + k n, linear launch: the
// first m k invocations compute d_a, the rest d_b). Each sums its n (d_a) or m (d_b) products
// pairwise (units of 16 summed as a balanced tree, pushed on a binary counter), non-finite
// products kept out of the sum and decided at the end: within `accum(2)`'s pairwise bound. Loop
// iterations per invocation: n / 16 + 15 + 24 (or m / 16 + ...), below lavapipe's limit of 65535.
struct Params { m: u32, k: u32, n: u32 }

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> d_a: array<f32>;
@group(0) @binding(4) var<storage, read_write> d_b: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

var<private> flags: u32;

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

// d_a[i, q] = sum_j d_out[i, j] b[q, j]
fn ta(i: u32, q: u32, j: u32) -> f32 {
    return fin(d_out[i * p.n + j] * b[q * p.n + j]);
}

// d_b[q, j] = sum_i a[i, q] d_out[i, j]
fn tb(q: u32, j: u32, i: u32) -> f32 {
    return fin(a[i * p.k + q] * d_out[i * p.n + j]);
}

fn grad_a(i: u32, q: u32) -> f32 {
    var j = 0u;
    for (; j + 15u < p.n; j = j + 16u) {
        push((((ta(i, q, j) + ta(i, q, j + 1u)) + (ta(i, q, j + 2u) + ta(i, q, j + 3u)))
            + ((ta(i, q, j + 4u) + ta(i, q, j + 5u)) + (ta(i, q, j + 6u) + ta(i, q, j + 7u))))
            + (((ta(i, q, j + 8u) + ta(i, q, j + 9u)) + (ta(i, q, j + 10u) + ta(i, q, j + 11u)))
            + ((ta(i, q, j + 12u) + ta(i, q, j + 13u)) + (ta(i, q, j + 14u) + ta(i, q, j + 15u)))));
    }
    for (; j < p.n; j = j + 1u) {
        push(ta(i, q, j));
    }
    return finish(flags, pushed());
}

fn grad_b(q: u32, j: u32) -> f32 {
    var i = 0u;
    for (; i + 15u < p.m; i = i + 16u) {
        push((((tb(q, j, i) + tb(q, j, i + 1u)) + (tb(q, j, i + 2u) + tb(q, j, i + 3u)))
            + ((tb(q, j, i + 4u) + tb(q, j, i + 5u)) + (tb(q, j, i + 6u) + tb(q, j, i + 7u))))
            + (((tb(q, j, i + 8u) + tb(q, j, i + 9u)) + (tb(q, j, i + 10u) + tb(q, j, i + 11u)))
            + ((tb(q, j, i + 12u) + tb(q, j, i + 13u)) + (tb(q, j, i + 14u) + tb(q, j, i + 15u)))));
    }
    for (; i < p.m; i = i + 1u) {
        push(tb(q, j, i));
    }
    return finish(flags, pushed());
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let t = gid.x + gid.y * nwg.x * 64u;
    let mk = p.m * p.k;
    if (t < mk) {
        d_a[t] = grad_a(t / p.k, t % p.k);
    } else if (t < mk + p.k * p.n) {
        let u = t - mk;
        d_b[u] = grad_b(u / p.n, u % p.n);
    }
}
