//! Every typed error of the candle adapter, each naming the op. It decides no policy.

use op_runtime::train::TapeError;
use op_runtime::DispatchError;
use op_runtime::{RegistrationError, TensorError};
use thiserror::Error;

/// Why a registered op could not be applied to candle tensors or differentiated through.
#[derive(Debug, Error)]
pub enum Error {
    /// A dtype with no counterpart on the other side: candle's `F8E4M3`, `F6E2M3`, `F6E3M2`,
    /// `F4` and `F8E8M0` have none in op-runtime, and op-runtime's `bool`, `i8`, `u16` and `u64`
    /// none in candle. Nothing is ever converted.
    #[error("op `{op}`: {what} has dtype `{dtype}`, which has no counterpart between candle and op-runtime; use one of `f16`, `bf16`, `f32`, `f64`, `u8`, `u32`, `i16`, `i32`, `i64` (`to_dtype` first)")]
    UnsupportedDType {
        /// The op's `name@version`.
        op: String,
        /// The tensor (`input x`, `output 0`, ...).
        what: String,
        /// The dtype, as its library names it.
        dtype: String,
    },
    /// A tensor on a device the adapter does not run on (it runs on candle's CPU device; a CUDA
    /// or Metal tensor is refused, never copied to the host implicitly).
    #[error("op `{op}`: {what} lives on {device}; the candle adapter runs on candle's CPU device only (move it with `to_device(&Device::Cpu)` first: no implicit copy)")]
    Device {
        /// The op's `name@version`.
        op: String,
        /// The tensor.
        what: String,
        /// Where it lives.
        device: String,
    },
    /// [`crate::CandleOp::on_cuda`] where op-runtime's CUDA backend is not compiled in or cannot
    /// run on this machine.
    #[error("op `{op}`: op-runtime's CUDA backend cannot run it here: {reason}")]
    NoCuda {
        /// The op's `name@version`.
        op: String,
        /// Why: not compiled in, or the backend's own reason (no driver, no device).
        reason: String,
    },
    /// A layout that is not row-major contiguous where the adapter was told to refuse one
    /// ([`crate::Strided::Refuse`]), or reached candle's forward hook directly.
    #[error("op `{op}`: {what} is strided (shape {shape:?}, strides {stride:?}, offset {offset}); call `.contiguous()` on it first, or apply with `Strided::Copy`")]
    Strided {
        /// The op's `name@version`.
        op: String,
        /// The tensor.
        what: String,
        /// Its shape.
        shape: Vec<usize>,
        /// Its strides, in elements.
        stride: Vec<usize>,
        /// Its start offset, in elements.
        offset: usize,
    },
    /// A layout that addresses elements outside its storage (never read).
    #[error("op `{op}`: {what}'s layout addresses {why}; it is not read")]
    Layout {
        /// The op's `name@version`.
        op: String,
        /// The tensor.
        what: String,
        /// What it addresses.
        why: String,
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
    /// An op candle's custom ops cannot carry (they take one to three tensors and give one).
    #[error("op `{op}` takes {inputs} tensor input(s) and gives {outputs} output(s); candle's custom ops take 1 to 3 and give 1, so `apply` cannot record it for candle's backward: call it with `CandleOp::call` (every output, no gradient)")]
    NoCustomOp {
        /// The op's `name@version`.
        op: String,
        /// Its tensor inputs.
        inputs: usize,
        /// Its outputs.
        outputs: usize,
    },
    /// Validation or dispatch through the registry failed (it names the op).
    #[error(transparent)]
    Dispatch(Box<DispatchError>),
    /// The op's backward failed (it names the op): e.g. it is declared `backward = none`.
    #[error(transparent)]
    Backward(Box<TapeError>),
    /// Registering the op failed.
    #[error(transparent)]
    Registration(Box<RegistrationError>),
    /// A runtime tensor could not be made (it names what).
    #[error("op `{op}`: {source}")]
    Tensor {
        /// The op's `name@version`.
        op: String,
        /// The tensor error.
        source: TensorError,
    },
    /// candle refused something the adapter asked of it (a copy, a tensor from a vector).
    #[error("op `{op}`: candle: {source}")]
    Candle {
        /// The op's `name@version`.
        op: String,
        /// candle's error.
        source: Box<candle_core::Error>,
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
