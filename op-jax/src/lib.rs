//! `op_jax._op_jax`: the native half of the `op_jax` Python package. It answers what the Python
//! half asks at trace time from the op's contract and the process registry (which ops exist,
//! their identity, output shapes and dtypes for given inputs and parameters, the typed error of
//! a call that breaks the contract) and hands out the XLA FFI handlers (`handler`) as capsules.
//! It never declares anything about an op a second time: everything comes from the registry.

use op_runtime::{registry, BackendKind, DType, OpHandle, Scalar, Tape, Tensor};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyCapsule, PyFloat};
use std::ffi::c_void;
use std::ptr::NonNull;

mod bench;
mod copy;
mod example_median;
// The example's module, with its CPU kernels (`median_cpu.rs`, `median_net.rs`, `keys.rs`) and
// the kernel sources beside it, which its own `#[path]` attributes and `#[op]` resolve, and the
// median's VJP op, which names it `crate::median`. Not every item is used here (the SIMD
// kernels' other entry points).
mod fixture;
mod handler;
#[allow(dead_code, unused_imports)]
#[path = "../../examples/windowed_median/median.rs"]
pub mod median;
#[path = "../../examples/autodiff/median_vjp.rs"]
mod median_vjp;
mod receipts;
mod verdict_fixture;
mod verdicts;
mod xla;

pyo3::create_exception!(_op_jax, OpError, PyValueError, "An op refused a call, or op_jax refused an op; the message names the op.");
pyo3::create_exception!(_op_jax, ContractError, OpError, "A call breaks the op's contract (dtype, rank, shape or a parameter constraint).");
pyo3::create_exception!(_op_jax, UnknownOpError, OpError, "No op of that name is registered in this process.");
pyo3::create_exception!(_op_jax, RegistrationError, OpError, "An op could not be registered (another identity holds its name@version).");
pyo3::create_exception!(_op_jax, IdentityError, OpError, "An artefact names an op identity this process does not hold.");
pyo3::create_exception!(_op_jax, NotDifferentiableError, OpError, "The op declares no backward (or no gradient reaches this input).");
pyo3::create_exception!(
    _op_jax,
    VerificationError,
    PyException,
    "Conformance or gradcheck could not run (the verdict itself is returned, never raised)."
);

fn lookup(name: &str) -> PyResult<OpHandle> {
    registry().lookup(name).map_err(|e| UnknownOpError::new_err(e.to_string()))
}

fn parse_dtype(op: &str, what: &str, d: &str) -> PyResult<DType> {
    DType::from_name(d).ok_or_else(|| {
        ContractError::new_err(format!(
            "op `{op}`: {what} has dtype `{d}`, which op-runtime has no dtype for (bool, u8, i8, u16, i16, u32, i32, u64, i64, f16, bf16, f32, f64)"
        ))
    })
}

/// A Python parameter value as the op's scalar of `dtype`, refused with a message naming the op
/// and the parameter where it does not fit.
fn to_scalar(op: &str, name: &str, dtype: DType, v: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    let bad = |why: String| ContractError::new_err(format!("op `{op}`: parameter `{name}` ({dtype}) {why}"));
    if dtype == DType::bool {
        return v.extract::<bool>().map(Scalar::Bool).map_err(|_| bad(format!("must be a bool, got {v}")));
    }
    if dtype.is_float() {
        if v.is_instance_of::<PyBool>() {
            return Err(bad("must be a number, got a bool".into()));
        }
        let x = v.extract::<f64>().map_err(|_| bad(format!("must be a static Python number, got {v}")))?;
        return match dtype {
            // A half-precision parameter travels as `Scalar::F32` (op-runtime has no half scalar;
            // the shim rounds it).
            DType::f32 | DType::f16 | DType::bf16 => Ok(Scalar::F32(x as f32)),
            DType::f64 => Ok(Scalar::F64(x)),
            _ => Ok(Scalar::F64(x)),
        };
    }
    if v.is_instance_of::<PyBool>() || v.is_instance_of::<PyFloat>() {
        return Err(bad(format!("must be an integer, got {v}")));
    }
    let x = v.extract::<i128>().map_err(|_| bad(format!("must be a static Python integer, got {v}")))?;
    Scalar::from_int(dtype, x).ok_or_else(|| bad(format!("is {x}, outside the range of {dtype}")))
}

/// The op resolved for a call: its handle, its instance's parameter dtypes and the parameters
/// converted to them.
fn resolve(name: &str, dtypes: &[DType], params: &[Bound<'_, PyAny>]) -> PyResult<(OpHandle, Vec<(String, DType)>, Vec<Scalar>)> {
    let h = lookup(name)?;
    let op = h.op();
    let id = op.id().to_string();
    let sig = &op.contract().signature;
    let n_in = sig.inputs().count();
    if dtypes.len() != n_in {
        let names: Vec<&str> = sig.inputs().map(|t| t.name.as_str()).collect();
        return Err(ContractError::new_err(format!("op `{id}` takes {n_in} tensor input(s) ({}), got {}", names.join(", "), dtypes.len())));
    }
    let n_params = sig.params().count();
    if params.len() != n_params {
        let names: Vec<&str> = sig.params().map(|p| p.name.as_str()).collect();
        return Err(ContractError::new_err(format!(
            "op `{id}` takes {n_params} parameter(s) ({}), got {}",
            if names.is_empty() { "none".to_string() } else { names.join(", ") },
            params.len()
        )));
    }
    let inst = op.member_for_dtypes(dtypes, &[]).map_err(|e| ContractError::new_err(e.to_string()))?.cloned().unwrap_or(op.clone());
    // The dtype each parameter travels as (a half-precision one as f32, see `to_scalar`).
    let pdt: Vec<(String, DType)> = inst
        .contract()
        .signature
        .params()
        .map(|p| (p.name.clone(), if matches!(p.dtype, DType::f16 | DType::bf16) { DType::f32 } else { p.dtype }))
        .collect();
    let scalars =
        inst.contract().signature.params().zip(params).map(|(p, v)| to_scalar(&id, &p.name, p.dtype, v)).collect::<PyResult<Vec<_>>>()?;
    Ok((h, pdt, scalars))
}

type Aval = (String, Vec<usize>);

/// Trace-time shape inference: the op's outputs (dtype, shape) for inputs of these dtypes and
/// shapes and these parameters, from the contract alone (nothing runs). Returns the op's id,
/// its identity, the outputs and the parameter dtypes; a call that breaks the contract raises
/// `ContractError` naming the op and the constraint.
#[pyfunction]
fn infer(name: &str, inputs: Vec<Aval>, params: Vec<Bound<'_, PyAny>>) -> PyResult<(String, String, Vec<Aval>, Vec<(String, String)>)> {
    let id = lookup(name)?.id();
    let names: Vec<String> = lookup(name)?.op().contract().signature.inputs().map(|t| t.name.clone()).collect();
    let dtypes = inputs
        .iter()
        .enumerate()
        .map(|(i, (d, _))| parse_dtype(&id, &format!("input `{}`", names.get(i).map_or("?", |s| s.as_str())), d))
        .collect::<PyResult<Vec<_>>>()?;
    let (h, pdt, scalars) = resolve(name, &dtypes, &params)?;
    let mut tape = Tape::new();
    let vars: Vec<_> =
        inputs.iter().zip(&dtypes).enumerate().map(|(i, ((_, s), d))| tape.input(&format!("in{i}"), *d, s.clone())).collect();
    let outs = tape.apply(&h, &vars, &scalars).map_err(|e| ContractError::new_err(e.to_string()))?;
    let mut avals = Vec::with_capacity(outs.len());
    for v in outs {
        let (Some(d), Some(s)) = (tape.dtype(v), tape.shape(v)) else {
            return Err(OpError::new_err(format!("op `{id}`: an output the tape did not record")));
        };
        avals.push((d.name().to_string(), s.to_vec()));
    }
    let op = h.op();
    Ok((op.id().to_string(), op.hash_hex(), avals, pdt.into_iter().map(|(n, d)| (n, d.name().to_string())).collect()))
}

/// Every registered op's `name@version`, sorted (VJP ops included).
#[pyfunction]
fn ops() -> Vec<String> {
    registry().ops().iter().map(|o| o.id().to_string()).collect()
}

/// An op's description as JSON: id, identity, source, whether it is a VJP op, whether it is
/// differentiable, its differentiable VJP op (second order), its instances and its contract.
#[pyfunction]
fn describe(name: &str) -> PyResult<String> {
    let h = lookup(name)?;
    let op = h.op();
    let c = op.contract();
    let instances: Vec<Vec<&str>> = if op.members().is_empty() {
        vec![c.signature.inputs().map(|t| t.dtype.name()).collect()]
    } else {
        op.members().iter().map(|m| m.contract().signature.inputs().map(|t| t.dtype.name()).collect()).collect()
    };
    let v = serde_json::json!({
        "id": op.id(),
        "name": c.name,
        "version": c.version,
        "identity": op.hash_hex(),
        "source": format!("{:?}", op.source()).to_lowercase(),
        "is_vjp_op": op.is_vjp_op(),
        "differentiable": c.backward.is_differentiable(),
        "vjp_op": h.differentiable_vjp_op().map(|v| v.id()),
        "forward_mode": forward_mode(&h),
        "inputs": c.signature.inputs().map(|t| &t.name).collect::<Vec<_>>(),
        "params": c.signature.params().map(|p| &p.name).collect::<Vec<_>>(),
        "outputs": c.signature.outputs.iter().map(|t| &t.name).collect::<Vec<_>>(),
        "arg_order": c.signature.args.iter().map(|a| match a {
            op_runtime::contract::Arg::Tensor(t) => serde_json::json!(["tensor", t.name]),
            op_runtime::contract::Arg::Param(p) => serde_json::json!(["param", p.name]),
        }).collect::<Vec<_>>(),
        "instances": instances,
        "contract": serde_json::to_value(c).map_err(|e| OpError::new_err(e.to_string()))?,
    });
    Ok(v.to_string())
}

/// Whether `Tape::jvp` has a rule for the op: a composite pushes through its graph, declared JVP
/// rules run as they are, and an op with only a VJP goes through the VJP of its differentiable
/// VJP op (the route `op_train::tape::forward` takes; an op without any is refused there too).
fn forward_mode(h: &OpHandle) -> bool {
    use op_runtime::contract::Backward;
    match &h.op().contract().backward {
        Backward::None => false,
        Backward::Composite { .. } => true,
        Backward::Declared { jvp, .. } if !jvp.is_empty() => true,
        Backward::Declared { .. } => h.differentiable_vjp_op().is_some(),
    }
}

type Buf = (String, Vec<usize>, Vec<u8>);

/// An eager call's parts: the op resolved for these inputs (dtype, shape, little-endian bytes)
/// and parameters, the inputs as tensors and the parameters as the op's scalars.
fn eager_call(name: &str, inputs: &[Buf], params: &[Bound<'_, PyAny>]) -> PyResult<(OpHandle, Vec<Tensor>, Vec<Scalar>)> {
    let id = lookup(name)?.id();
    let dtypes = inputs.iter().map(|(d, _, _)| parse_dtype(&id, "an input", d)).collect::<PyResult<Vec<_>>>()?;
    let (h, _, scalars) = resolve(name, &dtypes, params)?;
    let tensors = inputs
        .iter()
        .map(|(d, s, b)| Tensor::from_bytes(d, s.clone(), b).map_err(|e| ContractError::new_err(format!("op `{id}`: {e}"))))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((h, tensors, scalars))
}

/// Calls an op eagerly through the registry (no JAX): the Rust call the tests compare JAX's
/// outputs with, bit for bit. Inputs and outputs are (dtype, shape, little-endian bytes).
#[pyfunction]
fn call(py: Python<'_>, name: &str, inputs: Vec<Buf>, params: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<(String, Vec<usize>, Py<PyBytes>)>> {
    let (h, tensors, scalars) = eager_call(name, &inputs, &params)?;
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let out = py.detach(|| h.call(&refs, &scalars)).map_err(|e| OpError::new_err(e.to_string()))?;
    out.outputs
        .iter()
        .map(|t| {
            let bytes = t.host_data().map_err(|e| OpError::new_err(e.to_string()))?.to_le_bytes();
            Ok((t.dtype().name().to_string(), t.shape().to_vec(), PyBytes::new(py, &bytes).unbind()))
        })
        .collect()
}

fn capsule<'py>(py: Python<'py>, f: extern "C" fn(*mut xla::CallFrame) -> *mut xla::Error) -> PyResult<Bound<'py, PyCapsule>> {
    let p = NonNull::new(f as *mut c_void).ok_or_else(|| OpError::new_err("null handler"))?;
    // SAFETY: a function pointer with 'static lifetime; XLA calls it as `XLA_FFI_Handler`.
    unsafe { PyCapsule::new_with_pointer(py, p, c"xla._CUSTOM_CALL_TARGET") }
}

/// The forward handler as a capsule for `jax.ffi.register_ffi_target`.
#[pyfunction]
fn forward_handler(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
    capsule(py, handler::forward)
}

/// The pullback handler as a capsule for `jax.ffi.register_ffi_target`.
#[pyfunction]
fn pullback_handler(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
    capsule(py, handler::pullback)
}

/// The forward-mode (JVP) handler as a capsule for `jax.ffi.register_ffi_target`.
#[pyfunction]
fn jvp_handler(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
    capsule(py, handler::jvp)
}

/// The do-nothing handler (`bench::empty`) as a capsule: the baseline of `bench/overhead.py`.
#[pyfunction]
fn empty_handler(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
    capsule(py, bench::empty)
}

/// Nanoseconds spent inside the op handlers and the number of handler entries since the first
/// call of this function, which turns the handlers' timing on (XLA enters a handler once per
/// stage it runs, execution included). Until then handlers read no clock.
#[pyfunction]
fn handler_time() -> (u64, u64) {
    use std::sync::atomic::Ordering;
    handler::TIMING.store(true, Ordering::Relaxed);
    (handler::SPENT.0.load(Ordering::Relaxed), handler::SPENT.1.load(Ordering::Relaxed))
}

/// Median seconds of `reps` Rust calls of op `name` on these inputs (dtype, shape, bytes), timed
/// in Rust around `OpHandle::call` (no Python, no copies): the Rust side of the benchmark.
#[pyfunction]
fn time_call(py: Python<'_>, name: &str, inputs: Vec<Buf>, params: Vec<Bound<'_, PyAny>>, reps: usize) -> PyResult<f64> {
    let (h, tensors, scalars) = eager_call(name, &inputs, &params)?;
    py.detach(|| bench::time_call(&h, &tensors, &scalars, reps)).map_err(OpError::new_err)
}

/// Sizes and offsets of the `#[repr(C)]` mirrors of `c_api.h` (checked against the header by
/// `tests/test_layout.py`).
#[pyfunction]
fn layout() -> Vec<(String, usize)> {
    xla::layout()
}

fn backend_kind(kind: Option<&str>) -> PyResult<Option<BackendKind>> {
    let Some(k) = kind else { return Ok(None) };
    BackendKind::PRIORITY.iter().copied().find(|b| b.name() == k).map(Some).ok_or_else(|| {
        let names: Vec<&str> = BackendKind::PRIORITY.iter().map(|b| b.name()).collect();
        OpError::new_err(format!("unknown backend `{k}`; the backends are {}", names.join(", ")))
    })
}

/// Sets (or clears, with `None`) the backend of one op, or the default of every op when `name`
/// is `None`. Takes effect on the next call, jitted functions included (the handler dispatches
/// every call).
#[pyfunction]
#[pyo3(signature = (name, kind))]
fn set_backend(name: Option<&str>, kind: Option<&str>) -> PyResult<()> {
    let kind = backend_kind(kind)?;
    match name {
        Some(n) => {
            let h = lookup(n)?;
            registry().set_op_backend(&h, kind);
        }
        None => registry().set_default_backend(kind),
    }
    Ok(())
}

/// The backends compiled into this module, in priority order.
#[pyfunction]
fn backends() -> Vec<String> {
    registry().backends().iter().map(|b| b.kind().name().to_string()).collect()
}

/// The provenance entry (JSON) of the last call of an op made through the FFI handlers in this
/// process: op, identity, backend, device, receipt. `None` before the first call.
#[pyfunction]
fn provenance(name: &str) -> PyResult<Option<String>> {
    let id = lookup(name)?.id();
    let last = handler::provenance().lock().unwrap_or_else(|p| p.into_inner()).get(&id).cloned();
    last.map(|e| serde_json::to_string(&e).map_err(|e| OpError::new_err(e.to_string()))).transpose()
}

/// Holds receipts given as JSON (one receipt or a list, as `op_jax.conformance` returns them
/// under `receipt`, or as a file of receipts holds them). Returns how many were held and how
/// many were refused as not intact (`Receipt::check_intact`: a tampered digest, another format, a bad signature); text that is not receipts
/// raises `VerificationError`.
#[pyfunction]
fn present_receipts(json: &str) -> PyResult<(usize, usize)> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| VerificationError::new_err(format!("not JSON: {e}")))?;
    let items = match v {
        serde_json::Value::Array(items) => items,
        one => vec![one],
    };
    let (mut ok, mut refused) = (0, 0);
    for item in items {
        let r = op_runtime::receipt::Receipt::from_json(&item.to_string()).map_err(|e| VerificationError::new_err(e.to_string()))?;
        if receipts::hold(r) {
            ok += 1;
        } else {
            refused += 1;
        }
    }
    Ok((ok, refused))
}

/// The receipts held for op `name`'s current content (JSON list): backend, device, dtypes,
/// digest, and `valid_here` (verified against this machine's device profile of that backend).
#[pyfunction]
#[pyo3(name = "receipts")]
fn receipts_of(name: &str) -> PyResult<String> {
    let h = lookup(name)?;
    let here: Vec<String> = receipts::valid_here(&h).into_iter().map(|r| r.digest).collect();
    let list: Vec<serde_json::Value> = receipts::of(&h)
        .into_iter()
        .map(|r| {
            serde_json::json!({
                "op": r.op, "backend": r.backend.name(), "device": r.device.adapter, "dtypes": r.dtypes,
                "digest": r.digest, "valid_here": here.contains(&r.digest),
            })
        })
        .collect();
    Ok(serde_json::Value::Array(list).to_string())
}

/// The registry's identity for an op's `name@version` (hex), or `None`.
#[pyfunction]
fn identity(name: &str) -> Option<String> {
    registry().lookup(name).ok().map(|h| h.op().hash_hex())
}

/// Registers a declaration in the process registry: the same identity again is a no-op, a
/// different identity under a `name@version` already registered is refused (`RegistrationError`,
/// naming both declarations and both remedies). Returns the op's `name@version`. This is what a
/// crate that builds its own ops into a module calls for each of them.
pub fn register(decl: &'static op_runtime::OpDecl) -> PyResult<String> {
    registry().register(decl).map(|h| h.id()).map_err(|e| RegistrationError::new_err(e.to_string()))
}

/// Registers test fixture `which` (0 or 1): two declarations of `user/op_jax_fixture/copy@1`
/// with different bodies.
#[pyfunction]
fn _register_fixture(which: u8) -> PyResult<String> {
    match which {
        0 => register(&fixture::first::copy::DECL),
        1 => register(&fixture::second::copy::DECL),
        _ => Err(OpError::new_err("fixtures are 0 and 1")),
    }
}

/// The native module op_jax's Python half runs on, filled into `m`: what `_op_jax` is, and what
/// a user's own module is. A crate that builds its own ops into JAX writes (the whole of it;
/// `examples/user_ops/` is such a crate, built and imported by `tests/test_user_module.py`):
///
/// ```
/// use op_runtime::{op, Real};
/// use pyo3::prelude::*;
///
/// /// `x^3`, with its VJP rule.
/// #[op(name = "user/doc_ops/cube", version = 1, signature(x: f32[n]) -> f32[n],
///      category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp), generated_tests = false)]
/// pub fn cube<T: Real>(x: &[T]) -> Vec<T> {
///     x.iter().map(|&v| v * v * v).collect()
/// }
///
/// /// The VJP of `cube`.
/// pub fn cube_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
///     x.iter().zip(g).map(|(&v, &g)| T::from_f64(3.0) * v * v * g).collect()
/// }
///
/// #[pymodule]
/// fn my_ops(m: &Bound<'_, PyModule>) -> PyResult<()> {
///     op_jax::register(&cube::DECL)?; // each of the crate's ops
///     op_jax::init_module(m)
/// }
///
/// # fn main() -> PyResult<()> {
/// // Python runs `my_ops` on import; the registration it starts with needs no interpreter:
/// assert_eq!(op_jax::register(&cube::DECL)?, "user/doc_ops/cube@1");
/// assert!(op_runtime::registry().lookup("user/doc_ops/cube").is_ok());
/// # Ok(())
/// # }
/// ```
///
/// and Python imports it before `op_jax` (`import my_ops, op_jax`): the module takes the place
/// of `op_jax._op_jax`, so op_jax runs on the registry that holds the user's ops beside the
/// built-ins and the example median, with one set of exception classes. Imported after op_jax,
/// it raises `ImportError` (op_jax already runs on another registry).
pub fn init_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let modules = py.import("sys")?.getattr("modules")?;
    let slot = "op_jax._op_jax";
    if let Ok(current) = modules.get_item(slot) {
        if !current.is(m) {
            return Err(pyo3::exceptions::PyImportError::new_err(format!(
                "`{}` must be imported before op_jax: op_jax already runs on the registry of `{}`; import `{}` first",
                m.name()?,
                current.getattr("__name__").map(|n| n.to_string()).unwrap_or_default(),
                m.name()?
            )));
        }
    }
    m.add("OpError", py.get_type::<OpError>())?;
    m.add("ContractError", py.get_type::<ContractError>())?;
    m.add("UnknownOpError", py.get_type::<UnknownOpError>())?;
    m.add("RegistrationError", py.get_type::<RegistrationError>())?;
    m.add("IdentityError", py.get_type::<IdentityError>())?;
    m.add("NotDifferentiableError", py.get_type::<NotDifferentiableError>())?;
    m.add("VerificationError", py.get_type::<VerificationError>())?;
    m.add_function(wrap_pyfunction!(infer, m)?)?;
    m.add_function(wrap_pyfunction!(ops, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(call, m)?)?;
    m.add_function(wrap_pyfunction!(forward_handler, m)?)?;
    m.add_function(wrap_pyfunction!(pullback_handler, m)?)?;
    m.add_function(wrap_pyfunction!(jvp_handler, m)?)?;
    m.add_function(wrap_pyfunction!(empty_handler, m)?)?;
    m.add_function(wrap_pyfunction!(time_call, m)?)?;
    m.add_function(wrap_pyfunction!(handler_time, m)?)?;
    m.add_function(wrap_pyfunction!(present_receipts, m)?)?;
    m.add_function(wrap_pyfunction!(receipts_of, m)?)?;
    m.add_function(wrap_pyfunction!(layout, m)?)?;
    m.add_function(wrap_pyfunction!(set_backend, m)?)?;
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    m.add_function(wrap_pyfunction!(provenance, m)?)?;
    m.add_function(wrap_pyfunction!(identity, m)?)?;
    m.add_function(wrap_pyfunction!(_register_fixture, m)?)?;
    m.add_function(wrap_pyfunction!(verdicts::conformance, m)?)?;
    m.add_function(wrap_pyfunction!(verdicts::gradcheck, m)?)?;
    m.add_function(wrap_pyfunction!(verdicts::_register_verdict_fixtures, m)?)?;
    m.add_function(wrap_pyfunction!(example_median::_register_examples, m)?)?;
    if m.name()?.to_str()? != slot {
        modules.set_item(slot, m)?;
    }
    Ok(())
}

#[pymodule]
fn _op_jax(m: &Bound<'_, PyModule>) -> PyResult<()> {
    init_module(m)
}
