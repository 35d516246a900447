//! Rule: a differentiable backward needs a float tensor input; an integer op declares `backward =
//! none`.

use op_runtime::op;

/// Meaningless for integers.
pub fn popcount_vjp(x: &[u32], _g: &[u32]) -> Vec<u32> {
    x.to_vec()
}

#[op(
    name = "ui/test/popcount",
    version = 1,
    signature(x: u32[n]) -> u32[n],
    category = integer,
    tolerance = exact,
    backward = vjp(popcount_vjp),
)]
pub fn popcount(x: &[u32]) -> Vec<u32> {
    x.iter().map(|v| v.count_ones()).collect()
}

fn main() {
    let _ = popcount(&[3u32]);
}
