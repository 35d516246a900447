//! `BurnOp`: a registered op with its scalar parameters, applied to burn tensors. The forward
//! runs at the call through the registry (so every refusal is a typed error there); under
//! autodiff the call registers a backward step in burn's graph that runs the tape's pullback.

use crate::convert::{self, AdTensor, Input, Site};
use crate::error::{Error, MAX_INPUTS};
use crate::shared::{Log, Shared};
use burn_autodiff::checkpoint::base::Checkpointer;
use burn_autodiff::checkpoint::strategy::NoCheckpointing;
use burn_autodiff::grads::Gradients;
use burn_autodiff::ops::{Backward, Ops, OpsKind};
use burn_backend::TensorMetadata;
use burn_dispatch::DispatchTensor;
use burn_ndarray::{NdArray, NdArrayTensor};
use burn_tensor::Tensor as BTensor;
use op_runtime::contract::Backward as Declared;
use op_runtime::provenance::{ProvenanceEntry, ProvenanceRecord};
use op_runtime::{CallOptions, OpDecl, OpHandle, Scalar, Tensor};
use std::sync::{Arc, Mutex};

/// A registered op with its scalar parameters, applied to burn tensors on burn's `NdArray`
/// backend (`f32` and `f64`), with or without autodiff.
///
/// [`BurnOp::apply`] runs the forward at once through the op's registry; where an input is an
/// autodiff tensor it records a step in burn's graph whose backward runs the op's declared
/// backward as this project's tape does ([`op_runtime::Tape::pullback`]: the VJP op where its
/// backward declares VJP kernels, else its VJP rule, else its composite graph), so burn's
/// gradient equals the tape's. [`BurnOp::call`] runs an op of any arity and any number of
/// outputs, without gradients.
#[derive(Clone)]
pub struct BurnOp {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for BurnOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BurnOp({}, {:?})", self.shared.name, self.shared.params)
    }
}

impl BurnOp {
    /// The op behind `handle`, called with `params` (its scalar parameters in signature order).
    pub fn new(handle: &OpHandle, params: &[Scalar]) -> BurnOp {
        let shared = Shared {
            handle: handle.clone(),
            params: params.to_vec(),
            options: CallOptions::default(),
            name: handle.id().to_string(),
            log: Mutex::new(Log::default()),
        };
        BurnOp { shared: Arc::new(shared) }
    }

    /// Registers `decl` in the process-wide registry ([`op_runtime::register`]) and adapts it.
    pub fn register(decl: &'static OpDecl, params: &[Scalar]) -> Result<BurnOp, Error> {
        Ok(BurnOp::new(&op_runtime::register(decl)?, params))
    }

    /// As [`BurnOp::register`], after the project's gradcheck ([`op_runtime::gradcheck`]) of
    /// the op's declared backward against central differences: a backward that disagrees is
    /// [`Error::Gradcheck`], never handed to burn's autodiff. An op declared `backward = none`
    /// passes (it is refused at `apply` when a tracked tensor reaches it).
    pub fn register_checked(decl: &'static OpDecl, params: &[Scalar]) -> Result<BurnOp, Error> {
        match op_runtime::gradcheck(decl) {
            Ok(_) | Err(op_runtime::gradcheck::GradcheckError::NotDifferentiable { .. }) => BurnOp::register(decl, params),
            Err(e) => Err(e.into()),
        }
    }

    /// The same op with per-call options (e.g. a backend) for its forward and backward calls.
    pub fn with_options(&self, options: CallOptions) -> BurnOp {
        let s = &self.shared;
        let shared =
            Shared { handle: s.handle.clone(), params: s.params.clone(), options, name: s.name.clone(), log: Mutex::new(Log::default()) };
        BurnOp { shared: Arc::new(shared) }
    }

    /// Keeps (`true`) or stops keeping every provenance entry of this op's calls, forward and
    /// backward, for [`BurnOp::take_record`]; off by default (the last call's are always kept).
    pub fn recording(&self, on: bool) {
        let mut log = self.shared.log();
        match on {
            true if log.all.is_none() => log.all = Some(ProvenanceRecord::default()),
            true => {}
            false => log.all = None,
        }
    }

    /// The op's `name@version`.
    pub fn name(&self) -> &str {
        &self.shared.name
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

    /// The typed error of the last failed backward step, taken. burn's `backward` returns no
    /// error: a step that fails registers no gradient for the op's inputs, and this gives why.
    /// (It cannot fail for a call `apply` accepted unless the op's VJP op fails to dispatch.)
    pub fn take_error(&self) -> Option<Error> {
        self.shared.log().error.take()
    }

    /// The op's number of tensor inputs and of outputs.
    fn arity(&self) -> (usize, usize) {
        let op = self.shared.handle.op();
        (op.contract().signature.inputs().count(), op.contract().signature.outputs.len())
    }

    fn input_name(&self, k: usize) -> String {
        match self.shared.handle.op().contract().signature.inputs().nth(k) {
            Some(s) => format!("input `{}`", s.name),
            None => format!("input {k}"),
        }
    }

    /// The op applied to `inputs` (one per tensor input, in signature order, all of rank `D`),
    /// giving its one output as a burn tensor of rank `E` (a scalar output is a one-element
    /// rank-1 tensor). Where an input is an autodiff tensor, burn's `backward` flows through the
    /// op's declared backward. Every refusal is a typed error here, before burn's graph changes:
    /// dtype, backend, arity, the contract's ranks, shapes and parameter constraints (through
    /// dispatch), and a non-differentiable op given a tracked tensor.
    pub fn apply<const D: usize, const E: usize>(&self, inputs: &[BTensor<D>]) -> Result<BTensor<E>, Error> {
        let out = self.apply_dispatch(inputs.iter().map(|t| t.clone().into_dispatch()).collect())?;
        let shape = out.shape().to_vec();
        if shape.len() != E {
            return Err(Error::Rank { op: self.shared.name.clone(), what: "output 0".into(), expected: E, shape });
        }
        Ok(BTensor::from_dispatch(out))
    }

    /// [`BurnOp::apply`] on burn's dispatch tensors (`Tensor::into_dispatch`), for inputs of
    /// different ranks; wrap the output with `Tensor::from_dispatch`.
    pub fn apply_dispatch(&self, inputs: Vec<DispatchTensor>) -> Result<DispatchTensor, Error> {
        let (n_in, n_out) = self.arity();
        let op = self.shared.name.as_str();
        if !(1..=MAX_INPUTS).contains(&n_in) || n_out != 1 {
            return Err(Error::NoCustomOp { op: op.to_string(), inputs: n_in, outputs: n_out });
        }
        let ins = self.sorted(inputs, n_in)?;
        // The forward, through the registry.
        let mut tensors = Vec::with_capacity(ins.len());
        for (k, t) in ins.iter().enumerate() {
            tensors.push(convert::to_runtime(&Site { op, what: &self.input_name(k) }, t.primitive(), None)?);
        }
        let out = {
            let refs: Vec<&Tensor> = tensors.iter().collect();
            self.shared.dispatch(&refs)?.into_iter().next().ok_or(Error::NoCustomOp { op: op.to_string(), inputs: n_in, outputs: 0 })?
        };
        let out_shape = out.shape().to_vec();
        let output = convert::from_runtime(&Site { op, what: "output 0" }, out, convert::burn_shape(&out_shape))?;
        // No autodiff input: a plain tensor.
        let strategy = ins.iter().find_map(|i| match i {
            Input::Autodiff(_, s) => Some(*s),
            Input::Plain(_) => None,
        });
        let Some(strategy) = strategy else {
            return Ok(convert::plain(output));
        };
        let state = State { shared: self.shared.clone(), inputs: tensors, out_shape };
        let ads: Vec<AdTensor> = ins
            .into_iter()
            .map(|i| match i {
                Input::Autodiff(a, _) => a,
                // A plain input next to an autodiff one is a constant of the op.
                Input::Plain(p) => AdTensor::new(p),
            })
            .collect();
        let out = match ads.len() {
            1 => record::<1>(ads, state, output),
            2 => record::<2>(ads, state, output),
            3 => record::<3>(ads, state, output),
            4 => record::<4>(ads, state, output),
            5 => record::<5>(ads, state, output),
            6 => record::<6>(ads, state, output),
            n => return Err(Error::NoCustomOp { op: op.to_string(), inputs: n, outputs: 1 }),
        }?;
        Ok(convert::autodiff(out, strategy))
    }

    /// The op called on `inputs` through the registry, every output returned as a plain
    /// `NdArray` dispatch tensor (a scalar as a one-element rank-1 tensor): the route for ops
    /// `apply` cannot record (several outputs, more than [`MAX_INPUTS`] inputs, none). The
    /// outputs are new constants: burn's `backward` does not flow through them.
    pub fn call(&self, inputs: Vec<DispatchTensor>) -> Result<Vec<DispatchTensor>, Error> {
        let (n_in, _) = self.arity();
        let op = self.shared.name.as_str();
        let ins = self.sorted(inputs, n_in)?;
        let mut tensors = Vec::with_capacity(ins.len());
        for (k, t) in ins.iter().enumerate() {
            tensors.push(convert::to_runtime(&Site { op, what: &self.input_name(k) }, t.primitive(), None)?);
        }
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let outs = self.shared.dispatch(&refs)?;
        let mut got = Vec::with_capacity(outs.len());
        for (k, t) in outs.into_iter().enumerate() {
            let shape = convert::burn_shape(t.shape());
            got.push(convert::plain(convert::from_runtime(&Site { op, what: &format!("output {k}") }, t, shape)?));
        }
        Ok(got)
    }

    /// The inputs sorted into what the adapter serves, after the count.
    fn sorted(&self, inputs: Vec<DispatchTensor>, expected: usize) -> Result<Vec<Input>, Error> {
        let op = self.shared.name.as_str();
        if inputs.len() != expected {
            return Err(Error::Arity { op: op.to_string(), expected, given: inputs.len() });
        }
        inputs.into_iter().enumerate().map(|(k, t)| convert::sort(&Site { op, what: &self.input_name(k) }, t)).collect()
    }
}

/// What the backward step keeps: the op, its inputs as the forward read them, and the shape
/// of its output on the runtime side (a scalar's cotangent arrives as burn's `[1]`).
#[derive(Clone, Debug)]
struct State {
    shared: Arc<Shared>,
    inputs: Vec<Tensor>,
    out_shape: Vec<usize>,
}

/// The backward step of one call: the tape's pullback.
#[derive(Debug)]
struct Step;

/// Registers the call's step in burn's graph (compute bound: burn keeps the output and never
/// recomputes the forward) and returns the autodiff output. A tracked call of an op declared
/// `backward = none` is refused here, before the graph changes.
fn record<const N: usize>(inputs: Vec<AdTensor>, state: State, output: NdArrayTensor) -> Result<AdTensor, Error> {
    let guards: [_; N] = match inputs.iter().map(|t| t.node()).collect::<Vec<_>>().try_into() {
        Ok(g) => g,
        Err(g) => return Err(Error::Arity { op: state.shared.name.clone(), expected: N, given: g.len() }),
    };
    match Step.prepare::<NoCheckpointing>(guards).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            if let Declared::None = state.shared.handle.op().contract().backward {
                let op = state.shared.name.clone();
                return Err(op_runtime::train::TapeError::NotDifferentiable { op }.into());
            }
            Ok(prep.finish(state, output))
        }
        OpsKind::UnTracked(prep) => Ok(prep.finish(output)),
    }
}

impl<const N: usize> Backward<NdArray, N> for Step {
    type State = State;

    fn backward(self, ops: Ops<State, N>, grads: &mut Gradients, _: &mut Checkpointer) {
        let cot = grads.consume::<NdArray>(&ops.node);
        let State { shared, inputs, out_shape } = ops.state;
        let op = shared.name.as_str();
        let got = (|| {
            let cot = convert::to_runtime(&Site { op, what: "the cotangent of output 0" }, &cot, Some(&out_shape))?;
            let shapes: Vec<Vec<usize>> = inputs.iter().map(|t| t.shape().to_vec()).collect();
            let gs = shared.pullback(inputs, cot)?;
            let mut out = Vec::with_capacity(gs.len());
            for (k, (g, shape)) in gs.into_iter().zip(shapes).enumerate() {
                let what = format!("the gradient of input {k}");
                out.push(g.map(|g| convert::from_runtime(&Site { op, what: &what }, g, shape)).transpose()?);
            }
            Ok::<_, Error>(out)
        })();
        match got {
            Ok(gs) => {
                for (parent, g) in ops.parents.into_iter().zip(gs) {
                    if let (Some(node), Some(g)) = (parent, g) {
                        grads.register::<NdArray>(node.id, g);
                    }
                }
            }
            // burn's backward has no error path: the inputs get no gradient from this step
            // and `BurnOp::take_error` gives why.
            Err(e) => shared.log().error = Some(e),
        }
    }
}
