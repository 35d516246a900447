//! Rule: an op is declared at module level: its generated description sits in a module next to
//! the function, which cannot reach a function in a function body or an `impl`.

use op_runtime::{op, Real};

pub struct Doubler;

impl Doubler {
    #[op(name = "ui/test/method", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(1), backward = none)]
    pub fn double<T: Real>(&self, x: &[T]) -> Vec<T> {
        x.iter().map(|v| *v + *v).collect()
    }
}

fn main() {
    #[op(name = "ui/test/local", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(1), backward = none)]
    fn double<T: Real>(x: &[T]) -> Vec<T> {
        x.iter().map(|v| *v + *v).collect()
    }
    let _ = double(&[1.0f32]);
    let _ = Doubler.double(&[1.0f32]);
}
