//! The typed errors of the ndarray adapter, and `Refused`, which hands a value a zero-copy
//! conversion refused back to its owner. It decides no policy.

use op_runtime::TensorError;
use op_runtime::{DType, DispatchError};
use thiserror::Error;

/// Why an array could not become a tensor, a tensor an array, or a call through arrays ran.
#[derive(Debug, Error)]
pub enum Error {
    /// A zero-copy conversion of an array whose layout is not standard (row-major,
    /// contiguous): a transposed or otherwise strided array.
    #[error("an array of shape {shape:?} with strides {strides:?} is not in standard (row-major, contiguous) layout, so it cannot move into a tensor without a copy; copy it explicitly with `op_ndarray::copy_to_tensor(&a)`, or make it standard first with `a.as_standard_layout()`")]
    NotStandard {
        /// The array's shape.
        shape: Vec<usize>,
        /// Its strides, in elements.
        strides: Vec<isize>,
    },
    /// A tensor of another dtype than the array's element type.
    #[error("{what} has dtype `{found}`, the array's elements are `{expected}`; ask for `{found}` elements (dtypes are never converted)")]
    DType {
        /// The tensor (`the tensor`, `output 1 of op ...`).
        what: String,
        /// The element type's dtype.
        expected: DType,
        /// The tensor's dtype.
        found: DType,
    },
    /// A tensor that lives on a device (an array lives on the host; no implicit copy).
    #[error("{what} lives on {placement}; arrays live on the host: call `to_host()` on it first (no implicit copy)")]
    Device {
        /// The tensor.
        what: String,
        /// Where it lives.
        placement: String,
    },
    /// An output index the call does not have.
    #[error("op `{op}` has {outputs} output(s), output {index} was asked for")]
    NoOutput {
        /// The op's `name@version`.
        op: String,
        /// Its number of outputs.
        outputs: usize,
        /// The index asked for.
        index: usize,
    },
    /// Validation or dispatch through the registry failed (it names the op).
    #[error(transparent)]
    Dispatch(Box<DispatchError>),
    /// A tensor could not be made from an array's elements.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// ndarray refused a shape (it cannot: a tensor's shape always fills its storage).
    #[error("ndarray refused the shape {shape:?}: {source}")]
    Shape {
        /// The shape.
        shape: Vec<usize>,
        /// ndarray's error.
        source: ndarray::ShapeError,
    },
}

// The runtime's dispatch error is boxed: every `Result` of the adapter stays small.
impl From<DispatchError> for Error {
    fn from(e: DispatchError) -> Error {
        Error::Dispatch(Box::new(e))
    }
}

/// A zero-copy conversion's refusal, with the value it was given, unharmed: nothing is lost
/// when a conversion is refused. `?` turns it into its [`Error`].
#[derive(Debug, Error)]
#[error("{error}")]
pub struct Refused<V: std::fmt::Debug> {
    /// Why.
    pub error: Error,
    /// The value, as given (boxed: the refusal stays small on the `Ok` path's `Result`).
    value: Box<V>,
}

impl<V: std::fmt::Debug> Refused<V> {
    pub(crate) fn new(error: Error, value: V) -> Refused<V> {
        Refused { error, value: Box::new(value) }
    }

    /// The value handed back.
    pub fn into_inner(self) -> V {
        *self.value
    }

    /// The value, borrowed.
    pub fn value(&self) -> &V {
        &self.value
    }
}

impl<V: std::fmt::Debug> From<Refused<V>> for Error {
    fn from(r: Refused<V>) -> Error {
        r.error
    }
}
