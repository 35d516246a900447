//! An integer op, declared non-differentiable.

use op_runtime::op;

/// Number of set bits of each element.
#[op(
    name = "ui/pass/popcount", version = 1,
    signature(x: u32[n]) -> u32[n],
    category = integer, tolerance = exact,
    backward = none,
)]
pub fn popcount(x: &[u32]) -> Vec<u32> {
    x.iter().map(|v| v.count_ones()).collect()
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&popcount::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    assert_eq!(popcount(&[7, 8]), vec![3, 1]);
}
