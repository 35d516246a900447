//! A helper in another file (variant a: adds one).

use op_runtime::Real;

/// The helper the reference calls.
pub fn helper<T: Real>(v: T) -> T {
    v + T::one()
}
