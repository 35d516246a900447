//! The three XLA FFI handlers every op target points at: `forward` (the op's call), `pullback`
//! (its declared backward for given cotangents) and `jvp` (its forward mode for given tangents).
//! Each finds the op by the `op` attribute, refuses to run unless the `identity` attribute is the
//! registered op's identity, and calls it through op-runtime's one dispatch path
//! (`OpHandle::call`, `call_batched`, `Tape::pullback`, `Tape::jvp`). Nothing
//! may unwind into XLA: every entry catches panics and every failure becomes an
//! `XLA_FFI_Error` naming the op.

use crate::xla;
use op_runtime::provenance::ProvenanceEntry;
use op_runtime::{registry, CallOptions, DType, Data, OpHandle, Scalar, Tape, Tensor, Var};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::Instant;

/// A failure to report to XLA: its error code and message.
pub struct Failure {
    code: i32,
    message: String,
}

impl Failure {
    fn invalid(message: impl Into<String>) -> Self {
        Failure { code: xla::ERROR_INVALID_ARGUMENT, message: message.into() }
    }
    fn precondition(message: impl Into<String>) -> Self {
        Failure { code: xla::ERROR_FAILED_PRECONDITION, message: message.into() }
    }
    fn not_found(message: impl Into<String>) -> Self {
        Failure { code: xla::ERROR_NOT_FOUND, message: message.into() }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Forward,
    Pullback,
    Jvp,
}

/// `XLA_FFI_Handler` for an op's forward call.
pub extern "C" fn forward(frame: *mut xla::CallFrame) -> *mut xla::Error {
    entry(frame, Kind::Forward)
}

/// `XLA_FFI_Handler` for an op's pullback (inputs, then one cotangent per output).
pub extern "C" fn pullback(frame: *mut xla::CallFrame) -> *mut xla::Error {
    entry(frame, Kind::Pullback)
}

/// `XLA_FFI_Handler` for an op's forward mode (inputs, then one tangent per float input; one
/// tangent per float output).
pub extern "C" fn jvp(frame: *mut xla::CallFrame) -> *mut xla::Error {
    entry(frame, Kind::Jvp)
}

/// Time spent inside the handlers (nanoseconds) and the number of entries, for the benchmark
/// (`bench/overhead.py` reports it per call beside the wall-clock figures). Counted only once
/// [`TIMING`] is on (`handler_time` turns it on), so an ordinary call reads no clock.
pub static SPENT: (AtomicU64, AtomicU64) = (AtomicU64::new(0), AtomicU64::new(0));

/// Whether handlers time themselves into [`SPENT`].
pub static TIMING: AtomicBool = AtomicBool::new(false);

fn entry(frame: *mut xla::CallFrame, kind: Kind) -> *mut xla::Error {
    if !TIMING.load(Ordering::Relaxed) {
        return entry_timed(frame, kind);
    }
    let t = Instant::now();
    let e = entry_timed(frame, kind);
    SPENT.0.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    SPENT.1.fetch_add(1, Ordering::Relaxed);
    e
}

fn entry_timed(frame: *mut xla::CallFrame, kind: Kind) -> *mut xla::Error {
    if frame.is_null() {
        // No API table to build an error with; XLA never passes a null frame.
        return null_mut();
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // XLA's CPU runtime runs with denormals flushed (FTZ/DAZ); the op's contract, its
        // reference and the Rust call are IEEE arithmetic. Restored on every exit, panics included.
        let _ieee = FpEnv::ieee();
        unsafe { run(frame, kind) }
    }));
    let failure = match outcome {
        Ok(Ok(())) => return null_mut(),
        Ok(Err(f)) => f,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            Failure { code: xla::ERROR_INTERNAL, message: format!("op-jax: the handler panicked (caught at the FFI boundary): {what}") }
        }
    };
    catch_unwind(AssertUnwindSafe(|| unsafe { error(frame, failure) })).unwrap_or(null_mut())
}

/// The floating-point environment of the calling thread, set to IEEE (no flush-to-zero, no
/// denormals-are-zero) while alive and restored when dropped.
struct FpEnv {
    #[allow(dead_code)]
    saved: u64,
}

impl FpEnv {
    #[cfg(target_arch = "x86_64")]
    fn ieee() -> FpEnv {
        let mut csr: u32 = 0;
        // SAFETY: stmxcsr/ldmxcsr read and write the SSE control register of this thread only.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
            let ieee = csr & !((1 << 15) | (1 << 6)); // FTZ, DAZ
            std::arch::asm!("ldmxcsr [{}]", in(reg) &ieee, options(nostack));
        }
        FpEnv { saved: u64::from(csr) }
    }
    #[cfg(target_arch = "aarch64")]
    fn ieee() -> FpEnv {
        let fpcr: u64;
        // SAFETY: FPCR is this thread's floating-point control register; FZ is bit 24.
        unsafe {
            std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack));
            std::arch::asm!("msr fpcr, {}", in(reg) fpcr & !(1 << 24), options(nomem, nostack));
        }
        FpEnv { saved: fpcr }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn ieee() -> FpEnv {
        FpEnv { saved: 0 }
    }
}

impl Drop for FpEnv {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        {
            let csr = self.saved as u32;
            // SAFETY: restores the value read in `ieee`.
            unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack)) };
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: restores the value read in `ieee`.
        unsafe {
            std::arch::asm!("msr fpcr, {}", in(reg) self.saved, options(nomem, nostack))
        };
    }
}

/// An `XLA_FFI_Error` built with the frame's API table (XLA copies the message).
pub(crate) unsafe fn error(frame: *mut xla::CallFrame, f: Failure) -> *mut xla::Error {
    let api = (*frame).api;
    if api.is_null() || (*api).struct_size < std::mem::offset_of!(xla::Api, error_get_message) {
        return null_mut();
    }
    let Some(create) = (*api).error_create else { return null_mut() };
    let message = CString::new(f.message.replace('\0', "\\0")).unwrap_or_default();
    let mut args = xla::ErrorCreateArgs {
        struct_size: xla::ERROR_CREATE_ARGS_STRUCT_SIZE,
        extension_start: null_mut(),
        message: message.as_ptr(),
        errc: f.code,
    };
    create(&mut args)
}

/// Fills the metadata XLA asks for at registration: the API version this module was written
/// against, no traits, no state.
pub(crate) unsafe fn metadata(ext: *mut xla::MetadataExtension) -> Result<(), Failure> {
    if (*ext).extension_base.struct_size < xla::METADATA_EXTENSION_STRUCT_SIZE {
        return Err(Failure::precondition("op-jax: XLA_FFI_Metadata_Extension is smaller than this module's header"));
    }
    let md = (*ext).metadata;
    if md.is_null() || (*md).struct_size < xla::METADATA_STRUCT_SIZE {
        return Err(Failure::precondition("op-jax: XLA_FFI_Metadata is missing or smaller than this module's header"));
    }
    (*md).api_version = xla::ApiVersion {
        struct_size: xla::API_VERSION_STRUCT_SIZE,
        extension_start: null_mut(),
        major_version: xla::API_MAJOR,
        minor_version: xla::API_MINOR,
    };
    (*md).traits = 0;
    if (*md).struct_size >= std::mem::offset_of!(xla::Metadata, state_type_id) + std::mem::size_of::<xla::TypeId>() {
        (*md).state_type_id = xla::TypeId { type_id: 0 };
    }
    Ok(())
}

/// A call's attributes, in XLA's order (a handful: a list beats a hash map on every call).
struct Attrs<'a>(Vec<(&'a str, Attr<'a>)>);

impl<'a> Attrs<'a> {
    fn get(&self, key: &str) -> Option<&Attr<'a>> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The attribute `param_<name>` of parameter `name`.
    fn param(&self, name: &str) -> Option<&Attr<'a>> {
        self.0.iter().find(|(k, _)| k.strip_prefix("param_") == Some(name)).map(|(_, v)| v)
    }
}

/// One decoded attribute.
enum Attr<'a> {
    Str(&'a str),
    Scalar(i32, *const c_void),
    Array(i32, usize, *const c_void),
}

unsafe fn span<'a>(s: *const xla::ByteSpan) -> Result<&'a str, Failure> {
    if s.is_null() || ((*s).ptr.is_null() && (*s).len > 0) {
        return Err(Failure::invalid("op-jax: a null string in the call's attributes"));
    }
    if (*s).len == 0 {
        return Ok("");
    }
    let bytes = std::slice::from_raw_parts((*s).ptr as *const u8, (*s).len);
    std::str::from_utf8(bytes).map_err(|_| Failure::invalid("op-jax: an attribute string is not UTF-8"))
}

unsafe fn attrs<'a>(a: &'a xla::Attrs) -> Result<Attrs<'a>, Failure> {
    let mut out = Attrs(Vec::with_capacity(8));
    let n = usize::try_from(a.size).map_err(|_| Failure::invalid("op-jax: negative attribute count"))?;
    for i in 0..n {
        let name = span(*a.names.add(i))?;
        let p = *a.attrs.add(i);
        if p.is_null() {
            return Err(Failure::invalid(format!("op-jax: attribute `{name}` is null")));
        }
        let v = match *a.types.add(i) {
            xla::ATTR_STRING => Attr::Str(span(p as *const xla::ByteSpan)?),
            xla::ATTR_SCALAR => {
                let s = p as *const xla::Scalar;
                Attr::Scalar((*s).dtype, (*s).value)
            }
            xla::ATTR_ARRAY => {
                let s = p as *const xla::Array;
                Attr::Array((*s).dtype, (*s).size, (*s).data)
            }
            _ => continue, // dictionaries: op-jax passes none
        };
        out.0.push((name, v));
    }
    Ok(out)
}

/// The op's dtype for an `XLA_FFI_DataType` code.
pub fn dtype_of(code: i32) -> Option<DType> {
    Some(match code {
        1 => DType::bool,
        2 => DType::i8,
        3 => DType::i16,
        4 => DType::i32,
        5 => DType::i64,
        6 => DType::u8,
        7 => DType::u16,
        8 => DType::u32,
        9 => DType::u64,
        10 => DType::f16,
        11 => DType::f32,
        12 => DType::f64,
        16 => DType::bf16,
        _ => return None,
    })
}

unsafe fn scalar(op: &str, name: &str, code: i32, v: *const c_void) -> Result<Scalar, Failure> {
    Ok(match code {
        1 => Scalar::Bool(*(v as *const u8) != 0),
        2 => Scalar::I8(*(v as *const i8)),
        3 => Scalar::I16(*(v as *const i16)),
        4 => Scalar::I32(*(v as *const i32)),
        5 => Scalar::I64(*(v as *const i64)),
        6 => Scalar::U8(*(v as *const u8)),
        7 => Scalar::U16(*(v as *const u16)),
        8 => Scalar::U32(*(v as *const u32)),
        9 => Scalar::U64(*(v as *const u64)),
        11 => Scalar::F32(*(v as *const f32)),
        12 => Scalar::F64(*(v as *const f64)),
        other => {
            return Err(Failure::invalid(format!("op `{op}`: parameter `{name}` has XLA dtype code {other}, which no op parameter takes")))
        }
    })
}

/// Handles by `name@version`, so a call does not look the op up by name each time. A cached
/// handle re-reads its registry slot on every call, so a replacement is still seen (and then
/// refused by the identity check).
fn handle(op: &str) -> Result<OpHandle, Failure> {
    // The last op this thread ran, without a hash or a lock: a jitted loop calls one op again
    // and again.
    thread_local! {
        static LAST: std::cell::RefCell<Option<(Box<str>, OpHandle)>> = const { std::cell::RefCell::new(None) };
    }
    if let Some(h) = LAST.with(|l| l.borrow().as_ref().filter(|(k, _)| **k == *op).map(|(_, h)| h.clone())) {
        return Ok(h);
    }
    let h = handle_shared(op)?;
    LAST.with(|l| *l.borrow_mut() = Some((op.into(), h.clone())));
    Ok(h)
}

fn handle_shared(op: &str) -> Result<OpHandle, Failure> {
    static CACHE: OnceLock<RwLock<HashMap<String, OpHandle>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(h) = cache.read().unwrap_or_else(|p| p.into_inner()).get(op) {
        return Ok(h.clone());
    }
    let h = registry().lookup(op).map_err(|e| Failure::not_found(format!("op-jax: {e}")))?;
    cache.write().unwrap_or_else(|p| p.into_inner()).insert(op.to_string(), h.clone());
    Ok(h)
}

pub(crate) fn hex_eq(hash: &[u8; 32], hex: &str) -> bool {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    hex.len() == 64
        && hash.iter().zip(hex.as_bytes().chunks(2)).all(|(b, c)| c[0] == DIGITS[(b >> 4) as usize] && c[1] == DIGITS[(b & 15) as usize])
}

/// The last call's provenance per op (`name@version`), for `op_jax.provenance`.
pub fn provenance() -> &'static Mutex<HashMap<String, ProvenanceEntry>> {
    static LAST: OnceLock<Mutex<HashMap<String, ProvenanceEntry>>> = OnceLock::new();
    LAST.get_or_init(Default::default)
}

/// Records a call's provenance as its op's last (no allocation once the op has an entry).
fn remember(op: &str, e: ProvenanceEntry) {
    let mut last = provenance().lock().unwrap_or_else(|p| p.into_inner());
    match last.get_mut(op) {
        Some(slot) => *slot = e,
        None => {
            last.insert(op.to_string(), e);
        }
    }
}

struct View {
    dtype: DType,
    dims: Vec<usize>,
    data: *mut u8,
}

/// Which buffer of a call, for messages (formatted only when one is needed).
#[derive(Clone, Copy)]
enum Slot {
    Argument(usize),
    Result(usize),
}

impl std::fmt::Display for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Slot::Argument(i) => write!(f, "argument {i}"),
            Slot::Result(k) => write!(f, "result {k}"),
        }
    }
}

unsafe fn buffer(op: &str, what: Slot, p: *mut c_void) -> Result<View, Failure> {
    let b = p as *const xla::Buffer;
    if b.is_null() {
        return Err(Failure::invalid(format!("op `{op}`: {what} is null")));
    }
    let dtype = dtype_of((*b).dtype).ok_or_else(|| {
        Failure::invalid(format!("op `{op}`: {what} has XLA dtype code {}, which op-runtime has no dtype for", (*b).dtype))
    })?;
    let rank = usize::try_from((*b).rank).map_err(|_| Failure::invalid(format!("op `{op}`: {what} has a negative rank")))?;
    let raw: &[i64] = if rank == 0 { &[] } else { std::slice::from_raw_parts((*b).dims, rank) };
    let dims = raw
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| Failure::invalid(format!("op `{op}`: {what} has a negative dimension"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(View { dtype, dims, data: (*b).data as *mut u8 })
}

fn numel(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}

unsafe fn tensor(op: &str, v: &View, shape: Vec<usize>) -> Result<Tensor, Failure> {
    let n =
        numel(&shape).and_then(|n| n.checked_mul(v.dtype.size())).ok_or_else(|| Failure::invalid(format!("op `{op}`: shape overflow")))?;
    let bytes: &[u8] = if n == 0 { &[] } else { std::slice::from_raw_parts(v.data, n) };
    let data = crate::copy::data_from(v.dtype, bytes).map_err(|e| Failure::invalid(format!("op `{op}`: {e}")))?;
    Tensor::new(shape, data).map_err(|e| Failure::invalid(format!("op `{op}`: {e}")))
}

/// Copies `t` into the result buffer `r`, which must hold exactly its dtype and elements.
unsafe fn write(op: &str, k: usize, r: &View, t: &Tensor) -> Result<(), Failure> {
    if r.dtype != t.dtype() || numel(&r.dims) != Some(t.numel()) {
        return Err(Failure::precondition(format!(
            "op `{op}`: result {k} is {}{:?}, the op produced {}{:?}",
            r.dtype,
            r.dims,
            t.dtype(),
            t.shape()
        )));
    }
    let data = t.host_data().map_err(|e| Failure::invalid(format!("op `{op}`: {e}")))?;
    let len = numel(&r.dims).and_then(|n| n.checked_mul(r.dtype.size())).unwrap_or(0);
    if len > 0 {
        let dst = std::slice::from_raw_parts_mut(r.data, len);
        if !crate::copy::write_into(&data, dst) {
            return Err(Failure::precondition(format!("op `{op}`: result {k} holds {len} bytes, the op's output another size")));
        }
    }
    Ok(())
}

unsafe fn run(frame: *mut xla::CallFrame, kind: Kind) -> Result<(), Failure> {
    let f = &*frame;
    if f.struct_size < xla::CALL_FRAME_STRUCT_SIZE {
        return Err(Failure::precondition("op-jax: XLA's call frame is smaller than the header this module was built against"));
    }
    if !f.extension_start.is_null() && (*f.extension_start).type_ == xla::EXTENSION_METADATA {
        return metadata(f.extension_start as *mut xla::MetadataExtension);
    }
    if f.stage != xla::STAGE_EXECUTE {
        return Ok(());
    }
    let attrs = attrs(&f.attrs)?;
    let string = |key: &str| match attrs.get(key) {
        Some(Attr::Str(s)) => Ok(*s),
        _ => Err(Failure::invalid(format!("op-jax: the call has no string attribute `{key}` (not a call op_jax made)"))),
    };
    let op = string("op")?;
    let identity = string("identity")?;
    let h = handle(op)?;
    let registered = h.op();
    if !hex_eq(registered.hash(), identity) {
        return Err(Failure::not_found(format!(
            "op `{op}`: this call was made for identity {identity}, but the op registered in this process has identity {}; \
             it is refused rather than run against different code (rebuild the artefact against this op, or load the \
             op's former version)",
            registered.hash_hex()
        )));
    }
    let ranks: &[i64] = match attrs.get("ranks") {
        Some(Attr::Array(5, n, p)) => {
            if *n == 0 {
                &[]
            } else {
                std::slice::from_raw_parts(*p as *const i64, *n)
            }
        }
        _ => return Err(Failure::invalid(format!("op `{op}`: the call has no i64 array attribute `ranks`"))),
    };
    let contract = registered.contract();
    let mut params = Vec::new();
    for p in contract.signature.params() {
        match attrs.param(&p.name) {
            Some(Attr::Scalar(code, v)) => params.push(scalar(op, &p.name, *code, *v)?),
            _ => return Err(Failure::invalid(format!("op `{op}`: the call has no scalar attribute `param_{}`", p.name))),
        }
    }
    // Arguments: the op's inputs (and for a pullback, one cotangent per output).
    let nargs = usize::try_from(f.args.size).unwrap_or(0);
    if nargs != ranks.len() {
        return Err(Failure::invalid(format!("op `{op}`: {nargs} arguments, `ranks` lists {}", ranks.len())));
    }
    let mut views = Vec::with_capacity(nargs);
    for i in 0..nargs {
        if *f.args.types.add(i) != xla::ARG_BUFFER {
            return Err(Failure::invalid(format!("op `{op}`: argument {i} is not a buffer")));
        }
        views.push(buffer(op, Slot::Argument(i), *f.args.args.add(i))?);
    }
    // Leading dims beyond the op's own rank are batch dims (vmap's `broadcast_all`: every
    // argument carries all of them).
    let mut batch: Option<&[usize]> = None;
    for (i, (v, &r)) in views.iter().zip(ranks).enumerate() {
        let own = usize::try_from(r)
            .ok()
            .filter(|r| *r <= v.dims.len())
            .ok_or_else(|| Failure::invalid(format!("op `{op}`: argument {i} has rank {}, below the op's rank {r}", v.dims.len())))?;
        let lead = &v.dims[..v.dims.len() - own];
        match &batch {
            None => batch = Some(lead),
            Some(b) if *b == lead => {}
            Some(b) => {
                return Err(Failure::invalid(format!("op `{op}`: argument {i} has batch dims {lead:?}, argument 0 has {b:?}")));
            }
        }
    }
    let batch = batch.unwrap_or_default().to_vec();
    let nrets = usize::try_from(f.rets.size).unwrap_or(0);
    let mut rets = Vec::with_capacity(nrets);
    for k in 0..nrets {
        if *f.rets.types.add(k) != xla::RET_BUFFER {
            return Err(Failure::invalid(format!("op `{op}`: result {k} is not a buffer")));
        }
        rets.push(buffer(op, Slot::Result(k), *f.rets.rets.add(k))?);
    }
    let b = if batch.is_empty() { None } else { Some(numel(&batch).unwrap_or(0)) };
    let mut tensors = Vec::with_capacity(nargs);
    for v in &views {
        let own = v.dims[batch.len()..].to_vec();
        let shape = match b {
            None => own,
            Some(b) => std::iter::once(b).chain(own).collect(),
        };
        tensors.push(tensor(op, v, shape)?);
    }
    if matches!(kind, Kind::Pullback | Kind::Jvp) && b == Some(0) {
        // An empty batch: no slice to differentiate, and every result buffer is empty.
        return Ok(());
    }
    let outputs: Vec<Tensor> = match kind {
        Kind::Forward => {
            let refs: Vec<&Tensor> = tensors.iter().collect();
            match b {
                None => {
                    let mut out = h.call(&refs, &params).map_err(|e| Failure::invalid(e.to_string()))?;
                    crate::receipts::attach(&mut out.provenance);
                    remember(op, out.provenance);
                    out.outputs
                }
                Some(_) => {
                    let out = h.call_batched(&refs, &params, CallOptions::default()).map_err(|e| Failure::invalid(e.to_string()))?;
                    if let Some(mut last) = out.provenance.into_iter().last() {
                        crate::receipts::attach(&mut last);
                        remember(op, last);
                    }
                    out.outputs
                }
            }
        }
        Kind::Pullback => per_slice(op, tensors, b, |args| pullback_one(op, &h, args, &params))?,
        Kind::Jvp => per_slice(op, tensors, b, |args| jvp_one(op, &h, args, &params))?,
    };
    if outputs.len() != rets.len() {
        return Err(Failure::precondition(format!("op `{op}`: {} results expected, the op produced {}", rets.len(), outputs.len())));
    }
    for (k, (r, t)) in rets.iter().zip(&outputs).enumerate() {
        write(op, k, r, t)?;
    }
    Ok(())
}

/// The gradients of the op's float inputs: `args` are its inputs then one cotangent per output.
fn pullback_one(op: &str, h: &OpHandle, mut args: Vec<Tensor>, params: &[Scalar]) -> Result<Vec<Tensor>, Failure> {
    let n_in = h.op().contract().signature.inputs().count();
    if args.len() < n_in {
        return Err(Failure::invalid(format!("op `{op}`: a pullback takes the op's {n_in} inputs and the cotangents")));
    }
    let cts = args.split_off(n_in);
    let pb = Tape::new().pullback(h, args, params, cts).map_err(|e| Failure::invalid(e.to_string()))?;
    Ok(pb.grads.into_iter().flatten().collect())
}

/// The tangents of the op's float outputs: `args` are its inputs then one tangent per float
/// input, pushed through the op's forward mode (`Tape::jvp`: its JVP rules, its differentiable
/// VJP op, or its graph). An output no tangent reaches gets zeros.
fn jvp_one(op: &str, h: &OpHandle, mut args: Vec<Tensor>, params: &[Scalar]) -> Result<Vec<Tensor>, Failure> {
    let n_in = h.op().contract().signature.inputs().count();
    if args.len() < n_in {
        return Err(Failure::invalid(format!("op `{op}`: a jvp takes the op's {n_in} inputs and the tangents")));
    }
    let tangents = args.split_off(n_in);
    let mut tape = Tape::new();
    let vars: Vec<Var> = args.iter().enumerate().map(|(k, x)| tape.input(&format!("in{k}"), x.dtype(), x.shape().to_vec())).collect();
    let outs = tape.apply(h, &vars, params).map_err(invalid)?;
    let floats: Vec<Var> = vars.iter().zip(&args).filter(|(_, x)| x.dtype().is_float()).map(|(v, _)| *v).collect();
    if floats.len() != tangents.len() {
        return Err(Failure::invalid(format!("op `{op}`: {} tangents for {} float inputs", tangents.len(), floats.len())));
    }
    let feeds: Vec<(Var, &Tensor)> = vars.iter().copied().zip(args.iter()).collect();
    let mut run = tape.run(&feeds).map_err(invalid)?;
    let seeds: Vec<(Var, &Tensor)> = floats.into_iter().zip(tangents.iter()).collect();
    let pushed = tape.jvp(&mut run, &seeds).map_err(invalid)?;
    let mut out = Vec::new();
    for v in outs {
        let (Some(d), Some(s)) = (tape.dtype(v), tape.shape(v)) else { continue };
        if !d.is_float() {
            continue;
        }
        match pushed.get(v) {
            Some(t) => out.push(t.to_host().map_err(|e| Failure::invalid(format!("op `{op}`: {e}")))?),
            None => out.push(Tensor::zeros(d, s.to_vec()).map_err(|e| Failure::invalid(format!("op `{op}`: {e}")))?),
        }
    }
    Ok(out)
}

fn invalid(e: impl std::fmt::Display) -> Failure {
    Failure::invalid(e.to_string())
}

/// Runs `one` on the whole arguments, or, batched along a leading axis of `b` slices, once per
/// slice with the results stacked.
fn per_slice(
    op: &str,
    args: Vec<Tensor>,
    b: Option<usize>,
    one: impl Fn(Vec<Tensor>) -> Result<Vec<Tensor>, Failure>,
) -> Result<Vec<Tensor>, Failure> {
    let Some(b) = b else { return one(args) };
    let mut per: Vec<Vec<Tensor>> = Vec::new();
    for i in 0..b {
        let slice = args
            .iter()
            .map(|t| {
                let inner: Vec<usize> = t.shape()[1..].to_vec();
                let n = numel(&inner).unwrap_or(0);
                let data = t.data().slice_range(i * n, i * n + n).ok_or_else(|| Failure::invalid(format!("op `{op}`: batch slice {i}")))?;
                Tensor::new(inner, data).map_err(|e| Failure::invalid(format!("op `{op}`: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        per.push(one(slice)?);
    }
    let k = per.first().map_or(0, |g| g.len());
    let mut out = Vec::with_capacity(k);
    for j in 0..k {
        let parts: Vec<&Data> = per.iter().map(|g| g[j].data()).collect();
        let data = Data::concat(&parts).ok_or_else(|| Failure::invalid(format!("op `{op}`: results of slices differ in dtype")))?;
        let shape: Vec<usize> = std::iter::once(b).chain(per[0][j].shape().iter().copied()).collect();
        out.push(Tensor::new(shape, data).map_err(|e| Failure::invalid(format!("op `{op}`: {e}")))?);
    }
    Ok(out)
}
