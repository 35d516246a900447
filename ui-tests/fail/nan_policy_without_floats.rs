//! Rule: `nan = propagate` needs a float input for a NaN to come in (and a float output for it to
//! come out); an integer-only op has none.

use op_runtime::op;

#[op(
    name = "ui/test/popcount",
    version = 1,
    signature(x: u32[n]) -> u32[n],
    category = integer,
    tolerance = exact,
    backward = none,
    nan = propagate,
)]
pub fn popcount(x: &[u32]) -> Vec<u32> {
    x.iter().map(|v| v.count_ones()).collect()
}

fn main() {
    let _ = popcount(&[7]);
}
