//! The tape: records a pipeline of ops (built-in and user alike) with static shapes, plans its
//! memory before anything runs, runs forward through dispatch and backward through the declared
//! VJPs (composite ops through the graph their builder records), and updates parameters with
//! plain SGD. It owns graph bookkeeping only: validation, backend choice and execution stay in
//! `plan`/`dispatch`; shims are driven through `exec`.
//!
//! ```
//! use op_runtime::train::Sgd;
//! use op_runtime::{DType, Tape, Tensor};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let n = 64;
//! let mut t = Tape::new();
//! let x = t.input("x", DType::f32, [n]);
//! let target = t.input("target", DType::f32, [n - 4]);
//! let k = t.param("kernel", Tensor::vector(vec![0.2f32; 5]))?;
//! let y = t.call1("builtin/conv1d", &[x, k], &[])?;
//! let loss = t.call1("builtin/mse_loss", &[y, target], &[])?;
//! let signal = Tensor::vector((0..n).map(|i| (i as f32 * 0.3).sin()).collect::<Vec<f32>>());
//! let clean = Tensor::vector(vec![0.0f32; n - 4]);
//! let mut run = t.run(&[(x, &signal), (target, &clean)])?; // plans the memory first
//! let before = run.scalar(loss).expect("a scalar loss");
//! let grads = t.backward(&mut run, loss)?;
//! Sgd::new(0.1).step(&mut t, &grads)?;
//! let after = t.run(&[(x, &signal), (target, &clean)])?.scalar(loss).expect("a scalar loss");
//! assert!(after < before, "one SGD step lowers the loss: {before} -> {after}");
//! println!("{}", run.provenance);
//! # Ok(())
//! # }
//! ```

mod constants;
pub mod device;
pub mod exec;
mod forward;
mod higher;
pub mod planner;
pub mod pullback;
mod record;
mod second;
mod vmap;

pub use device::SharedDevice;
pub use exec::Mode;
pub use forward::Tangents;
pub use planner::{human_bytes, infer, BufferKind, Inferred, MemoryPlan, PlanEntry};
pub use pullback::Pullback;
pub use second::Hvp;
pub use vmap::{vmap, GradFn, InAxis, TapeFn, TensorFn, Vmap};

use op_contract::contract::{Backward, DType};
use op_core::backend::BackendError;
use op_core::decl::OpDecl;
use op_core::error::DispatchError;
use op_core::graph::{Graph, GraphError};
use op_core::kind::BackendKind;
use op_core::op::RegisteredOp;
use op_core::provenance::{ProvenanceEntry, ProvenanceRecord};
use op_core::receipt::Receipt;
use op_core::registry::dispatch::CallOptions;
use op_core::registry::{OpHandle, Registry};
use op_core::tensor::{Data, Scalar, Tensor};
use std::sync::Arc;
use thiserror::Error;

pub use op_core::graph::Var;

/// Errors of recording, planning, running and differentiating a tape. Every variant that
/// concerns an op names it.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum TapeError {
    /// The op is declared `backward = none`.
    #[error("op `{op}` is declared `backward = none`: gradients cannot flow through it; remove it from the differentiated path or declare a backward")]
    NotDifferentiable {
        /// The op's `name@version`.
        op: String,
    },
    /// The op declares JVP rules only; the tape differentiates in reverse mode.
    #[error("op `{op}` declares JVP rules but no VJP; the tape runs reverse mode: add `vjp(path)` to its `backward`")]
    NoVjp {
        /// The op's `name@version`.
        op: String,
    },
    /// The op is declared `composite` without naming its graph builder.
    #[error("op `{op}` is declared `backward = composite` without a graph builder; name it: `backward = composite(my_graph)`")]
    NoCompositeGraph {
        /// The op's `name@version`.
        op: String,
    },
    /// A composite op's graph does not produce the op's outputs.
    #[error("op `{op}`: its composite graph {reason}")]
    CompositeMismatch {
        /// The composite op's `name@version`.
        op: String,
        /// How the graph differs, completing "its composite graph ...".
        reason: String,
    },
    /// Composite graphs nested too deeply (a graph that records its own op).
    #[error("op `{op}`: composite graphs nest deeper than {depth} levels (does the graph record the op itself?)")]
    CompositeTooDeep {
        /// The composite op's `name@version`.
        op: String,
        /// The nesting limit.
        depth: usize,
    },
    /// A validation or dispatch error (it names the op).
    #[error(transparent)]
    Dispatch(#[from] DispatchError),
    /// A shim (reference or backward rule) failed.
    #[error("op `{op}`: {message}")]
    Shim {
        /// The op's `name@version`; else its Rust name, a value's name or `-`.
        op: String,
        /// The shim's error message.
        message: String,
    },
    /// A variable that is not on this tape.
    #[error("{var} is not a value of this tape (op `{op}`)")]
    UnknownVar {
        /// The op it was passed to (`-` outside an op).
        op: String,
        /// The variable.
        var: Var,
    },
    /// The tape runs on host tensors: a device tensor fed or given as a parameter is refused
    /// (no implicit copy).
    #[error("`{name}` lives on {placement}: the tape takes host tensors (call `to_host()` first; no implicit copy)")]
    Placement {
        /// The input's or parameter's name.
        name: String,
        /// Where the tensor lives.
        placement: String,
    },
    /// A transfer between the host and the tape's device failed, or the tape cannot run there.
    #[error("{what}: {reason}")]
    Device {
        /// What was being moved or run (a value's or op's name).
        what: String,
        /// Why it failed.
        reason: String,
    },
    /// A trainable parameter must be a float tensor.
    #[error("parameter `{name}` must be a float tensor, got `{dtype}`")]
    NotFloatParam {
        /// The parameter's name.
        name: String,
        /// The tensor's dtype.
        dtype: DType,
    },
    /// An input was not fed, or fed twice.
    #[error("input `{name}` ({var}) {problem}")]
    Feed {
        /// The input's name.
        name: String,
        /// The input's variable.
        var: Var,
        /// What is wrong, e.g. `was not fed`.
        problem: String,
    },
    /// The memory plan exceeds the budget: nothing was allocated or run.
    #[error("the tape needs {} for intermediates, over its budget of {}; nothing was allocated. largest: {}", human_bytes(*.total), human_bytes(*.budget), .largest.iter().map(|e| format!("{} = {} `{}` {}{:?} {}", e.value, e.op, e.output, e.dtype, e.shape, human_bytes(e.bytes))).collect::<Vec<_>>().join("; "))]
    OverBudget {
        /// The budget in bytes.
        budget: usize,
        /// Bytes the plan needs.
        total: usize,
        /// The largest planned buffers.
        largest: Vec<PlanEntry>,
    },
    /// The loss must be one float element.
    #[error("the loss {var} (output of `{op}`) must be a single float element, got {dtype}{shape:?}")]
    NotScalarLoss {
        /// The op producing the loss (the value's name if it is an input or parameter).
        op: String,
        /// The loss variable.
        var: Var,
        /// Its dtype.
        dtype: DType,
        /// Its shape.
        shape: Vec<usize>,
    },
    /// A cotangent given to [`Tape::pullback`] that does not match the op's output.
    #[error("op `{op}`: cotangent of output {output}: {problem}; give one cotangent per output, of its dtype and shape")]
    Cotangent {
        /// The op's `name@version`.
        op: String,
        /// The output's index.
        output: usize,
        /// What is wrong.
        problem: String,
    },
    /// A gradient or parameter update on a dtype the tape cannot accumulate.
    #[error("op `{op}`: cannot accumulate gradients of dtype `{dtype}`")]
    GradDType {
        /// The op whose gradient it is (`-` for a seed).
        op: String,
        /// The gradient's dtype.
        dtype: DType,
    },
    /// Forward mode cannot push tangents through the op (see `Tape::jvp`).
    #[error("op `{op}` has no forward-mode rule: {reason}")]
    NoForwardRule {
        /// The op's `name@version`.
        op: String,
        /// Why, and what to declare.
        reason: String,
    },
    /// Second order (see `Tape::hvp`) needs the op's differentiable VJP op.
    #[error("op `{op}` has no second derivative: {reason}")]
    NoSecondOrder {
        /// The op's `name@version`.
        op: String,
        /// Why, and what to declare.
        reason: String,
    },
    /// A batched call (`vmap`) whose inputs do not make one batch.
    #[error("vmap: {problem}")]
    Batch {
        /// What is wrong, naming the input.
        problem: String,
    },
    /// One slice of a batched call failed.
    #[error("vmap: batch slice {index} failed: {source}")]
    Slice {
        /// The failing slice.
        index: usize,
        /// Its error.
        source: Box<TapeError>,
    },
}

#[derive(Clone, Debug)]
enum Kind {
    Input,
    Param(Tensor),
    /// A constant with its provenance entry: one a graph introduces (`Tape::constant`) or a
    /// recorded gradient's seed and zero cotangents (`record`).
    Const(Tensor, op_core::provenance::ConstantEntry),
    Output {
        node: usize,
        k: usize,
    },
}

#[derive(Clone, Debug)]
struct VarInfo {
    name: String,
    dtype: DType,
    shape: Vec<usize>,
    kind: Kind,
}

#[doc(hidden)]
#[derive(Clone)]
pub struct Node {
    handle: OpHandle,
    op: Arc<RegisteredOp>,
    inputs: Vec<Var>,
    params: Vec<Scalar>,
    outputs: Vec<Var>,
    /// A composite op's graph, recorded with this node's input shapes.
    sub: Option<Box<Tape>>,
}

/// How deeply composite graphs may nest.
const MAX_DEPTH: usize = 16;

/// A recording of ops over static shapes.
#[derive(Clone)]
pub struct Tape {
    registry: Registry,
    mode: Mode,
    options: CallOptions,
    budget: Option<usize>,
    vars: Vec<VarInfo>,
    nodes: Vec<Node>,
    depth: usize,
    /// A composite graph's outputs (sub-tapes only).
    graph_outputs: Vec<Var>,
    /// Receipts presented for provenance (matched by content hash, backend and device).
    receipts: Arc<Vec<Receipt>>,
    /// The device the tape runs on (`device`), if any.
    device: Option<SharedDevice>,
}

impl std::fmt::Debug for Tape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tape({} values, {} ops, {:?})", self.vars.len(), self.nodes.len(), self.mode)
    }
}

/// The values of one forward run and the provenance of every call it made.
#[derive(Debug)]
pub struct Run {
    values: Vec<Option<Tensor>>,
    ops: Vec<Arc<RegisteredOp>>,
    /// One entry per dispatched call (forward, then composite graphs rematerialised in backward).
    pub provenance: ProvenanceRecord,
}

impl Run {
    /// The value of a variable.
    pub fn value(&self, v: Var) -> Option<&Tensor> {
        self.values.get(v.0).and_then(Option::as_ref)
    }
    /// A single-element float value as f64 (read back, counted, where it lives on a device).
    pub fn scalar(&self, v: Var) -> Option<f64> {
        let t = self.value(v)?;
        if t.numel() != 1 {
            return None;
        }
        match t.is_host() {
            true => t.data().get_f64(0),
            false => t.to_host().ok()?.data().get_f64(0),
        }
    }
}

/// Gradients of one backward pass, by variable.
#[derive(Debug, Default)]
pub struct Grads {
    grads: Vec<Option<Tensor>>,
}

impl Grads {
    /// The gradient of a variable (parameters and, where asked, inputs).
    pub fn get(&self, v: Var) -> Option<&Tensor> {
        self.grads.get(v.0).and_then(Option::as_ref)
    }
}

/// What differentiating through an op takes, from its declaration.
pub enum Rule {
    #[doc(hidden)]
    Vjp,
    #[doc(hidden)]
    Composite,
}

/// The reverse-mode rule of an op, or the typed reason gradients cannot flow through it.
pub fn reverse_rule(op: &RegisteredOp) -> Result<Rule, TapeError> {
    match &op.contract.backward {
        Backward::None => Err(TapeError::NotDifferentiable { op: op.id.clone() }),
        Backward::Composite { .. } => {
            op.decl.composite.map(|_| Rule::Composite).ok_or_else(|| TapeError::NoCompositeGraph { op: op.id.clone() })
        }
        Backward::Declared { .. } => op.shims.vjp.map(|_| Rule::Vjp).ok_or_else(|| TapeError::NoVjp { op: op.id.clone() }),
    }
}

/// Whether gradients can be asked of an op at all: the typed error for `backward = none`.
pub fn check_differentiable(decl: &'static OpDecl) -> Result<(), TapeError> {
    let op = RegisteredOp::load(decl).map_err(|e| TapeError::Shim { op: decl.rust_name.to_string(), message: e.to_string() })?;
    match op.contract.backward {
        Backward::None => Err(TapeError::NotDifferentiable { op: op.id }),
        _ => Ok(()),
    }
}

#[doc(hidden)]
pub fn shim_err(op: &RegisteredOp) -> impl Fn(String) -> TapeError + '_ {
    move |message| TapeError::Shim { op: op.id.clone(), message }
}

/// `acc += g` elementwise (float storage).
pub fn accumulate(op: &str, acc: &mut Tensor, g: &Tensor) -> Result<(), TapeError> {
    let bad = || TapeError::GradDType { op: op.to_string(), dtype: g.dtype() };
    if acc.shape() != g.shape() {
        return Err(TapeError::Shim {
            op: op.to_string(),
            message: format!("gradient of shape {:?} for a value of shape {:?}", g.shape(), acc.shape()),
        });
    }
    match g.data() {
        Data::F32(gv) => acc.as_mut_slice::<f32>().ok_or_else(bad)?.iter_mut().zip(gv).for_each(|(a, b)| *a += *b),
        Data::F64(gv) => acc.as_mut_slice::<f64>().ok_or_else(bad)?.iter_mut().zip(gv).for_each(|(a, b)| *a += *b),
        _ => return Err(bad()),
    }
    Ok(())
}

impl Tape {
    /// An empty tape over the process-wide registry (`op_runtime::registry()`, holding the
    /// built-ins), running through dispatch.
    pub fn new() -> Tape {
        Tape::with_registry(op_core::registry::defaults::registry())
    }

    /// An empty tape over a registry, running through dispatch.
    pub fn with_registry(registry: &Registry) -> Tape {
        Tape::with_mode(registry, Mode::Dispatch)
    }

    /// An empty tape in a given execution mode.
    pub fn with_mode(registry: &Registry, mode: Mode) -> Tape {
        Tape {
            registry: registry.clone(),
            mode,
            options: CallOptions::default(),
            budget: None,
            vars: Vec::new(),
            nodes: Vec::new(),
            depth: 0,
            graph_outputs: Vec::new(),
            receipts: Arc::new(Vec::new()),
            device: None,
        }
    }

    /// The registry ops are looked up in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
    /// The execution mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// Per-call options for every dispatched call (e.g. a forced backend).
    pub fn set_call_options(&mut self, o: CallOptions) {
        self.options = o;
    }
    /// Presents conformance receipts: every provenance entry whose op content, backend and
    /// device a receipt covers (and whose digest verifies) records that receipt's digest.
    pub fn present_receipts(&mut self, receipts: impl IntoIterator<Item = Receipt>) {
        let mut v: Vec<Receipt> = self.receipts.as_ref().clone();
        v.extend(receipts.into_iter().filter(|r| r.compute_digest() == r.digest));
        self.receipts = Arc::new(v);
    }

    fn attach_receipt(&self, e: &mut ProvenanceEntry) {
        let hash = op_contract::identity::hex(&e.content_hash);
        if let Some(r) =
            self.receipts.iter().find(|r| r.content_hash == hash && r.backend == e.backend && r.device == *e.device && *r.op == *e.op)
        {
            e.receipt = Some(r.digest.clone());
        }
    }

    /// The memory budget for intermediates (bytes); `run` refuses a plan above it.
    pub fn set_budget(&mut self, bytes: Option<usize>) {
        self.budget = bytes;
    }
    /// The shape of a value.
    pub fn shape(&self, v: Var) -> Option<&[usize]> {
        self.vars.get(v.0).map(|i| i.shape.as_slice())
    }
    /// The dtype of a value.
    pub fn dtype(&self, v: Var) -> Option<DType> {
        self.vars.get(v.0).map(|i| i.dtype)
    }
    /// Number of recorded ops.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
    /// Whether no op is recorded.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
    /// The ops recorded, in order (`name@version`).
    pub fn ops(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.op.id.clone()).collect()
    }

    fn push_var(&mut self, name: String, dtype: DType, shape: Vec<usize>, kind: Kind) -> Var {
        self.vars.push(VarInfo { name, dtype, shape, kind });
        Var(self.vars.len() - 1)
    }

    /// A placeholder fed at `run`. Float dtypes are given as declared; the tape's mode decides
    /// the dtype they run at (f64 for `Mode::ReferenceF64`).
    pub fn input(&mut self, name: &str, dtype: DType, shape: impl Into<Vec<usize>>) -> Var {
        let dtype = planner::run_dtype(dtype, self.mode.float_as());
        self.push_var(name.to_string(), dtype, shape.into(), Kind::Input)
    }

    /// A trainable parameter (a float tensor owned by the tape, updated by an optimiser, see `train::optim`).
    pub fn param(&mut self, name: &str, value: Tensor) -> Result<Var, TapeError> {
        if !value.is_host() {
            return Err(TapeError::Placement { name: name.to_string(), placement: value.placement().to_string() });
        }
        if !value.dtype().is_float() {
            return Err(TapeError::NotFloatParam { name: name.to_string(), dtype: value.dtype() });
        }
        let (dtype, shape) = (value.dtype(), value.shape().to_vec());
        Ok(self.push_var(name.to_string(), dtype, shape, Kind::Param(value)))
    }

    /// The current value of a parameter.
    pub fn param_value(&self, v: Var) -> Option<&Tensor> {
        match &self.vars.get(v.0)?.kind {
            Kind::Param(t) => Some(t),
            _ => None,
        }
    }

    /// Records `name` (looked up in the tape's registry) applied to values.
    pub fn call(&mut self, name: &str, inputs: &[Var], params: &[Scalar]) -> Result<Vec<Var>, TapeError> {
        let h = self.registry.lookup(name)?;
        self.apply(&h, inputs, params)
    }

    /// `call` for a single-output op.
    pub fn call1(&mut self, name: &str, inputs: &[Var], params: &[Scalar]) -> Result<Var, TapeError> {
        let h = self.registry.lookup(name)?;
        self.apply1(&h, inputs, params)
    }

    /// `apply` for a single-output op (its first output).
    pub fn apply1(&mut self, op: &OpHandle, inputs: &[Var], params: &[Scalar]) -> Result<Var, TapeError> {
        let outs = self.apply(op, inputs, params)?;
        outs.first().copied().ok_or_else(|| TapeError::Shim { op: op.id(), message: "the op has no output".into() })
    }

    /// Records an op applied to values. Shapes are validated and inferred now, from the static
    /// signature; nothing runs. A composite op's graph is recorded too, for planning and backward.
    pub fn apply(&mut self, handle: &OpHandle, inputs: &[Var], params: &[Scalar]) -> Result<Vec<Var>, TapeError> {
        let op = handle.op();
        let mut shapes: Vec<(DType, &[usize])> = Vec::with_capacity(inputs.len());
        for v in inputs {
            let i = self.vars.get(v.0).ok_or(TapeError::UnknownVar { op: op.id.clone(), var: *v })?;
            shapes.push((i.dtype, &i.shape));
        }
        // An op with dtype variables plans as the instance its inputs bind (the run's dtypes in
        // dispatch mode; f64 in reference mode).
        let dtypes: Vec<DType> = shapes.iter().map(|(d, _)| self.mode.float_as().filter(|_| d.is_float()).unwrap_or(*d)).collect();
        let op = match op.member_for_dtypes(&dtypes, params)? {
            Some(m) => m.clone(),
            None => op,
        };
        let params = exec::convert_params(&op, params, self.mode);
        let inferred = planner::infer(&op, &shapes, &params, self.mode.float_as())?;
        let sub = match (&op.contract.backward, op.decl.composite) {
            (Backward::Composite { .. }, Some(builder)) => Some(Box::new(self.record_composite(&op, builder, inputs, &params, &inferred)?)),
            _ => None,
        };
        let node = self.nodes.len();
        let mut outputs = Vec::with_capacity(inferred.outputs.len());
        for (k, ((dtype, shape), name)) in inferred.outputs.into_iter().zip(&op.plan.out_names).enumerate() {
            outputs.push(self.push_var(format!("{}.{name}", op.contract.name), dtype, shape, Kind::Output { node, k }));
        }
        self.nodes.push(Node { handle: handle.clone(), op, inputs: inputs.to_vec(), params, outputs: outputs.clone(), sub });
        Ok(outputs)
    }

    /// Records a composite op's graph on a fresh tape whose inputs have this call's shapes.
    fn record_composite(
        &self,
        op: &RegisteredOp,
        builder: op_core::decl::CompositeFn,
        inputs: &[Var],
        params: &[Scalar],
        inferred: &Inferred,
    ) -> Result<Tape, TapeError> {
        let ins: Vec<(DType, Vec<usize>)> = inputs.iter().map(|v| (self.vars[v.0].dtype, self.vars[v.0].shape.clone())).collect();
        let mut sub = Tape::with_mode(&self.registry, self.mode);
        sub.options = self.options;
        sub.device = self.device;
        sub.depth = self.depth + 1;
        sub.receipts = self.receipts.clone();
        sub.record_graph(op, builder, &ins, params, inferred)?;
        Ok(sub)
    }

    /// On an empty tape: records `op`'s composite graph over inputs of the given dtypes and
    /// shapes, checking that it yields the op's outputs.
    pub fn record_graph(
        &mut self,
        op: &RegisteredOp,
        builder: op_core::decl::CompositeFn,
        ins: &[(DType, Vec<usize>)],
        params: &[Scalar],
        inferred: &Inferred,
    ) -> Result<(), TapeError> {
        if self.depth > MAX_DEPTH {
            return Err(TapeError::CompositeTooDeep { op: op.id.clone(), depth: MAX_DEPTH });
        }
        let names: Vec<&str> = op.contract.signature.inputs().map(|t| t.name.as_str()).collect();
        let sub_inputs: Vec<Var> =
            ins.iter().zip(&names).map(|((dtype, shape), n)| self.push_var(n.to_string(), *dtype, shape.clone(), Kind::Input)).collect();
        let outs = builder(self, &sub_inputs, params).map_err(|e| match e.0.downcast::<TapeError>() {
            Ok(e) => match *e {
                e @ (TapeError::CompositeTooDeep { .. } | TapeError::CompositeMismatch { .. }) => e,
                e => TapeError::CompositeMismatch { op: op.id.clone(), reason: format!("failed to record: {e}") },
            },
            Err(e) => TapeError::CompositeMismatch { op: op.id.clone(), reason: format!("failed to record: {e}") },
        })?;
        if outs.len() != inferred.outputs.len() {
            return Err(TapeError::CompositeMismatch {
                op: op.id.clone(),
                reason: format!("returns {} value(s), the op declares {} output(s)", outs.len(), inferred.outputs.len()),
            });
        }
        for (k, (v, (dtype, shape))) in outs.iter().zip(&inferred.outputs).enumerate() {
            let i = self.vars.get(v.0).ok_or(TapeError::UnknownVar { op: op.id.clone(), var: *v })?;
            if i.dtype != *dtype || &i.shape != shape {
                return Err(TapeError::CompositeMismatch {
                    op: op.id.clone(),
                    reason: format!("produces {}{:?} for output {k}, the signature gives {dtype}{shape:?}", i.dtype, i.shape),
                });
            }
        }
        self.graph_outputs = outs;
        Ok(())
    }

    /// Which values carry gradients when differentiating with respect to `wrt`: those and
    /// every float output of an op that consumes one through a differentiable input.
    fn requires(&self, wrt: &[bool]) -> Vec<bool> {
        let mut r = wrt.to_vec();
        r.resize(self.vars.len(), false);
        for n in &self.nodes {
            let on_path = exec::diff_positions(&n.op).iter().any(|&p| n.inputs.get(p).is_some_and(|v| r[v.0]));
            if on_path {
                for v in &n.outputs {
                    r[v.0] = self.vars[v.0].dtype.is_float();
                }
            }
        }
        r
    }

    fn param_mask(&self) -> Vec<bool> {
        self.vars.iter().map(|v| matches!(v.kind, Kind::Param(_))).collect()
    }

    fn input_mask(&self) -> Vec<bool> {
        self.vars.iter().map(|v| matches!(v.kind, Kind::Input) && v.dtype.is_float()).collect()
    }

    /// The memory plan: every op output (kept for backward), every gradient buffer of a
    /// backward pass to the parameters, and the intermediates of each composite graph that
    /// backward rematerialises. Computed from static shapes; nothing is allocated or run.
    pub fn plan(&self) -> MemoryPlan {
        let mut entries = Vec::new();
        self.plan_into("", &self.param_mask(), BufferKind::Forward, &mut entries);
        MemoryPlan::new(entries, self.budget)
    }

    fn plan_into(&self, prefix: &str, wrt: &[bool], fwd: BufferKind, out: &mut Vec<PlanEntry>) {
        let requires = self.requires(wrt);
        let entry = |v: Var, op: &RegisteredOp, output: &str, kind: BufferKind| {
            let i = &self.vars[v.0];
            PlanEntry {
                value: format!("{prefix}{v}"),
                op: op.id.clone(),
                output: output.to_string(),
                kind,
                dtype: i.dtype,
                shape: i.shape.clone(),
                bytes: planner::buffer_bytes(i.dtype, &i.shape),
            }
        };
        for n in &self.nodes {
            for (v, name) in n.outputs.iter().zip(&n.op.plan.out_names) {
                out.push(entry(*v, &n.op, name, fwd));
            }
            let on_path = exec::diff_positions(&n.op).iter().any(|&p| n.inputs.get(p).is_some_and(|v| requires[v.0]));
            if let (Some(sub), true) = (&n.sub, on_path) {
                let p = format!("{prefix}{}.", n.outputs.first().map(|v| v.to_string()).unwrap_or_default());
                sub.plan_into(&p, &sub.input_mask(), BufferKind::Composite, out);
            }
        }
        for (i, v) in self.vars.iter().enumerate() {
            if !requires[i] || !v.dtype.is_float() {
                continue;
            }
            let (op, output) = match &v.kind {
                Kind::Output { node, k } => {
                    (&self.nodes[*node].op, self.nodes[*node].op.plan.out_names.get(*k).cloned().unwrap_or_default())
                }
                Kind::Param(_) | Kind::Input => match self.nodes.iter().find(|n| n.inputs.contains(&Var(i))) {
                    Some(n) => (&n.op, format!("d/d {}", v.name)),
                    None => continue,
                },
                Kind::Const(..) => continue,
            };
            out.push(entry(Var(i), op, &output, BufferKind::Gradient));
        }
    }

    /// Plans, refuses a plan over budget (before anything is allocated), then runs forward. A
    /// device tensor fed is refused with `TapeError::Placement` unless it lives on the tape's
    /// device (`set_device`).
    pub fn run(&self, feeds: &[(Var, &Tensor)]) -> Result<Run, TapeError> {
        let plan = self.plan();
        if !plan.fits() {
            return Err(TapeError::OverBudget { budget: plan.budget.unwrap_or(0), total: plan.total_bytes, largest: plan.largest(3) });
        }
        if let Some((v, t)) = feeds.iter().find(|(_, t)| !self.feedable(t)) {
            let name = self.vars.get(v.0).map(|i| i.name.clone()).unwrap_or_else(|| v.to_string());
            return Err(TapeError::Placement { name, placement: t.placement().to_string() });
        }
        self.run_unplanned(feeds)
    }

    fn run_unplanned(&self, feeds: &[(Var, &Tensor)]) -> Result<Run, TapeError> {
        let mut values: Vec<Option<Tensor>> = vec![None; self.vars.len()];
        for (v, t) in feeds {
            let i = self.vars.get(v.0).ok_or(TapeError::UnknownVar { op: "-".into(), var: *v })?;
            let feed_err = |problem: String| TapeError::Feed { name: i.name.clone(), var: *v, problem };
            if !matches!(i.kind, Kind::Input) {
                return Err(feed_err("is not an input placeholder; only inputs are fed".into()));
            }
            if values[v.0].is_some() {
                return Err(feed_err("is fed twice".into()));
            }
            if t.dtype() != i.dtype || t.shape() != i.shape.as_slice() {
                return Err(feed_err(format!("was declared {}{:?}, fed {}{:?}", i.dtype, i.shape, t.dtype(), t.shape())));
            }
            values[v.0] = Some(device::place(self.device, &i.name, t)?);
        }
        for (k, i) in self.vars.iter().enumerate() {
            match &i.kind {
                Kind::Input if values[k].is_none() => {
                    return Err(TapeError::Feed { name: i.name.clone(), var: Var(k), problem: "was not fed".into() })
                }
                Kind::Param(t) | Kind::Const(t, _) => values[k] = Some(device::place(self.device, &i.name, t)?),
                _ => {}
            }
        }
        let mut provenance = ProvenanceRecord::default();
        self.constant_entries(&mut provenance.constants);
        let mut ops = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let ins: Vec<&Tensor> = n
                .inputs
                .iter()
                .map(|v| values[v.0].as_ref())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| TapeError::Shim { op: n.op.id.clone(), message: "an input has no value".into() })?;
            let (op, outs) = match self.mode {
                Mode::Dispatch => {
                    let op = n.handle.op();
                    let mut out = n.handle.call_with(&ins, &n.params, self.options)?;
                    self.attach_receipt(&mut out.provenance);
                    provenance.push(out.provenance);
                    (op, out.outputs)
                }
                Mode::ReferenceF64 => {
                    let op = n.op.clone();
                    let outs = exec::forward_f64(&op, &ins, &n.params).map_err(shim_err(&op))?;
                    // The device of record is the registry's reference backend; without one this
                    // is an error, never a made-up profile.
                    let device = self
                        .registry
                        .backend(BackendKind::Reference)
                        .ok_or_else(|| BackendError::Unavailable("this registry has no reference backend".into()))
                        .and_then(|b| b.profile())
                        .map_err(|reason| DispatchError::Unavailable { op: op.id.clone(), backend: BackendKind::Reference, reason })?;
                    let mut e = ProvenanceEntry::new(&op, BackendKind::Reference, device);
                    self.attach_receipt(&mut e);
                    provenance.push(e);
                    (op, outs)
                }
            };
            if outs.len() != n.outputs.len() {
                return Err(TapeError::Shim {
                    op: op.id.clone(),
                    message: format!("produced {} output(s), expected {}", outs.len(), n.outputs.len()),
                });
            }
            for (v, t) in n.outputs.iter().zip(outs) {
                let i = &self.vars[v.0];
                if t.dtype() != i.dtype || t.shape() != i.shape.as_slice() {
                    return Err(TapeError::Shim {
                        op: op.id.clone(),
                        message: format!("produced {}{:?} where the plan expects {}{:?}", t.dtype(), t.shape(), i.dtype, i.shape),
                    });
                }
                values[v.0] = Some(t);
            }
            ops.push(op);
        }
        Ok(Run { values, ops, provenance })
    }

    /// Backward from a single-element loss to every parameter, through the declared VJPs and
    /// composite graphs. Composite graphs rematerialised here add entries to `run.provenance`.
    pub fn backward(&self, run: &mut Run, loss: Var) -> Result<Grads, TapeError> {
        let i = self.vars.get(loss.0).ok_or(TapeError::UnknownVar { op: "-".into(), var: loss })?;
        let producer = match i.kind {
            Kind::Output { node, .. } => self.nodes[node].op.id.clone(),
            _ => i.name.clone(),
        };
        let seed = match i.dtype {
            DType::f32 if i.shape.iter().product::<usize>() == 1 => Tensor::from_vec(i.shape.clone(), vec![1.0f32]),
            DType::f64 if i.shape.iter().product::<usize>() == 1 => Tensor::from_vec(i.shape.clone(), vec![1.0f64]),
            _ => return Err(TapeError::NotScalarLoss { op: producer, var: loss, dtype: i.dtype, shape: i.shape.clone() }),
        }
        .map_err(|e| TapeError::Shim { op: producer.clone(), message: e.to_string() })?;
        let seed = device::place(self.device, "the loss's seed", &seed)?;
        let mut grads = self.gradients(run, vec![(loss, seed)], &self.param_mask())?;
        // Only the parameters' gradients cross back to the host.
        for (k, g) in grads.grads.iter_mut().enumerate() {
            if let Some(t) = g.as_mut().filter(|t| !t.is_host()) {
                *t = device::to_host(&self.vars[k].name, t)?;
            }
        }
        Ok(grads)
    }

    /// Reverse mode from arbitrary seeds (cotangents of some values) to the values `wrt` marks.
    pub fn gradients(&self, run: &mut Run, seeds: Vec<(Var, Tensor)>, wrt: &[bool]) -> Result<Grads, TapeError> {
        let requires = self.requires(wrt);
        let mut grads: Vec<Option<Tensor>> = vec![None; self.vars.len()];
        for (v, t) in seeds {
            match &mut grads[v.0] {
                Some(acc) => self.accumulate("-", acc, &t)?,
                slot => *slot = Some(t),
            }
        }
        for (ni, n) in self.nodes.iter().enumerate().rev() {
            if n.outputs.iter().all(|v| grads[v.0].is_none()) {
                continue;
            }
            let diff = exec::diff_positions(&n.op);
            if !diff.iter().any(|&p| n.inputs.get(p).is_some_and(|v| requires[v.0])) {
                continue;
            }
            let op = run.ops.get(ni).cloned().unwrap_or_else(|| n.op.clone());
            let rule = reverse_rule(&op)?;
            let mut cots = Vec::with_capacity(n.outputs.len());
            for v in &n.outputs {
                let i = &self.vars[v.0];
                cots.push(match grads[v.0].take() {
                    Some(g) => g,
                    None => {
                        let z = Tensor::zeros(i.dtype, i.shape.clone())
                            .map_err(|e| TapeError::Shim { op: op.id.clone(), message: e.to_string() })?;
                        device::place(self.device, &i.name, &z)?
                    }
                });
            }
            let cot_refs: Vec<&Tensor> = cots.iter().collect();
            let gs = {
                let ins: Vec<&Tensor> = n
                    .inputs
                    .iter()
                    .map(|v| run.values[v.0].as_ref())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| TapeError::Shim { op: op.id.clone(), message: "an input has no value".into() })?;
                match rule {
                    Rule::Vjp => self.vjp(n, &op, &ins, &cot_refs, &mut run.provenance)?,
                    Rule::Composite => {
                        let sub = n.sub.as_ref().ok_or_else(|| TapeError::NoCompositeGraph { op: op.id.clone() })?;
                        let (gs, prov) = sub.graph_vjp(&op, &ins, cots)?;
                        // (Its constants are in the record already: the forward run lists them.)
                        run.provenance.entries.extend(prov.entries);
                        gs
                    }
                }
            };
            if gs.len() != diff.len() {
                return Err(TapeError::Shim {
                    op: op.id.clone(),
                    message: format!("the backward returned {} gradient(s) for {} differentiable input(s)", gs.len(), diff.len()),
                });
            }
            for (&p, g) in diff.iter().zip(gs) {
                let v = n.inputs[p];
                if !requires[v.0] {
                    continue;
                }
                match &mut grads[v.0] {
                    Some(acc) => self.accumulate(&op.id, acc, &g)?,
                    slot => *slot = Some(g),
                }
            }
        }
        for (k, g) in grads.iter_mut().enumerate() {
            if !wrt.get(k).copied().unwrap_or(false) {
                *g = None;
            }
        }
        Ok(Grads { grads })
    }

    /// A composite graph's VJP: rematerialises the graph from the op's inputs, then runs it
    /// backward from the op's cotangents. One gradient per differentiable input.
    pub fn graph_vjp(
        &self,
        op: &RegisteredOp,
        inputs: &[&Tensor],
        cotangents: Vec<Tensor>,
    ) -> Result<(Vec<Tensor>, ProvenanceRecord), TapeError> {
        let feeds: Vec<(Var, &Tensor)> = inputs.iter().enumerate().map(|(k, t)| (Var(k), *t)).collect();
        let mut run = self.run_unplanned(&feeds)?;
        if cotangents.len() != self.graph_outputs.len() {
            return Err(TapeError::CompositeMismatch {
                op: op.id.clone(),
                reason: "has a different number of outputs than cotangents".into(),
            });
        }
        let seeds = self.graph_outputs.iter().copied().zip(cotangents).collect();
        let mut wrt = vec![false; self.vars.len()];
        let diff = exec::diff_positions(op);
        for &p in &diff {
            wrt[p] = true;
        }
        let grads = self.gradients(&mut run, seeds, &wrt)?;
        let mut out = Vec::with_capacity(diff.len());
        for &p in &diff {
            let i = &self.vars[p];
            out.push(match grads.get(Var(p)) {
                Some(g) => g.clone(),
                None => {
                    Tensor::zeros(i.dtype, i.shape.clone()).map_err(|e| TapeError::Shim { op: op.id.clone(), message: e.to_string() })?
                }
            });
        }
        Ok((out, run.provenance))
    }

    /// Every trainable parameter with its name and a mutable view of its value (optimisers
    /// update them in place).
    pub fn params_mut(&mut self) -> impl Iterator<Item = (Var, &str, &mut Tensor)> {
        self.vars.iter_mut().enumerate().filter_map(|(k, v)| match &mut v.kind {
            Kind::Param(p) => Some((Var(k), v.name.as_str(), p)),
            _ => None,
        })
    }
}

/// The tape records a composite op's graph: each call is recorded like any other, and each
/// constant held like a parameter that is never differentiated.
impl Graph for Tape {
    fn call(&mut self, name: &str, inputs: &[Var], params: &[Scalar]) -> Result<Vec<Var>, GraphError> {
        Tape::call(self, name, inputs, params).map_err(|e| GraphError(Box::new(e)))
    }

    fn constant(&mut self, name: &str, value: Tensor) -> Result<Var, GraphError> {
        Tape::constant(self, name, value).map_err(|e| GraphError(Box::new(e)))
    }

    fn shape_of(&self, v: Var) -> Option<Vec<usize>> {
        self.shape(v).map(<[usize]>::to_vec)
    }

    fn dtype_of(&self, v: Var) -> Option<DType> {
        self.dtype(v)
    }
}

impl Default for Tape {
    fn default() -> Self {
        Tape::new()
    }
}
