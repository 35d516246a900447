//! The tape: records a pipeline of ops (built-in and user alike) run through dispatch, then
//! runs backward through declared VJPs and composite graphs. (Being built: issue 5.)

use thiserror::Error;

/// A value on the tape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Var(pub(crate) usize);

/// A recording of ops.
#[derive(Default)]
pub struct Tape {
    pub(crate) _vars: Vec<()>,
}

/// Errors of recording and differentiating.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum TapeError {
    /// The op is declared `backward = none`.
    #[error("op `{op}` is declared `backward = none`: gradients cannot flow through it")]
    NotDifferentiable { op: String },
}
