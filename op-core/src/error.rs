//! Typed errors, one enum per concern; every variant that concerns an op names it. This module
//! only describes failures: it must not decide policy (no fallbacks, no retries).

use crate::kind::BackendKind;
use op_contract::contract::DType;
use std::fmt;
use std::sync::Arc;
use thiserror::Error;

/// How a backend fails, by category (the variant); each carries its [`Cause`], the message and
/// the error below it where there is one (its `source()`). Dispatch wraps it with the op and
/// the backend's kind.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum BackendError {
    /// The backend cannot be used on this machine (no adapter, no driver, not compiled in).
    #[error(transparent)]
    Unavailable(Cause),
    /// The backend has nothing to run this op with (no kernel for it, a data-dependent shape).
    #[error(transparent)]
    Unsupported(Cause),
    /// The op's kernel failed to build (the compiler's message).
    #[error(transparent)]
    Compile(Cause),
    /// The call does not fit the kernel's bindings (a field the call cannot supply, a size that
    /// does not fit the binding's type).
    #[error(transparent)]
    Marshal(Cause),
    /// The launch was refused or failed on the device.
    #[error(transparent)]
    Launch(Cause),
    /// A buffer or launch exceeds what the device or host allows (what, how much, the limit).
    #[error(transparent)]
    TooLarge(Cause),
    /// Conformance rejected this kernel on this device in this process: default selection
    /// passes over it (an explicit choice still runs it).
    #[error(transparent)]
    Rejected(Cause),
    /// The kernel ran but its results are unusable (a host kernel's own error, an output
    /// that was not produced, a readback that came back short).
    #[error(transparent)]
    Kernel(Cause),
    /// The kernel needs a device feature this device lacks (e.g. `shader-f16` for a WGSL kernel
    /// on `f16`): refused before any work.
    #[error("the kernel needs the `{feature}` feature, which device `{device}` lacks; {hint}")]
    MissingFeature {
        /// The feature, as the API names it (`shader-f16`).
        feature: String,
        /// The device.
        device: String,
        /// What to do instead.
        hint: String,
    },
    /// A tensor is on a device this backend cannot use (a device tensor passed to a host
    /// backend, or to another device): refused, never copied silently.
    #[error(transparent)]
    Placement(Cause),
}

impl BackendError {
    /// What it says and what caused it; `None` for [`BackendError::MissingFeature`], whose
    /// fields say it.
    pub fn cause(&self) -> Option<&Cause> {
        match self {
            BackendError::Unavailable(c)
            | BackendError::Unsupported(c)
            | BackendError::Compile(c)
            | BackendError::Marshal(c)
            | BackendError::Launch(c)
            | BackendError::TooLarge(c)
            | BackendError::Rejected(c)
            | BackendError::Kernel(c)
            | BackendError::Placement(c) => Some(c),
            BackendError::MissingFeature { .. } => None,
        }
    }
}

/// What a [`BackendError`] says, and the typed error that caused it where there is one (the
/// wgpu or CUDA engine's `WgpuError` / `CudaError`): [`Cause::error`], to downcast and match on
/// (a lost device, a compile error) instead of parsing the message. The message already holds
/// that error's text, so it is not also returned as [`std::error::Error::source`] (a reporter
/// walking the chain would print it twice). A `Cause` reads as its message (`Display`, and
/// `Deref` to `str`); two are equal when their messages are.
#[derive(Clone, Debug)]
pub struct Cause {
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Cause {
    /// A message with no underlying error.
    pub fn new(message: impl Into<String>) -> Cause {
        Cause { message: message.into(), source: None }
    }

    /// An error's text as the message, and the error itself as its cause.
    pub fn of(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause { message: error.to_string(), source: Some(Arc::new(error)) }
    }

    /// The typed error that caused it, if any (`downcast_ref::<WgpuError>()`, ...).
    pub fn error(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// No `source()`: the message holds the cause's text (see [`Cause`]).
impl std::error::Error for Cause {}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        self.message == other.message
    }
}

impl std::ops::Deref for Cause {
    type Target = str;
    fn deref(&self) -> &str {
        &self.message
    }
}

impl From<String> for Cause {
    fn from(message: String) -> Cause {
        Cause::new(message)
    }
}

impl From<&str> for Cause {
    fn from(message: &str) -> Cause {
        Cause::new(message)
    }
}

/// Creating or reading a tensor.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum TensorError {
    /// The dtype name is unknown or refused.
    #[error("dtype `{dtype}` is not supported: {why}")]
    UnsupportedDType {
        /// The dtype name as given.
        dtype: String,
        /// Why it is refused.
        why: String,
    },
    /// The byte count does not fit the dtype (or the shape).
    #[error("{}", match .elements {
        Some(n) => format!("{bytes} bytes do not hold {n} `{dtype}` element(s), which take {} bytes", n.saturating_mul(dtype.size())),
        None => format!("{bytes} bytes is not a whole number of `{dtype}` elements ({} bytes each)", dtype.size()),
    })]
    ByteLength {
        /// The element type.
        dtype: DType,
        /// The number of bytes given.
        bytes: usize,
        /// The element count the shape asks for, when known.
        elements: Option<usize>,
    },
    /// A float conversion asked of a non-float dtype.
    #[error("`to_dtype` converts between float dtypes (f16, bf16, f32, f64); `{from}` to `{to}` is not such a conversion")]
    NotFloat {
        /// The tensor's dtype.
        from: DType,
        /// The dtype asked for.
        to: DType,
    },
    /// A `bool` element is neither 0 nor 1.
    #[error("byte {byte} at index {index} is not a bool (0 or 1)")]
    InvalidBool {
        /// The element's index.
        index: usize,
        /// The byte found.
        byte: u8,
    },
    /// The element count does not match the shape.
    #[error("shape {shape:?} holds a different number of elements than the {elements} given")]
    ShapeMismatch {
        /// The requested shape.
        shape: Vec<usize>,
        /// The number of elements given.
        elements: usize,
    },
    /// The shape's element (or byte) count overflows `usize`.
    #[error("shape {shape:?} overflows usize")]
    ShapeOverflow {
        /// The requested shape.
        shape: Vec<usize>,
    },
    /// The tensor's storage cannot be allocated on this host: more bytes than its physical
    /// memory, more than the address space, or refused by the allocator. Never an abort.
    #[error("{what} cannot be allocated: {why}; use a smaller shape")]
    TooLarge {
        /// What was to be allocated ("a `f32` tensor of shape \[1099511627776\]").
        what: String,
        /// Why it cannot be.
        why: String,
    },
    /// The tensor was read as another dtype.
    #[error("expected a `{expected}` tensor, found `{found}`")]
    DTypeMismatch {
        /// The dtype asked for.
        expected: DType,
        /// The tensor's dtype.
        found: DType,
    },
    /// The tensor's elements live on a device, not on the host: read them back with
    /// `Tensor::to_host()` (nothing is copied implicitly).
    #[error("the tensor lives on {placement}, not on the host: call `to_host()` to read it (no implicit copy)")]
    OnDevice {
        /// Where it lives.
        placement: String,
    },
    /// A transfer between the host and a device was refused or failed.
    #[error("transfer involving {device}: {reason}")]
    Transfer {
        /// The device.
        device: String,
        /// What went wrong.
        reason: String,
    },
}

/// Registering an op.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum RegistrationError {
    /// `name@version` is registered with a different content hash.
    #[error(
        "op `{op}` is already registered with different content: the registered one is declared at {old_site} \
         (content {old}), this one at {new_site} (content {new}); two computations cannot share one name and version: \
         bump the version (`version = N+1`) or register it under a new name"
    )]
    ContentChanged {
        /// The op's `name@version`.
        op: String,
        /// Content hash of the registered op (hex).
        old: String,
        /// Where the registered op is declared (`path:line`).
        old_site: String,
        /// Content hash of the new declaration (hex).
        new: String,
        /// Where the new declaration is written (`path:line`).
        new_site: String,
    },
    /// `name@version` is registered with the same identity by another declaration: two items
    /// (another module or crate, another site) that the identity does not tell apart.
    #[error(
        "op `{op}` is already registered from another declaration with the same identity {hash}: the registered one is \
         declared at {old}, this one at {new}; two functions cannot share one name and version even where the identity \
         cannot tell their code apart: bump the version (`version = N+1`) or register one under a new name"
    )]
    SameIdentityOtherItem {
        /// The op's `name@version`.
        op: String,
        /// The shared identity (hex).
        hash: String,
        /// Where the registered op is declared and its function: `path:line (`crate::m::f`)`.
        old: String,
        /// Where the new declaration is written and its function.
        new: String,
    },
    /// The compile-time hash differs from the one recomputed at load.
    #[error("op `{op}`: its compile-time identity {declared} does not match its content {actual} (a stale or tampered build); rebuild the crate")]
    IdentityMismatch {
        /// The op's `name@version`.
        op: String,
        /// The hash computed at compile time (hex).
        declared: String,
        /// The hash recomputed from the embedded content (hex).
        actual: String,
    },
    /// The embedded contract does not parse, or cannot be planned.
    #[error("op `{op}`: its embedded contract cannot be read: {reason}")]
    BadContract {
        /// The op's `name@version`, or its Rust name when the contract JSON does not parse.
        op: String,
        /// Why it cannot be read.
        reason: String,
    },
    /// `replace` of an op that is not registered.
    #[error("op `{op}` is not registered, so there is nothing to replace; use `register`")]
    NotRegistered {
        /// The op's `name@version`.
        op: String,
    },
    /// A declaration given as an op's differentiable VJP op does not fit that op
    /// (`Registry::register_vjp_op`).
    #[error("op `{vjp_op}` cannot be the VJP op of `{op}`: {reason}")]
    VjpOpMismatch {
        /// The differentiated op (`name@version`, or the name given).
        op: String,
        /// The declared VJP op's `name@version`.
        vjp_op: String,
        /// What does not fit.
        reason: String,
    },
}

/// The former name of [`RegistrationError`], renamed for what fails (registering an op, its
/// kernels among the rest).
#[deprecated(note = "renamed `RegistrationError`")]
pub type KernelRegistrationError = RegistrationError;

/// A kernel that failed to build on a backend. Nothing falls back silently: the error keeps the
/// cause and lists the backends that could still run the op if chosen.
#[derive(Debug, Clone, Error, PartialEq)]
#[error("op `{op}`: the {backend} kernel failed to build: {cause}; remaining backends for this op: {}", list(.remaining))]
pub struct KernelCompilationError {
    /// The op's `name@version`.
    pub op: String,
    /// The backend whose kernel failed.
    pub backend: BackendKind,
    /// The backend's error (boxed: keeps `DispatchError`, and every `Result` carrying it, small).
    pub cause: Box<BackendError>,
    /// Other backends that support the op and are available.
    pub remaining: Vec<BackendKind>,
}

/// No backend could run the op: what was tried and why each was not usable.
#[derive(Debug, Clone, Error, PartialEq)]
#[error("op `{op}`: no backend can run it; tried: {}", .tried.iter().map(|(b, why)| format!("{b} ({why})")).collect::<Vec<_>>().join("; "))]
pub struct KernelFallbackExhaustedError {
    /// The op's `name@version`.
    pub op: String,
    /// Each backend tried, with why it was not usable.
    pub tried: Vec<(BackendKind, BackendError)>,
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
#[non_exhaustive]
pub enum DispatchError {
    /// No op is registered under that name or `name@version`.
    #[error("no op named `{name}` is registered")]
    UnknownOp {
        /// The name looked up, as given.
        name: String,
    },
    /// Wrong number of tensor inputs.
    #[error("op `{op}` takes {expected} tensor input(s) ({names}), got {found}")]
    InputCount {
        /// The op's `name@version`.
        op: String,
        /// Tensor inputs the signature declares.
        expected: usize,
        /// Tensor inputs passed.
        found: usize,
        /// The declared input names, comma-separated.
        names: String,
    },
    /// Wrong number of parameters.
    #[error("op `{op}` takes {expected} parameter(s) ({names}), got {found}")]
    ParamCount {
        /// The op's `name@version`.
        op: String,
        /// Parameters the signature declares.
        expected: usize,
        /// Parameters passed.
        found: usize,
        /// The declared parameter names, comma-separated.
        names: String,
    },
    /// An input has the wrong dtype.
    #[error("op `{op}`: input `{input}` must be `{expected}`, got `{found}`")]
    InputDType {
        /// The op's `name@version`.
        op: String,
        /// The input's name.
        input: String,
        /// The dtype required.
        expected: DType,
        /// The dtype passed.
        found: DType,
    },
    /// No instance of the op has the asked binding of its dtype variables.
    #[error("op `{op}` has no instance at {binding}; its instances: {instances}")]
    NoInstance {
        /// The op's `name@version`.
        op: String,
        /// The binding asked for.
        binding: String,
        /// The instances it has (`T = f32; T = f64`), or none for an op without variables.
        instances: String,
    },
    /// An input's dtype is not a member of the dtype variable typing it.
    #[error("op `{op}`: {what} is `{found}`, which is not a member of `{var}` ({members}); convert it explicitly (`Tensor::to_dtype`)")]
    NotAMember {
        /// The op's `name@version`.
        op: String,
        /// `input `x`` or `parameter `alpha``.
        what: String,
        /// The dtype variable.
        var: String,
        /// The dtype passed.
        found: DType,
        /// The variable's members, `f32 | f64`.
        members: String,
    },
    /// An input has the wrong rank.
    #[error("op `{op}`: input `{input}` must have rank {expected} ({dims}), got shape {found:?}")]
    InputRank {
        /// The op's `name@version`.
        op: String,
        /// The input's name.
        input: String,
        /// The declared rank.
        expected: usize,
        /// The declared dims, e.g. `[n, m]`.
        dims: String,
        /// The shape passed.
        found: Vec<usize>,
    },
    /// An input axis disagrees with the value its dim already has.
    #[error("op `{op}`: input `{input}` axis {axis} is `{dim}` = {expected} (bound by {bound_by}), got {found}")]
    DimMismatch {
        /// The op's `name@version`.
        op: String,
        /// The input's name.
        input: String,
        /// The axis that disagrees.
        axis: u32,
        /// The declared dim: a symbol or an expression's text.
        dim: String,
        /// Its value for this call (`-1` if it cannot be evaluated; dims fit `i64`).
        expected: i64,
        /// What fixed that value (`input `x` axis 0`, or `the signature` for an expression).
        bound_by: String,
        /// The size passed.
        found: usize,
    },
    /// The shapes of two inputs of an op declared `broadcast = numpy` do not broadcast.
    #[error("op `{op}`: input `{first}` of shape {first_shape:?} and input `{second}` of shape {second_shape:?} do not broadcast (numpy's rules: aligned at the last axis, each axis equal or 1)")]
    Broadcast {
        /// The op's `name@version`.
        op: String,
        /// The first input's name.
        first: String,
        /// Its shape.
        first_shape: Box<[usize]>,
        /// The second input's name.
        second: String,
        /// Its shape.
        second_shape: Box<[usize]>,
    },
    /// A broadcasting call that would have to expand a device tensor: expansion runs on the
    /// host, and nothing is copied implicitly.
    #[error("op `{op}`: input `{input}` of shape {shape:?} must be expanded to the broadcast shape {to:?}, and it lives on a device; broadcasting expands host tensors only: move it with `to_host()`, or pass operands of equal shapes (no implicit copy)")]
    BroadcastOnDevice {
        /// The op's `name@version`.
        op: String,
        /// The input's name.
        input: String,
        /// Its shape.
        shape: Box<[usize]>,
        /// The broadcast shape.
        to: Box<[usize]>,
    },
    /// A parameter has the wrong dtype.
    #[error("op `{op}`: parameter `{param}` must be `{expected}`, got `{found}`")]
    ParamDType {
        /// The op's `name@version`.
        op: String,
        /// The parameter's name.
        param: String,
        /// The dtype required.
        expected: DType,
        /// The dtype passed.
        found: DType,
    },
    /// A `where` constraint does not hold (or cannot be evaluated).
    #[error("op `{op}`: constraint `{constraint}` is violated ({values})")]
    Constraint {
        /// The op's `name@version`.
        op: String,
        /// The violated constraint, as text.
        constraint: String,
        /// The values of the symbols it mentions, e.g. `w = 40, n = 8`.
        values: String,
    },
    /// An output dim is negative, overflows or cannot be evaluated.
    #[error("op `{op}`: output `{output}` dim `{expr}` is {value} for these inputs")]
    OutputShape {
        /// The op's `name@version`.
        op: String,
        /// The output's name.
        output: String,
        /// The dim expression, as text.
        expr: String,
        /// Its value (negative or too large), or `undefined`.
        value: String,
    },
    /// An output is larger than the backend (or any allocation) can hold; refused before
    /// anything is allocated.
    #[error("op `{op}`: output `{output}` of shape {shape:?} and dtype `{dtype}` is too large: the limit is {limit}")]
    OutputTooLarge {
        /// The op's `name@version`.
        op: String,
        /// The output's name.
        output: String,
        /// Its shape for this call.
        shape: Vec<usize>,
        /// Its dtype.
        dtype: DType,
        /// The limit it exceeds, with what sets it.
        limit: String,
    },
    /// The op's output shape is `bounded` or `dynamic`.
    #[error("op `{op}` has a data-dependent output shape ({class}); it cannot be planned or dispatched statically")]
    DynamicShape {
        /// The op's `name@version`.
        op: String,
        /// The shape class, `bounded(..)` or `dynamic`.
        class: String,
    },
    /// The backend cannot run this op (e.g. it has no kernel for it).
    #[error("op `{op}` cannot run on {backend}: {reason}")]
    Unsupported {
        /// The op's `name@version`.
        op: String,
        /// The backend asked for.
        backend: BackendKind,
        /// Why it cannot run the op.
        reason: BackendError,
    },
    /// The backend is not compiled in or not usable here.
    #[error("op `{op}`: backend {backend} is unavailable: {reason}")]
    Unavailable {
        /// The op's `name@version`.
        op: String,
        /// The backend asked for.
        backend: BackendKind,
        /// Why it is unavailable.
        reason: BackendError,
    },
    /// A kernel failed to build.
    #[error(transparent)]
    Compilation(#[from] KernelCompilationError),
    /// No backend could run the op.
    #[error(transparent)]
    Exhausted(#[from] KernelFallbackExhaustedError),
    /// The backend failed while running the op.
    #[error("op `{op}` failed on {backend}: {source}")]
    Execution {
        /// The op's `name@version`.
        op: String,
        /// The backend it ran on.
        backend: BackendKind,
        /// The backend's error.
        source: BackendError,
    },
}

/// An error raised by a generated shim (reference, CPU kernel or backward rule wrapper).
#[derive(Debug, Clone, Error, PartialEq)]
#[error("{0}")]
pub struct ShimError(pub String);
