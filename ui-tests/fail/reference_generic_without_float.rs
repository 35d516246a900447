//! Rule: the reference's type parameter is the float element type; an op without float tensors
//! has none.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/popcount",
    version = 1,
    signature(x: u32[n]) -> u32[n],
    category = integer,
    tolerance = exact,
    backward = none,
)]
pub fn popcount<T: Real>(x: &[u32]) -> Vec<u32> {
    x.iter().map(|v| v.count_ones()).collect()
}

fn main() {
    let _ = popcount::<f32>(&[3u32]);
}
