//! Forward mode: tangents pushed through a recorded pipeline from seeds on its inputs and
//! parameters, in recording order. Each op uses its declared JVP rules; an op that declares
//! only a VJP uses the VJP of its differentiable VJP op (linear in the cotangent, its gradient
//! with respect to the cotangent is the JVP); a composite op pushes through its graph. Anything
//! else is a typed error naming the op. On a device tape the tangents live on the device; the
//! rules run on the host (`higher`). It owns the forward sweep; it never runs reverse mode.

use super::{device, exec, Kind, Node, Run, Tape, TapeError, Var};
use op_contract::contract::Backward;
use op_core::op::RegisteredOp;
use op_core::provenance::ProvenanceRecord;
use op_core::tensor::Tensor;

/// Tangents of one forward-mode pass, by value: `J v` for every value the seeds reach.
#[derive(Debug, Default)]
pub struct Tangents {
    pub(super) tangents: Vec<Option<Tensor>>,
}

impl Tangents {
    /// The tangent of a value (`None` where no seed reaches it). On a device tape it lives on
    /// the device (`Tensor::to_host` reads it back).
    pub fn get(&self, v: Var) -> Option<&Tensor> {
        self.tangents.get(v.0).and_then(Option::as_ref)
    }
}

impl Tape {
    /// Forward mode through the values of `run`: seeds are tangents of inputs or parameters
    /// (float, the value's dtype and shape); returns the tangent `J v` of every value they
    /// reach, so every op they reach needs a forward rule (a gradient recorded with
    /// `record_grad` reaches VJP ops, which have none: third order). Composite graphs
    /// rematerialised here add entries to `run.provenance`.
    ///
    /// ```
    /// use op_runtime::{DType, Tape, Tensor};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut t = Tape::new();
    /// let x = t.input("x", DType::f64, [3]);
    /// let y = t.call1("builtin/tanh", &[x], &[])?;
    /// let s = t.call1("builtin/sum", &[y], &[])?;
    /// let xs = Tensor::vector(vec![0.1f64, -0.5, 2.0]);
    /// let mut run = t.run(&[(x, &xs)])?;
    /// let v = Tensor::vector(vec![1.0f64, 2.0, -1.0]);
    /// let tangents = t.jvp(&mut run, &[(x, &v)])?;
    /// let ds = tangents.get(s).and_then(|t| t.data().get_f64(0)).expect("a tangent");
    /// let exact: f64 = [0.1f64, -0.5, 2.0].iter().zip([1.0, 2.0, -1.0]).map(|(x, v)| v / x.cosh().powi(2)).sum();
    /// assert!((ds - exact).abs() < 1e-12);
    /// # Ok(())
    /// # }
    /// ```
    pub fn jvp(&self, run: &mut Run, seeds: &[(Var, &Tensor)]) -> Result<Tangents, TapeError> {
        let seeds = self.place_seeds(seeds)?;
        Ok(Tangents { tangents: self.push_tangents(run, seeds, None)? })
    }

    /// Which nodes `targets` depend on (`Some` mask for `push_tangents`).
    pub(super) fn needed_for(&self, targets: &[Var]) -> Vec<bool> {
        let mut value = vec![false; self.vars.len()];
        for v in targets {
            if let Some(s) = value.get_mut(v.0) {
                *s = true;
            }
        }
        let mut node = vec![false; self.nodes.len()];
        for (ni, n) in self.nodes.iter().enumerate().rev() {
            if n.outputs.iter().any(|v| value[v.0]) {
                node[ni] = true;
                for v in &n.inputs {
                    value[v.0] = true;
                }
            }
        }
        node
    }

    /// Seeds checked (an input or parameter of this tape, float, its dtype and shape, once
    /// each) and placed where the tape's values live.
    pub(super) fn place_seeds(&self, seeds: &[(Var, &Tensor)]) -> Result<Vec<(Var, Tensor)>, TapeError> {
        let mut out: Vec<(Var, Tensor)> = Vec::with_capacity(seeds.len());
        for (v, t) in seeds {
            let i = self.vars.get(v.0).ok_or(TapeError::UnknownVar { op: "-".into(), var: *v })?;
            let bad = |problem: String| TapeError::Feed { name: i.name.clone(), var: *v, problem };
            if !matches!(i.kind, Kind::Input | Kind::Param(_)) || !i.dtype.is_float() {
                return Err(bad("is not a float input or parameter, so it takes no tangent or direction".into()));
            }
            if t.dtype() != i.dtype || t.shape() != i.shape.as_slice() {
                return Err(bad(format!("is {}{:?}, given a direction of {}{:?}", i.dtype, i.shape, t.dtype(), t.shape())));
            }
            if out.iter().any(|(w, _)| w == v) {
                return Err(bad("is given two directions".into()));
            }
            if !self.feedable(t) {
                return Err(TapeError::Placement { name: i.name.clone(), placement: t.placement().to_string() });
            }
            out.push((*v, device::place(self.device, &i.name, t)?));
        }
        Ok(out)
    }

    /// Tangents of every value from placed seeds, in recording order (through the nodes `only`
    /// marks, where given).
    pub(super) fn push_tangents(
        &self,
        run: &mut Run,
        seeds: Vec<(Var, Tensor)>,
        only: Option<&[bool]>,
    ) -> Result<Vec<Option<Tensor>>, TapeError> {
        let mut tan: Vec<Option<Tensor>> = vec![None; self.vars.len()];
        for (v, t) in seeds {
            tan[v.0] = Some(t);
        }
        for (ni, n) in self.nodes.iter().enumerate() {
            let diff = exec::diff_positions(&n.op);
            let tin: Vec<Option<&Tensor>> = diff.iter().map(|&p| n.inputs.get(p).and_then(|v| tan[v.0].as_ref())).collect();
            if tin.iter().all(Option::is_none) || only.is_some_and(|m| !m[ni]) {
                continue;
            }
            let op = run.ops.get(ni).cloned().unwrap_or_else(|| n.op.clone());
            let ins: Vec<&Tensor> = n
                .inputs
                .iter()
                .map(|v| run.values[v.0].as_ref())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| TapeError::Shim { op: op.id.clone(), message: "an input has no value".into() })?;
            let outs = self.node_jvp(n, &op, &ins, &tin, &mut run.provenance)?;
            for (v, t) in n.outputs.iter().zip(outs) {
                tan[v.0] = t.filter(|_| self.vars[v.0].dtype.is_float());
            }
        }
        Ok(tan)
    }

    /// One tangent per output of node `n` from its inputs' tangents (one per differentiable
    /// input, `None` for zero).
    fn node_jvp(
        &self,
        n: &Node,
        op: &RegisteredOp,
        ins: &[&Tensor],
        tin: &[Option<&Tensor>],
        provenance: &mut ProvenanceRecord,
    ) -> Result<Vec<Option<Tensor>>, TapeError> {
        let some = |v: Vec<Tensor>| v.into_iter().map(Some).collect();
        match &op.contract.backward {
            Backward::None => Err(TapeError::NotDifferentiable { op: op.id.clone() }),
            Backward::Composite { .. } => {
                let sub = n.sub.as_ref().ok_or_else(|| TapeError::NoCompositeGraph { op: op.id.clone() })?;
                sub.graph_jvp(op, ins, tin, provenance)
            }
            Backward::Declared { jvp, .. } if !jvp.is_empty() => Ok(some(self.jvp_rules(n, op, ins, tin)?)),
            Backward::Declared { .. } => Ok(self.jvp_through_vjp_op(n, op, ins, tin, provenance)?),
        }
    }

    /// `J c` from the VJP of the op's differentiable VJP op at a zero cotangent.
    fn jvp_through_vjp_op(
        &self,
        n: &Node,
        op: &RegisteredOp,
        ins: &[&Tensor],
        tin: &[Option<&Tensor>],
        provenance: &mut ProvenanceRecord,
    ) -> Result<Vec<Option<Tensor>>, TapeError> {
        let g = n.outputs.iter().map(|v| self.zeros_of(v)).collect::<Result<Vec<_>, _>>()?;
        let c = self.dense(&n.inputs, &exec::diff_positions(op), tin)?;
        let (grefs, crefs): (Vec<&Tensor>, Vec<&Tensor>) = (g.iter().collect(), c.iter().collect());
        let (_, jvp) = self.vjp_of_vjp(n, op, ins, &grefs, &crefs, provenance).map_err(|e| match e {
            TapeError::NoSecondOrder { op, reason } => TapeError::NoForwardRule {
                op,
                reason: format!("it declares no JVP rule (`+ jvp(...)`), and for the VJP-of-VJP route {reason}"),
            },
            e => e,
        })?;
        let mut jvp = jvp.into_iter();
        Ok(n.outputs.iter().map(|v| if self.vars[v.0].dtype.is_float() { jvp.next() } else { None }).collect())
    }

    /// Zeros shaped like value `v`, where the tape's values live.
    pub(super) fn zeros_of(&self, v: &Var) -> Result<Tensor, TapeError> {
        let i = &self.vars[v.0];
        self.zeros_here(&i.name, i.dtype, &i.shape)
    }

    /// One tensor per differentiable input (positions `diff` of `inputs`): the given one, or
    /// zeros.
    pub(super) fn dense(&self, inputs: &[Var], diff: &[usize], given: &[Option<&Tensor>]) -> Result<Vec<Tensor>, TapeError> {
        diff.iter()
            .zip(given)
            .map(|(&p, t)| match t {
                Some(t) => Ok((*t).clone()),
                None => self.zeros_of(&inputs[p]),
            })
            .collect()
    }

    /// A composite op's JVP: its graph rematerialised from the op's inputs, tangents pushed
    /// through it from the differentiable inputs' tangents.
    fn graph_jvp(
        &self,
        op: &RegisteredOp,
        ins: &[&Tensor],
        tin: &[Option<&Tensor>],
        provenance: &mut ProvenanceRecord,
    ) -> Result<Vec<Option<Tensor>>, TapeError> {
        let feeds: Vec<(Var, &Tensor)> = ins.iter().enumerate().map(|(k, t)| (Var(k), *t)).collect();
        let mut run = self.run_unplanned(&feeds)?;
        let seeds = exec::diff_positions(op).into_iter().zip(tin).filter_map(|(p, t)| t.map(|t| (Var(p), t.clone()))).collect();
        let tan = self.push_tangents(&mut run, seeds, None)?;
        provenance.entries.extend(run.provenance.entries);
        Ok(self.graph_outputs.iter().map(|v| tan[v.0].clone()).collect())
    }
}
