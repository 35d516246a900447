//! Two declarations under one `name@version` with different bodies, registered only when a test
//! asks (`_register_fixture`): the path a user's own op takes into the process registry, and the
//! refusal of a second identity under a name already registered.

pub mod first {
    use op_runtime::{op, Real};

    /// A copy of `x`.
    #[op(name = "user/op_jax_fixture/copy", version = 1, signature(x: f32[n]) -> f32[n],
         category = selection, tolerance = exact, backward = none)]
    pub fn copy<T: Real>(x: &[T]) -> Vec<T> {
        x.to_vec()
    }
}

pub mod second {
    use op_runtime::{op, Real};

    /// `x` reversed: other content under the same name and version.
    #[op(name = "user/op_jax_fixture/copy", version = 1, signature(x: f32[n]) -> f32[n],
         category = selection, tolerance = exact, backward = none)]
    pub fn copy<T: Real>(x: &[T]) -> Vec<T> {
        x.iter().rev().copied().collect()
    }
}
