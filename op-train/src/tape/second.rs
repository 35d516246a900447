//! Gradients with respect to chosen values (`Tape::grad`) and second order: Hessian-vector
//! products, forward over reverse. Tangents `x'` go forward from the direction (`forward`);
//! then, backward from the loss, every node carries its cotangent `g` and that cotangent's
//! tangent `g'`, and passes to its inputs `J^T g` and `J^T g' + d/dx <J(x)^T g, x'>`, the last
//! term the VJP of the op's differentiable VJP op (`higher`), a composite op's through its
//! graph. It owns the second-order sweep; first-order rules are the tape's.

use super::{device, exec, reverse_rule, Grads, Kind, Node, Rule, Run, Tape, TapeError, Var};
use op_core::op::RegisteredOp;
use op_core::provenance::ProvenanceRecord;
use op_core::tensor::Tensor;

/// A Hessian-vector product `H v` of a loss and the gradient it was taken at, by value.
#[derive(Debug)]
pub struct Hvp {
    grads: Grads,
    hvp: Grads,
}

impl Hvp {
    /// The gradient of the loss with respect to a value the direction was given for.
    pub fn grad(&self, v: Var) -> Option<&Tensor> {
        self.grads.get(v)
    }
    /// `H v` for a value the direction was given for (the derivative of its gradient along the
    /// direction).
    pub fn hvp(&self, v: Var) -> Option<&Tensor> {
        self.hvp.get(v)
    }
}

/// A cotangent and its tangent, per value.
type Pair = (Vec<Option<Tensor>>, Vec<Option<Tensor>>);

impl Tape {
    /// The gradients of a single-element loss with respect to `wrt` (float inputs or
    /// parameters), read back to the host. `backward` is this for every parameter.
    pub fn grad(&self, run: &mut Run, loss: Var, wrt: &[Var]) -> Result<Grads, TapeError> {
        let mask = self.wrt_mask(wrt)?;
        let seed = self.loss_seed(loss)?;
        let mut grads = self.gradients(run, vec![(loss, seed)], &mask)?;
        self.grads_to_host(&mut grads.grads)?;
        Ok(grads)
    }

    /// The Hessian-vector product `H v` of a single-element loss, `v` given per input or
    /// parameter (the values `H` differentiates with respect to; the others are constants),
    /// with the gradient at the same point. Every op on the path needs a second derivative: a
    /// differentiable VJP op (every built-in has one; `Registry::register_vjp_op` for a user
    /// op) or a composite graph of such ops. Results are read back to the host.
    pub fn hvp(&self, run: &mut Run, loss: Var, v: &[(Var, &Tensor)]) -> Result<Hvp, TapeError> {
        let wrt: Vec<Var> = v.iter().map(|(w, _)| *w).collect();
        let mask = self.wrt_mask(&wrt)?;
        let seeds = self.place_seeds(v)?;
        // Tangents only where the loss needs them (a tape may hold values beyond it, such as a
        // recorded gradient, whose ops need not have forward rules).
        let tan = self.push_tangents(run, seeds, Some(&self.needed_for(&[loss])))?;
        let seed = self.loss_seed(loss)?;
        let (mut g, mut gdot) = self.second_pass(run, &tan, vec![(loss, seed)], Vec::new(), &mask)?;
        for slots in [&mut g, &mut gdot] {
            for (k, s) in slots.iter_mut().enumerate() {
                if !mask[k] {
                    *s = None;
                }
            }
            self.grads_to_host(slots)?;
        }
        Ok(Hvp { grads: Grads { grads: g }, hvp: Grads { grads: gdot } })
    }

    /// The mask of `wrt`: each a float input or parameter of this tape.
    pub(super) fn wrt_mask(&self, wrt: &[Var]) -> Result<Vec<bool>, TapeError> {
        let mut mask = vec![false; self.vars.len()];
        for v in wrt {
            let i = self.vars.get(v.0).ok_or(TapeError::UnknownVar { op: "-".into(), var: *v })?;
            if !matches!(i.kind, Kind::Input | Kind::Param(_)) || !i.dtype.is_float() {
                let problem = "is not a float input or parameter, so there is no gradient with respect to it".into();
                return Err(TapeError::Feed { name: i.name.clone(), var: *v, problem });
            }
            mask[v.0] = true;
        }
        Ok(mask)
    }

    /// The seed 1 of a single-element float loss, where the tape's values live.
    fn loss_seed(&self, loss: Var) -> Result<Tensor, TapeError> {
        let i = self.vars.get(loss.0).ok_or(TapeError::UnknownVar { op: "-".into(), var: loss })?;
        let producer = match i.kind {
            Kind::Output { node, .. } => self.nodes[node].op.id.clone(),
            _ => i.name.clone(),
        };
        if !i.dtype.is_float() || i.shape.iter().product::<usize>() != 1 {
            return Err(TapeError::NotScalarLoss { op: producer, var: loss, dtype: i.dtype, shape: i.shape.clone() });
        }
        let one =
            Tensor::from_f64(i.dtype, i.shape.clone(), &[1.0]).map_err(|e| TapeError::Shim { op: producer, message: e.to_string() })?;
        device::place(self.device, "the loss's seed", &one)
    }

    fn grads_to_host(&self, slots: &mut [Option<Tensor>]) -> Result<(), TapeError> {
        for (k, g) in slots.iter_mut().enumerate() {
            if let Some(t) = g.as_mut().filter(|t| !t.is_host()) {
                *t = device::to_host(&self.vars[k].name, t)?;
            }
        }
        Ok(())
    }

    /// Reverse mode carrying tangents: cotangents `g` from `seeds` and their tangents `g'` from
    /// `dseeds`, given the tangents `tan` of the forward values. Returns `(g, g')` per value
    /// (every value on the path; the caller keeps those it asked for).
    fn second_pass(
        &self,
        run: &mut Run,
        tan: &[Option<Tensor>],
        seeds: Vec<(Var, Tensor)>,
        dseeds: Vec<(Var, Tensor)>,
        wrt: &[bool],
    ) -> Result<Pair, TapeError> {
        let requires = self.requires(wrt);
        let (mut g, mut gdot): Pair = (vec![None; self.vars.len()], vec![None; self.vars.len()]);
        for (slots, seeds) in [(&mut g, seeds), (&mut gdot, dseeds)] {
            for (v, t) in seeds {
                self.add_into("-", &mut slots[v.0], t)?;
            }
        }
        for (ni, n) in self.nodes.iter().enumerate().rev() {
            let diff = exec::diff_positions(&n.op);
            if !diff.iter().any(|&p| n.inputs.get(p).is_some_and(|v| requires[v.0])) {
                continue;
            }
            let gy: Vec<Option<Tensor>> = n.outputs.iter().map(|v| g[v.0].take()).collect();
            let dy: Vec<Option<Tensor>> = n.outputs.iter().map(|v| gdot[v.0].take()).collect();
            if gy.iter().chain(&dy).all(Option::is_none) {
                continue;
            }
            let op = run.ops.get(ni).cloned().unwrap_or_else(|| n.op.clone());
            let tin: Vec<Option<&Tensor>> = diff.iter().map(|&p| tan[n.inputs[p].0].as_ref()).collect();
            let (gx, dx) = self.node_second(n, &op, run, &tin, gy, dy)?;
            for (k, &p) in diff.iter().enumerate() {
                let v = n.inputs[p];
                if !requires[v.0] {
                    continue;
                }
                if let Some(t) = gx.get(k).cloned().flatten() {
                    self.add_into(&op.id, &mut g[v.0], t)?;
                }
                if let Some(t) = dx.get(k).cloned().flatten() {
                    self.add_into(&op.id, &mut gdot[v.0], t)?;
                }
            }
        }
        Ok((g, gdot))
    }

    /// `slot += t` (or `slot = t` where empty).
    fn add_into(&self, op: &str, slot: &mut Option<Tensor>, t: Tensor) -> Result<(), TapeError> {
        match slot {
            Some(acc) => self.accumulate(op, acc, &t),
            None => {
                *slot = Some(t);
                Ok(())
            }
        }
    }

    /// Node `n`'s `(J^T g, J^T g' + d/dx <J^T g, x'>)`, one of each per differentiable input.
    fn node_second(
        &self,
        n: &Node,
        op: &RegisteredOp,
        run: &mut Run,
        tin: &[Option<&Tensor>],
        gy: Vec<Option<Tensor>>,
        dy: Vec<Option<Tensor>>,
    ) -> Result<Pair, TapeError> {
        let ins: Vec<Tensor> = n
            .inputs
            .iter()
            .map(|v| run.values[v.0].clone())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| TapeError::Shim { op: op.id.clone(), message: "an input has no value".into() })?;
        let ins: Vec<&Tensor> = ins.iter().collect();
        let prov = &mut run.provenance;
        if let Rule::Composite = reverse_rule(op)? {
            let sub = n.sub.as_ref().ok_or_else(|| TapeError::NoCompositeGraph { op: op.id.clone() })?;
            return sub.graph_second(op, &ins, tin, gy, dy, prov);
        }
        let k = exec::diff_positions(op).len();
        let has_g = gy.iter().any(Option::is_some);
        let gfull = self.fill(&n.outputs, gy)?;
        let mut gx: Vec<Option<Tensor>> = vec![None; k];
        let mut dx: Vec<Option<Tensor>> = vec![None; k];
        if has_g {
            let grefs: Vec<&Tensor> = gfull.iter().collect();
            gx = self.vjp(n, op, &ins, &grefs, prov)?.into_iter().map(Some).collect();
        }
        if dy.iter().any(Option::is_some) {
            let dfull = self.fill(&n.outputs, dy)?;
            let drefs: Vec<&Tensor> = dfull.iter().collect();
            dx = self.vjp(n, op, &ins, &drefs, prov)?.into_iter().map(Some).collect();
        }
        if has_g && tin.iter().any(Option::is_some) {
            let c = self.dense(&n.inputs, &exec::diff_positions(op), tin)?;
            let (grefs, crefs): (Vec<&Tensor>, Vec<&Tensor>) = (gfull.iter().collect(), c.iter().collect());
            let (h, _) = self.vjp_of_vjp(n, op, &ins, &grefs, &crefs, prov)?;
            for (slot, t) in dx.iter_mut().zip(h) {
                self.add_into(&op.id, slot, t)?;
            }
        }
        Ok((gx, dx))
    }

    /// One cotangent per output: the given one, or zeros.
    fn fill(&self, outputs: &[Var], given: Vec<Option<Tensor>>) -> Result<Vec<Tensor>, TapeError> {
        outputs.iter().zip(given).map(|(v, t)| t.map_or_else(|| self.zeros_of(v), Ok)).collect()
    }

    /// A composite op's second-order step: its graph rematerialised, tangents pushed through it,
    /// then the second-order sweep from its outputs back to its inputs.
    fn graph_second(
        &self,
        op: &RegisteredOp,
        ins: &[&Tensor],
        tin: &[Option<&Tensor>],
        gy: Vec<Option<Tensor>>,
        dy: Vec<Option<Tensor>>,
        provenance: &mut ProvenanceRecord,
    ) -> Result<Pair, TapeError> {
        let feeds: Vec<(Var, &Tensor)> = ins.iter().enumerate().map(|(k, t)| (Var(k), *t)).collect();
        let mut run = self.run_unplanned(&feeds)?;
        let diff = exec::diff_positions(op);
        let seeds = diff.iter().zip(tin).filter_map(|(p, t)| t.map(|t| (Var(*p), t.clone()))).collect();
        let tan = self.push_tangents(&mut run, seeds, None)?;
        let pair = |given: Vec<Option<Tensor>>| -> Vec<(Var, Tensor)> {
            self.graph_outputs.iter().zip(given).filter_map(|(v, t)| t.map(|t| (*v, t))).collect()
        };
        let mut wrt = vec![false; self.vars.len()];
        for &p in &diff {
            wrt[p] = true;
        }
        let (g, gdot) = self.second_pass(&mut run, &tan, pair(gy), pair(dy), &wrt)?;
        provenance.entries.extend(run.provenance.entries);
        Ok((diff.iter().map(|&p| g[p].clone()).collect(), diff.iter().map(|&p| gdot[p].clone()).collect()))
    }
}
