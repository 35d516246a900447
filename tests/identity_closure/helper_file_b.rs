//! A helper in another file (variant b: multiplies by ten).

use op_runtime::Real;

/// The helper the reference calls.
pub fn helper<T: Real>(v: T) -> T {
    v * T::from_f64(10.0)
}
