// The position of a row's selected element, one invocation scanning the row (included by the
// row selections; the including kernel declares `x` and `p: { r, c }`): the largest
// total-order key, the last of equal ones (`larger`), or the smallest, the first of equal
// ones. Four elements per loop iteration (lavapipe ends an invocation's loops after 65535
// iterations in total). Rows have c >= 1 elements.
// @include "total_order.wgsl"

// Whether key `k` at position `j` is selected over the best so far, `kb` (a later position).
fn better(k: u32, kb: u32, larger: bool) -> bool {
    return select((k < kb), (k >= kb), larger);
}

fn row_select(row: u32, larger: bool) -> u32 {
    let base = row * p.c;
    var best = 0u;
    var kb = total_order_key(x[base]);
    var j = 1u;
    for (; j + 3u < p.c; j = j + 4u) {
        let k0 = total_order_key(x[base + j]);
        if (better(k0, kb, larger)) { best = j; kb = k0; }
        let k1 = total_order_key(x[base + j + 1u]);
        if (better(k1, kb, larger)) { best = j + 1u; kb = k1; }
        let k2 = total_order_key(x[base + j + 2u]);
        if (better(k2, kb, larger)) { best = j + 2u; kb = k2; }
        let k3 = total_order_key(x[base + j + 3u]);
        if (better(k3, kb, larger)) { best = j + 3u; kb = k3; }
    }
    for (; j < p.c; j = j + 1u) {
        let k = total_order_key(x[base + j]);
        if (better(k, kb, larger)) { best = j; kb = k; }
    }
    return best;
}
