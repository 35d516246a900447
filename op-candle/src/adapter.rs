//! `CandleOp`: a registered op with its scalar parameters, applied to candle tensors. It checks
//! what candle's hooks cannot report in a typed way (arity, dtype, device, layout) before
//! handing the call to candle, and keeps the provenance of the calls made for it. The hooks
//! themselves (forward through the registry, backward through the pullback) are in `custom`.

use crate::convert::{self, Site};
use crate::custom::Custom;
use crate::error::Error;
use crate::shared::{Log, Shared};
use op_runtime::provenance::{ProvenanceEntry, ProvenanceRecord};
use op_runtime::OpDecl;
use op_runtime::{CallOptions, OpHandle, Scalar, Tensor};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

/// What `apply` does with a tensor whose layout is not row-major contiguous (a transposed,
/// narrowed-across-rows or broadcast view).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strided {
    /// Copy it into a contiguous tensor with candle's `contiguous()` first: an explicit copy
    /// recorded in candle's graph, so gradients still reach the view's source.
    #[default]
    Copy,
    /// Refuse it with [`Error::Strided`].
    Refuse,
}

/// `name` as a `&'static str`, leaked once per distinct name for the process's life (the
/// number of distinct op ids bounds it).
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    match names.get(name) {
        Some(n) => n,
        None => {
            let n: &'static str = Box::leak(name.to_string().into_boxed_str());
            names.insert(n);
            n
        }
    }
}

/// A registered op with its scalar parameters, applied to candle tensors.
///
/// [`CandleOp::apply`] runs it as candle's `CustomOp1`, `CustomOp2` or `CustomOp3` by its number
/// of tensor inputs: the forward dispatches through the op's registry (its `cpu` kernel where
/// it has one) and candle's `backward` runs the op's VJP as this project's tape does
/// ([`op_runtime::Tape::pullback`]: the VJP op where its backward declares VJP
/// kernels, else its VJP rule, else its composite graph). [`CandleOp::call`] runs an op of any
/// arity and any number of outputs, without gradients.
#[derive(Clone)]
pub struct CandleOp {
    shared: Arc<Shared>,
    strided: Strided,
}

impl std::fmt::Debug for CandleOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CandleOp({}, {:?})", self.shared.name, self.shared.params)
    }
}

impl CandleOp {
    /// The op behind `handle`, called with `params` (its scalar parameters in signature order).
    pub fn new(handle: &OpHandle, params: &[Scalar]) -> CandleOp {
        CandleOp {
            shared: Arc::new(Shared {
                handle: handle.clone(),
                params: params.to_vec(),
                options: CallOptions::default(),
                name: intern(&handle.id()),
                log: Mutex::new(Log::default()),
            }),
            strided: Strided::default(),
        }
    }

    /// Registers `decl` in the process-wide registry ([`op_runtime::register`]) and adapts it.
    pub fn register(decl: &'static OpDecl, params: &[Scalar]) -> Result<CandleOp, Error> {
        Ok(CandleOp::new(&op_runtime::register(decl)?, params))
    }

    /// The same op with per-call options (e.g. a backend) for its forward and backward calls.
    pub fn with_options(&self, options: CallOptions) -> CandleOp {
        let s = &self.shared;
        let shared = Shared { handle: s.handle.clone(), params: s.params.clone(), options, name: s.name, log: Mutex::new(Log::default()) };
        CandleOp { shared: Arc::new(shared), strided: self.strided }
    }

    /// The same op with its forward and backward dispatched on op-runtime's CUDA backend (the
    /// op's verified CUDA kernels and VJP kernels): candle CPU tensors in and out, each call
    /// copying its inputs to the device and its outputs back. Refused with [`Error::NoCuda`]
    /// where the registry has no CUDA backend (op-candle's `cuda` feature compiles it in) or it
    /// cannot run here (no driver, no GPU); an op or dtype without a CUDA kernel is refused by
    /// dispatch ([`Error::Dispatch`]). candle's own CUDA tensors stay refused (see the crate docs).
    pub fn on_cuda(&self) -> Result<CandleOp, Error> {
        let kind = op_runtime::BackendKind::Cuda;
        let refuse = |reason: String| Error::NoCuda { op: self.shared.name.to_string(), reason };
        let backend = self
            .shared
            .handle
            .registry()
            .backend(kind)
            .ok_or_else(|| refuse("op-runtime's CUDA backend is not compiled in (enable op-candle's `cuda` feature)".into()))?;
        backend.availability().map_err(|e| refuse(e.to_string()))?;
        let mut options = self.shared.options;
        options.backend = Some(kind);
        Ok(self.with_options(options))
    }

    /// The same op with another policy for strided inputs.
    pub fn strided(mut self, policy: Strided) -> CandleOp {
        self.strided = policy;
        self
    }

    /// Keeps (`true`) or stops keeping every provenance entry of this op's calls, forward and
    /// backward, for [`CandleOp::take_record`]; off by default (the last call's are always kept).
    pub fn recording(&self, on: bool) {
        let mut log = self.shared.log();
        match on {
            true if log.all.is_none() => log.all = Some(ProvenanceRecord::default()),
            true => {}
            false => log.all = None,
        }
    }

    /// The op's `name@version`.
    pub fn name(&self) -> &'static str {
        self.shared.name
    }

    /// The handle calls go through.
    pub fn handle(&self) -> &OpHandle {
        &self.shared.handle
    }

    /// The provenance entry of the last forward call (op, content hash, backend, device).
    pub fn last_forward(&self) -> Option<ProvenanceEntry> {
        self.shared.log().forward.clone()
    }

    /// The dispatched calls of the last backward through this op (the VJP op's call; empty
    /// where the op's VJP rule ran on the host); `None` before any backward.
    pub fn last_backward(&self) -> Option<ProvenanceRecord> {
        self.shared.log().backward.clone()
    }

    /// Every entry recorded since `recording(true)` or the last take, leaving the record empty.
    pub fn take_record(&self) -> ProvenanceRecord {
        self.shared.log().all.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The typed error of the last failed forward or backward hook, taken. candle's `backward`
    /// reports a hook's failure as text only; this is the same error, typed.
    pub fn take_error(&self) -> Option<Error> {
        self.shared.log().error.take()
    }

    /// The op's number of tensor inputs and of outputs.
    fn arity(&self) -> (usize, usize) {
        let op = self.shared.handle.op();
        (op.contract().signature.inputs().count(), op.contract().signature.outputs.len())
    }

    /// The op applied to `inputs` (one per tensor input, in signature order) as a candle custom
    /// op, so candle's `backward` flows through it. Arity, dtype, device and layout are checked
    /// first, each a typed error; an op with more than 3 tensor inputs or several outputs is
    /// `Error::NoCustomOp` (use [`CandleOp::call`]).
    pub fn apply(&self, inputs: &[&candle_core::Tensor]) -> Result<candle_core::Tensor, Error> {
        let (n_in, n_out) = self.arity();
        if !(1..=3).contains(&n_in) || n_out != 1 {
            return Err(Error::NoCustomOp { op: self.shared.name.to_string(), inputs: n_in, outputs: n_out });
        }
        let ins = self.prepare(inputs, n_in)?;
        let c = Custom(self.shared.clone());
        self.shared.log().error = None;
        let out = match ins.as_slice() {
            [a] => a.apply_op1_arc(Arc::new(Box::new(c))),
            [a, b] => a.apply_op2_arc(b, Arc::new(Box::new(c))),
            [a, b, d] => a.apply_op3_arc(b, d, Arc::new(Box::new(c))),
            _ => return Err(Error::Arity { op: self.shared.name.to_string(), expected: n_in, given: ins.len() }),
        };
        out.map_err(|e| self.recover(e))
    }

    /// The op called on `inputs` through the registry, every output returned as a candle CPU
    /// tensor: the route for ops `apply` cannot carry (more than 3 tensor inputs, several
    /// outputs, none). The outputs are new leaves: candle's `backward` does not flow through them.
    pub fn call(&self, inputs: &[&candle_core::Tensor]) -> Result<Vec<candle_core::Tensor>, Error> {
        let (n_in, _) = self.arity();
        let ins = self.prepare(inputs, n_in)?;
        let op = self.shared.name;
        let mut tensors = Vec::with_capacity(ins.len());
        for (k, t) in ins.iter().enumerate() {
            tensors.push(convert::tensor_from_candle(&Site { op, what: &format!("input {k}") }, t)?);
        }
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let outs = self.shared.dispatch(&refs)?;
        outs.into_iter().enumerate().map(|(k, t)| convert::candle_from_tensor(&Site { op, what: &format!("output {k}") }, t)).collect()
    }

    /// The inputs after the checks candle cannot type: count, dtype, device, then layout by the
    /// strided policy.
    fn prepare(&self, inputs: &[&candle_core::Tensor], expected: usize) -> Result<Vec<candle_core::Tensor>, Error> {
        let op = self.shared.name;
        if inputs.len() != expected {
            return Err(Error::Arity { op: op.to_string(), expected, given: inputs.len() });
        }
        let names: Vec<String> = self.shared.handle.op().contract().signature.inputs().map(|s| format!("input `{}`", s.name)).collect();
        let mut out = Vec::with_capacity(inputs.len());
        for (t, what) in inputs.iter().zip(&names) {
            let site = Site { op, what };
            if convert::runtime_dtype(t.dtype()).is_none() {
                return Err(Error::UnsupportedDType { op: op.to_string(), what: what.clone(), dtype: format!("{:?}", t.dtype()) });
            }
            convert::check_cpu(&site, t)?;
            out.push(match (t.is_contiguous(), self.strided) {
                (true, _) => (*t).clone(),
                (false, Strided::Copy) => t.contiguous().map_err(|e| Error::Candle { op: op.to_string(), source: Box::new(e) })?,
                (false, Strided::Refuse) => {
                    let l = t.layout();
                    return Err(Error::Strided {
                        op: op.to_string(),
                        what: what.clone(),
                        shape: l.dims().to_vec(),
                        stride: l.stride().to_vec(),
                        offset: l.start_offset(),
                    });
                }
            });
        }
        Ok(out)
    }

    /// A candle error from one of this op's hooks, as the typed error the hook recorded (candle
    /// itself carries only text); another candle error as `Error::Candle`.
    fn recover(&self, e: candle_core::Error) -> Error {
        match self.shared.log().error.take() {
            Some(typed) => typed,
            None => Error::Candle { op: self.shared.name.to_string(), source: Box::new(e) },
        }
    }
}
