//! The graph-builder seam a composite op's backward is written against: a composite builder
//! records its forward as calls of registered ops on a [`Graph`], and whoever implements the
//! trait (the training tape) differentiates it. Names no implementation.

use crate::core::tensor::Scalar;
use std::fmt;

/// A value on a graph (an index into its implementation's values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub(crate) usize);

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// Why recording a call on a graph failed: the implementation's own error, kept whole so it
/// can be recovered (`downcast_ref`) where the implementation is known.
#[derive(Debug)]
pub struct GraphError(pub Box<dyn std::error::Error + Send + Sync + 'static>);

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for GraphError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.0.as_ref())
    }
}

/// Records calls of registered ops (by `name` or `name@version`).
pub trait Graph {
    /// Records one call; returns the op's outputs.
    fn call(&mut self, name: &str, inputs: &[Var], params: &[Scalar]) -> Result<Vec<Var>, GraphError>;

    /// Records a call of a single-output op.
    fn call1(&mut self, name: &str, inputs: &[Var], params: &[Scalar]) -> Result<Var, GraphError> {
        let outs = self.call(name, inputs, params)?;
        match outs.as_slice() {
            [one] => Ok(*one),
            _ => Err(GraphError(format!("op `{name}` has {} outputs; use `call`", outs.len()).into())),
        }
    }
}
