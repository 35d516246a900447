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

// @include "lib/nonfinite_flags.wgsl"

// @include "lib/pairwise.wgsl"

// d_a[i, q] = sum_j d_out[i, j] b[q, j]
fn ta(i: u32, q: u32, j: u32) -> f32 {
    return fin_prod(d_out[i * p.n + j], b[q * p.n + j]);
}

// d_b[q, j] = sum_i a[i, q] d_out[i, j]
fn tb(q: u32, j: u32, i: u32) -> f32 {
    return fin_prod(a[i * p.k + q], d_out[i * p.n + j]);
}

// Term `s` of gradient element (r, c): of d_a (`ta(r, c, s)`) or of d_b (`tb(r, c, s)`).
fn term(of_a: bool, r: u32, c: u32, s: u32) -> f32 {
    if (of_a) { return ta(r, c, s); }
    return tb(r, c, s);
}

// Gradient element (r, c) of d_a or d_b: its `len` terms in units of 16 summed as a balanced
// tree, pushed on the counter, then the rest one by one.
fn grad(of_a: bool, r: u32, c: u32, len: u32) -> f32 {
    var s = 0u;
    for (; s + 15u < len; s = s + 16u) {
        push((((term(of_a, r, c, s) + term(of_a, r, c, s + 1u)) + (term(of_a, r, c, s + 2u) + term(of_a, r, c, s + 3u)))
            + ((term(of_a, r, c, s + 4u) + term(of_a, r, c, s + 5u)) + (term(of_a, r, c, s + 6u) + term(of_a, r, c, s + 7u))))
            + (((term(of_a, r, c, s + 8u) + term(of_a, r, c, s + 9u)) + (term(of_a, r, c, s + 10u) + term(of_a, r, c, s + 11u)))
            + ((term(of_a, r, c, s + 12u) + term(of_a, r, c, s + 13u)) + (term(of_a, r, c, s + 14u) + term(of_a, r, c, s + 15u)))));
    }
    for (; s < len; s = s + 1u) {
        push(term(of_a, r, c, s));
    }
    return finish(flags, pushed());
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Linear launch: rows of nwg.x workgroups of 64, as many rows as the length needs.
    let t = gid.x + gid.y * nwg.x * 64u;
    let mk = p.m * p.k;
    if (t < mk) {
        d_a[t] = grad(true, t / p.k, t % p.k, p.n);
    } else if (t < mk + p.k * p.n) {
        let u = t - mk;
        d_b[u] = grad(false, u / p.n, u % p.n, p.m);
    }
}
