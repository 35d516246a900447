//! The graph-builder seam a composite op's backward is written against: a composite builder
//! records its forward as calls of registered ops on a [`Graph`], and may introduce constants
//! (a one-hot weight, a mask, an index table); whoever implements the trait (the training tape)
//! differentiates it. Names no implementation.

use crate::tensor::{Scalar, Tensor};
use op_contract::contract::DType;
use std::fmt;

/// A value on a graph (an index into its implementation's values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub usize);

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

    /// Introduces a constant tensor of any dtype (a one-hot weight, a mask, an index table): a
    /// value no gradient flows to. An implementation records it by content hash in the
    /// provenance of every run that uses it (the tape: `ProvenanceRecord::constants`), so a
    /// record pins the data as well as the ops. The default refuses: a graph that holds no
    /// data.
    fn constant(&mut self, name: &str, value: Tensor) -> Result<Var, GraphError> {
        let _ = value;
        Err(GraphError(format!("this graph cannot hold constants (`{name}`)").into()))
    }

    /// The shape of a value (to size a constant after an input), if the graph knows it.
    fn shape_of(&self, v: Var) -> Option<Vec<usize>> {
        let _ = v;
        None
    }

    /// The dtype a value has on this graph (f64 for float values when differentiated in f64).
    fn dtype_of(&self, v: Var) -> Option<DType> {
        let _ = v;
        None
    }

    /// Records a call of a single-output op.
    fn call1(&mut self, name: &str, inputs: &[Var], params: &[Scalar]) -> Result<Var, GraphError> {
        let outs = self.call(name, inputs, params)?;
        match outs.as_slice() {
            [one] => Ok(*one),
            _ => Err(GraphError(format!("op `{name}` has {} outputs; use `call`", outs.len()).into())),
        }
    }
}
