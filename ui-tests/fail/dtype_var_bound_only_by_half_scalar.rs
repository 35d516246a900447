//! Rule: a dtype variable that types no tensor input is chosen by a parameter's dtype, and a
//! half-precision parameter arrives as `f32`: such a variable cannot have `f16` or `bf16`.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/fill",
    version = 1,
    signature<T: f16 | f32>(x: u32[n], s: T) -> T[n],
    category = elementwise,
    tolerance = ulp(1),
    backward = none,
)]
pub fn fill<T: Real>(x: &[u32], s: T) -> Vec<T> {
    x.iter().map(|_| s).collect()
}

fn main() {
    let _ = fill(&[1u32], 2.0f32);
}
