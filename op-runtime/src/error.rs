//! Typed errors, one enum per concern; every variant that concerns an op names it. This module
//! only describes failures: it must not decide policy (no fallbacks, no retries).

use crate::backend::BackendKind;
use op_spec::contract::DType;
use thiserror::Error;

/// Creating or reading a tensor.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum TensorError {
    #[error("dtype `{dtype}` is not supported: {why}")]
    UnsupportedDType { dtype: String, why: String },
    #[error("{bytes} bytes is not a whole number of `{dtype}` elements{}", .elements.map(|n| format!(" for {n} elements")).unwrap_or_default())]
    ByteLength { dtype: DType, bytes: usize, elements: Option<usize> },
    #[error("byte {byte} at index {index} is not a bool (0 or 1)")]
    InvalidBool { index: usize, byte: u8 },
    #[error("shape {shape:?} holds a different number of elements than the {elements} given")]
    ShapeMismatch { shape: Vec<usize>, elements: usize },
    #[error("shape {shape:?} overflows usize")]
    ShapeOverflow { shape: Vec<usize> },
    #[error("expected a `{expected}` tensor, found `{found}`")]
    DTypeMismatch { expected: DType, found: DType },
}

/// Registering an op.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum KernelRegistrationError {
    #[error(
        "op `{op}` is already registered with different content (registered {old}, new {new}); \
         bump the version (`version = N+1`) or register it under a new name"
    )]
    ContentChanged { op: String, old: String, new: String },
    #[error("op `{op}`: its compile-time identity {declared} does not match its content {actual} (a stale or tampered build); rebuild the crate")]
    IdentityMismatch { op: String, declared: String, actual: String },
    #[error("op `{op}`: its embedded contract cannot be read: {reason}")]
    BadContract { op: String, reason: String },
    #[error("op `{op}` is not registered, so there is nothing to replace; use `register`")]
    NotRegistered { op: String },
    #[error("op `{op}`: replace verification failed: {reason}")]
    ReplaceUnverified { op: String, reason: String },
}

/// A kernel that failed to build on a backend. Nothing falls back silently: the error keeps the
/// cause and lists the backends that could still run the op if chosen.
#[derive(Debug, Clone, Error, PartialEq)]
#[error("op `{op}`: the {backend} kernel failed to build: {cause}; remaining backends for this op: {}", list(.remaining))]
pub struct KernelCompilationError {
    pub op: String,
    pub backend: BackendKind,
    pub cause: String,
    pub remaining: Vec<BackendKind>,
}

/// No backend could run the op: what was tried and why each was not usable.
#[derive(Debug, Clone, Error, PartialEq)]
#[error("op `{op}`: no backend can run it; tried: {}", .tried.iter().map(|(b, why)| format!("{b} ({why})")).collect::<Vec<_>>().join("; "))]
pub struct KernelFallbackExhaustedError {
    pub op: String,
    pub tried: Vec<(BackendKind, String)>,
}

fn list(v: &[BackendKind]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", ")
    }
}

/// Calling an op.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum DispatchError {
    #[error("no op named `{name}` is registered")]
    UnknownOp { name: String },
    #[error("op `{op}` takes {expected} tensor input(s) ({names}), got {found}")]
    InputCount { op: String, expected: usize, found: usize, names: String },
    #[error("op `{op}` takes {expected} parameter(s) ({names}), got {found}")]
    ParamCount { op: String, expected: usize, found: usize, names: String },
    #[error("op `{op}`: input `{input}` must be `{expected}`, got `{found}`")]
    InputDType { op: String, input: String, expected: DType, found: DType },
    #[error("op `{op}`: input `{input}` must have rank {expected} ({dims}), got shape {found:?}")]
    InputRank { op: String, input: String, expected: usize, dims: String, found: Vec<usize> },
    #[error("op `{op}`: input `{input}` axis {axis} is `{dim}` = {expected} (bound by {bound_by}), got {found}")]
    DimMismatch { op: String, input: String, axis: usize, dim: String, expected: i128, bound_by: String, found: usize },
    #[error("op `{op}`: parameter `{param}` must be `{expected}`, got `{found}`")]
    ParamDType { op: String, param: String, expected: DType, found: DType },
    #[error("op `{op}`: constraint `{constraint}` is violated ({values})")]
    Constraint { op: String, constraint: String, values: String },
    #[error("op `{op}`: output `{output}` dim `{expr}` is {value} for these inputs")]
    OutputShape { op: String, output: String, expr: String, value: String },
    #[error("op `{op}` has a data-dependent output shape ({class}); it cannot be planned or dispatched statically")]
    DynamicShape { op: String, class: String },
    #[error("op `{op}` cannot run on {backend}: {reason}")]
    Unsupported { op: String, backend: BackendKind, reason: String },
    #[error("op `{op}`: backend {backend} is unavailable: {reason}")]
    Unavailable { op: String, backend: BackendKind, reason: String },
    #[error(transparent)]
    Compilation(#[from] KernelCompilationError),
    #[error(transparent)]
    Exhausted(#[from] KernelFallbackExhaustedError),
    #[error("op `{op}` failed on {backend}: {message}")]
    Execution { op: String, backend: BackendKind, message: String },
}

/// An error raised by a generated shim (reference, CPU kernel or backward rule wrapper).
#[derive(Debug, Clone, Error, PartialEq)]
#[error("{0}")]
pub struct ShimError(pub String);
