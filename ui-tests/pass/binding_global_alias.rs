//! A kernel whose global has another name than the tensor: the descriptor says which is which
//! with `as` (`x: read as src`).

use op_runtime::{op, Real};

/// Doubles every element.
#[op(
    name = "ui/pass/double_alias", version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise, tolerance = ulp(0),
    backward = none,
    kernel(wgsl = "../kernels/renamed_input.wgsl", bindings(x: read as src, out: read_write, uniform(n)), threads = n),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&double::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    assert!(double::DECL.contract_json.contains(r#""global":"src""#));
}
