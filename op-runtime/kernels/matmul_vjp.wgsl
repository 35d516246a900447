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
