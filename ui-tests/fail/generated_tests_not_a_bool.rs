use op_runtime::{op, Real};

/// Identity.
#[op(
    name = "ui/fail/generated_tests_not_a_bool", version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise, tolerance = ulp(0), backward = none,
    generated_tests = maybe,
)]
pub fn ident<T: Real>(x: &[T]) -> Vec<T> {
    x.to_vec()
}

fn main() {}
