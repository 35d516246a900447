//! Rule: the reference's element types agree with the signature, also when written through a
//! type alias; the generated shim's type check fails on the function's name.

use op_runtime::op;

/// Not the declared `u16`.
type Count = u32;

#[op(
    name = "ui/test/increment", version = 1,
    signature(x: u16[n]) -> u16[n],
    category = integer, tolerance = exact,
    backward = none,
)]
pub fn increment(x: &[Count]) -> Vec<Count> {
    x.iter().map(|v| v.saturating_add(1)).collect()
}

fn main() {
    let _ = increment(&[1]);
}
