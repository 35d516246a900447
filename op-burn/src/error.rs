//! Every typed error of the burn adapter, each naming the op. It decides no policy.

use op_runtime::gradcheck::GradcheckError;
use op_runtime::train::TapeError;
use op_runtime::DispatchError;
use op_runtime::{RegistrationError, TensorError};
use thiserror::Error;

/// The most tensor inputs an op can have for `BurnOp::apply` (burn's backward steps have a
/// fixed number of parents; one step type is instantiated per arity up to this).
pub const MAX_INPUTS: usize = 6;

/// Why a registered op could not be applied to burn tensors or differentiated through.
#[derive(Debug, Error)]
pub enum Error {
    /// A dtype the adapter does not carry: burn's `NdArray` float tensors are `f32` or `f64`; an
    /// int, bool or quantized tensor, or an op-runtime output of another dtype, is refused.
    /// Nothing is ever converted.
    #[error("op `{op}`: {what} has dtype `{dtype}`; the burn adapter carries `f32` and `f64` float tensors only (cast first)")]
    UnsupportedDType {
        /// The op's `name@version`.
        op: String,
        /// The tensor (`input x`, `output 0`, ...).
        what: String,
        /// The dtype, as its library names it.
        dtype: String,
    },
    /// A tensor on a backend the adapter does not run on (it serves burn's `NdArray` CPU
    /// backend, with or without autodiff; a tensor of another dispatch backend, such as cubecl's
    /// wgpu or CUDA, is refused, never copied implicitly).
    #[error("op `{op}`: {what} lives on {device}; the burn adapter runs on burn's NdArray backend only (move it with `to_device(&Device::ndarray())` first: no implicit copy)")]
    Device {
        /// The op's `name@version`.
        op: String,
        /// The tensor.
        what: String,
        /// Where it lives.
        device: String,
    },
    /// An output whose rank differs from the burn tensor rank asked for.
    #[error("op `{op}`: {what} has shape {shape:?} (rank {}), but a burn tensor of rank {expected} was asked for", shape.len())]
    Rank {
        /// The op's `name@version`.
        op: String,
        /// The tensor.
        what: String,
        /// Rank asked for.
        expected: usize,
        /// The shape the op gave.
        shape: Vec<usize>,
    },
    /// Given a number of tensors the op does not take.
    #[error("op `{op}` takes {expected} tensor input(s), {given} given")]
    Arity {
        /// The op's `name@version`.
        op: String,
        /// Tensor inputs the signature declares.
        expected: usize,
        /// Tensors given.
        given: usize,
    },
    /// An op `apply` cannot record for burn's autodiff (several outputs, none, or more tensor
    /// inputs than the adapter's backward steps take).
    #[error("op `{op}` takes {inputs} tensor input(s) and gives {outputs} output(s); `apply` records ops of 1 to {max} inputs and 1 output for burn's autodiff: call it with `BurnOp::call` (every output, no gradient)", max = MAX_INPUTS)]
    NoCustomOp {
        /// The op's `name@version`.
        op: String,
        /// Its tensor inputs.
        inputs: usize,
        /// Its outputs.
        outputs: usize,
    },
    /// Validation or dispatch through the registry failed (it names the op): a rank, shape or
    /// dtype the contract refuses, a parameter outside its constraint.
    #[error(transparent)]
    Dispatch(Box<DispatchError>),
    /// The op's backward failed or cannot run (it names the op): e.g. it is declared
    /// `backward = none` and a tracked tensor was given.
    #[error(transparent)]
    Backward(Box<TapeError>),
    /// Registering the op failed.
    #[error(transparent)]
    Registration(Box<RegistrationError>),
    /// The op's declared backward disagrees with central differences (or its VJP with its JVP):
    /// [`crate::BurnOp::register_checked`] refuses to adapt it.
    #[error(transparent)]
    Gradcheck(Box<GradcheckError>),
    /// A runtime tensor could not be made (it names what).
    #[error("op `{op}`: {source}")]
    Tensor {
        /// The op's `name@version`.
        op: String,
        /// The tensor error.
        source: TensorError,
    },
}

// The runtime's errors are boxed: every `Result` of the adapter stays small.
impl From<DispatchError> for Error {
    fn from(e: DispatchError) -> Error {
        Error::Dispatch(Box::new(e))
    }
}
impl From<TapeError> for Error {
    fn from(e: TapeError) -> Error {
        Error::Backward(Box::new(e))
    }
}
impl From<RegistrationError> for Error {
    fn from(e: RegistrationError) -> Error {
        Error::Registration(Box::new(e))
    }
}
impl From<GradcheckError> for Error {
    fn from(e: GradcheckError) -> Error {
        Error::Gradcheck(Box::new(e))
    }
}
