// Index arithmetic of the axis permutations (included by builtin/permute3 and builtin/permute4
// and their VJPs), at rank 4: a rank-3 op pads a trailing axis of one element that stays last
// (d3 = 1, p3 = 3). Output axis k of a permuted tensor is input axis perm[k].

// The row-major input index that output element `t` of `x` (dims `d`) permuted by `perm` copies.
fn permuted_source(t0: u32, d: array<u32, 4>, perm: array<u32, 4>) -> u32 {
    var dims = d;
    var pm = perm;
    var stride = array<u32, 4>(d[1] * d[2] * d[3], d[2] * d[3], d[3], 1u);
    var t = t0;
    var at = 0u;
    for (var k = 3; k >= 0; k = k - 1) {
        let n = dims[pm[k]];
        at = at + (t % n) * stride[pm[k]];
        t = t / n;
    }
    return at;
}

// The inverse of `perm`: inv[perm[k]] = k.
fn inverse_perm(perm: array<u32, 4>) -> array<u32, 4> {
    var pm = perm;
    var inv = array<u32, 4>(0u, 0u, 0u, 0u);
    for (var k = 0u; k < 4u; k = k + 1u) {
        inv[pm[k]] = k;
    }
    return inv;
}

// The dims of `x` (dims `d`) permuted by `perm`.
fn permuted_dims(d: array<u32, 4>, perm: array<u32, 4>) -> array<u32, 4> {
    var dims = d;
    var pm = perm;
    return array<u32, 4>(dims[pm[0]], dims[pm[1]], dims[pm[2]], dims[pm[3]]);
}
