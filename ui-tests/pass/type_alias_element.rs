//! An element type written through a type alias: the syntactic check accepts the alias and the
//! generated code type-checks it (a wrong alias is a type error on the function's name).

use op_runtime::op;

/// The element type of the counts.
type Count = u16;

/// Adds one to every count, saturating.
#[op(
    name = "ui/pass/increment", version = 1,
    signature(x: u16[n]) -> u16[n],
    category = integer, tolerance = exact,
    backward = none,
)]
pub fn increment(x: &[Count]) -> Vec<Count> {
    x.iter().map(|v| v.saturating_add(1)).collect()
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&increment::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    assert_eq!(increment(&[1, u16::MAX]), vec![2, u16::MAX]);
}
