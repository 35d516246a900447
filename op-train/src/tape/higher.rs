//! The rule calls forward mode and second order make beyond first-order reverse: an op's JVP
//! rules, and the VJP of its differentiable VJP op (declared rule or composite graph). Rules run
//! on host tensors: values on a device are read back and the results uploaded to the tape's
//! device, each transfer counted, so tangents stay where the tape's values live. It owns calling
//! rules; which rule a node needs is `forward`'s and `second`'s to decide.

use super::{device, exec, planner, shim_err, Node, Tape, TapeError};
use op_contract::contract::{Backward, DType};
use op_core::op::RegisteredOp;
use op_core::provenance::ProvenanceRecord;
use op_core::registry::OpHandle;
use op_core::tensor::{Scalar, Tensor};
use std::borrow::Cow;

/// `ts` on the host: host tensors borrowed, device tensors read back (counted).
pub(super) fn hosted<'a>(what: &str, ts: &[&'a Tensor]) -> Result<Vec<Cow<'a, Tensor>>, TapeError> {
    ts.iter().map(|t| if t.is_host() { Ok(Cow::Borrowed(*t)) } else { device::to_host(what, t).map(Cow::Owned) }).collect()
}

fn refs<'a>(v: &'a [Cow<'a, Tensor>]) -> Vec<&'a Tensor> {
    v.iter().map(|c| c.as_ref()).collect()
}

impl Tape {
    /// Zeros of a dtype and shape where the tape's values live.
    pub(super) fn zeros_here(&self, what: &str, dtype: DType, shape: &[usize]) -> Result<Tensor, TapeError> {
        let z = Tensor::zeros(dtype, shape.to_vec()).map_err(|e| TapeError::Shim { op: what.to_string(), message: e.to_string() })?;
        device::place(self.device, what, &z)
    }

    /// Host results placed where the tape's values live.
    fn placed_all(&self, what: &str, ts: Vec<Tensor>) -> Result<Vec<Tensor>, TapeError> {
        ts.iter().map(|t| device::place(self.device, what, t)).collect()
    }

    /// The sum over differentiable inputs `k` with a tangent of JVP rule `k`: one tangent per
    /// output of `op`.
    pub(super) fn jvp_rules(
        &self,
        n: &Node,
        op: &RegisteredOp,
        ins: &[&Tensor],
        tangents: &[Option<&Tensor>],
    ) -> Result<Vec<Tensor>, TapeError> {
        let what = format!("the JVP rules of `{}` (they run on the host)", op.id);
        let hins = hosted(&what, ins)?;
        let mut acc: Option<Vec<Tensor>> = None;
        for (k, t) in tangents.iter().enumerate() {
            let Some(t) = t else { continue };
            let ht = hosted(&what, &[t])?;
            let outs = exec::jvp(op, k, &refs(&hins), &n.params, &ht[0], self.mode).map_err(shim_err(op))?;
            match &mut acc {
                None => acc = Some(outs),
                Some(a) => {
                    for (a, o) in a.iter_mut().zip(&outs) {
                        super::accumulate(&op.id, a, o)?;
                    }
                }
            }
        }
        let outs = acc.ok_or_else(|| TapeError::Shim { op: op.id.clone(), message: "no tangent to push".into() })?;
        self.placed_all(&what, outs)
    }

    /// The VJP of the op behind `h` (a differentiable VJP op) at `ins`: its declared VJP rule, or
    /// its composite graph recorded afresh and run backward. One gradient per float input.
    pub(super) fn op_vjp(
        &self,
        h: &OpHandle,
        ins: &[&Tensor],
        params: &[Scalar],
        cots: &[&Tensor],
        provenance: &mut ProvenanceRecord,
    ) -> Result<Vec<Tensor>, TapeError> {
        let op = h.op();
        let what = format!("the VJP rule of `{}` (it runs on the host)", op.id);
        match (&op.contract.backward, op.decl.composite) {
            (Backward::Composite { .. }, Some(builder)) => {
                let shapes: Vec<(DType, &[usize])> = ins.iter().map(|t| (t.dtype(), t.shape())).collect();
                let inferred = planner::infer(&op, &shapes, params, self.mode.float_as())?;
                let owned: Vec<(DType, Vec<usize>)> = shapes.iter().map(|(d, s)| (*d, s.to_vec())).collect();
                let mut sub = Tape::with_mode(&self.registry, self.mode);
                (sub.options, sub.device, sub.depth, sub.receipts) = (self.options, self.device, self.depth + 1, self.receipts.clone());
                sub.record_graph(&op, builder, &owned, params, &inferred)?;
                let cots: Vec<Tensor> = cots.iter().map(|t| (*t).clone()).collect();
                let (gs, prov) = sub.graph_vjp(&op, ins, cots)?;
                provenance.entries.extend(prov.entries);
                Ok(gs)
            }
            (Backward::Declared { vjp: Some(_), .. }, _) => {
                let (hins, hcots) = (hosted(&what, ins)?, hosted(&what, cots)?);
                let gs = exec::vjp(&op, &refs(&hins), params, &refs(&hcots), self.mode).map_err(shim_err(&op))?;
                self.placed_all(&what, gs)
            }
            _ => Err(TapeError::NoSecondOrder { op: op.id.clone(), reason: "its VJP op declares no VJP of its own".into() }),
        }
    }

    /// The VJP of node `n`'s differentiable VJP op at `(ins, g)` with cotangents `c` (one per
    /// differentiable input of the op): one gradient per differentiable input of the op (the
    /// second-derivative term `d/dx <J(x)^T g, c>`) and one per float output (`J c`, the JVP).
    pub(super) fn vjp_of_vjp(
        &self,
        n: &Node,
        op: &RegisteredOp,
        ins: &[&Tensor],
        g: &[&Tensor],
        c: &[&Tensor],
        provenance: &mut ProvenanceRecord,
    ) -> Result<(Vec<Tensor>, Vec<Tensor>), TapeError> {
        let h = n.handle.differentiable_vjp_op().ok_or_else(|| self.no_vjp_op(n, op))?;
        let all: Vec<&Tensor> = ins.iter().chain(g).copied().collect();
        let expanded = self.broadcast_cotangents(op, &h, g, c)?;
        let c: Vec<&Tensor> = match &expanded {
            Some(e) => e.iter().collect(),
            None => c.to_vec(),
        };
        let mut gs = self.op_vjp(&h, &all, &n.params, &c, provenance)?;
        let k = exec::diff_positions(op).len();
        if gs.len() < k {
            let message = format!("its VJP op `{}` returned {} gradient(s), fewer than the op's {k} float input(s)", h.id(), gs.len());
            return Err(TapeError::Shim { op: op.id.clone(), message });
        }
        let jvp = gs.split_off(k);
        Ok((gs, jvp))
    }

    /// A broadcasting op's second-order cotangents (one per operand, in the operand's shape)
    /// expanded to the broadcast shape (`g`'s), where its VJP op broadcasts too: that op sees the
    /// operands expanded, and `<c, E^T h> = <E c, h>` for an operand's expansion `E`. `None` where
    /// nothing is expanded; a VJP op that does not broadcast is a typed error naming both.
    fn broadcast_cotangents(
        &self,
        op: &RegisteredOp,
        h: &OpHandle,
        g: &[&Tensor],
        c: &[&Tensor],
    ) -> Result<Option<Vec<Tensor>>, TapeError> {
        let Some(to) = g.first().map(|t| t.shape().to_vec()) else { return Ok(None) };
        if !op.plan.broadcasts() || c.iter().all(|t| t.shape() == to.as_slice()) {
            return Ok(None);
        }
        if !h.op().plan.broadcasts() {
            let reason = format!("its operands broadcast, and its VJP op `{}` does not declare `broadcast = numpy`", h.id());
            return Err(TapeError::NoSecondOrder { op: op.id.clone(), reason });
        }
        let what = format!("the VJP rule of `{}` (it runs on the host)", h.id());
        let hc = hosted(&what, c)?;
        let expanded = hc
            .iter()
            .map(|t| match t.shape() == to.as_slice() {
                true => Ok(t.as_ref().clone()),
                false => op_core::broadcast::expand_host(t, &to).map_err(|e| TapeError::Shim { op: op.id.clone(), message: e.to_string() }),
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.placed_all(&what, expanded).map(Some)
    }

    /// Why node `n`'s op has no differentiable VJP op, naming what it has instead.
    fn no_vjp_op(&self, n: &Node, op: &RegisteredOp) -> TapeError {
        let has = match n.handle.vjp_op() {
            Some(v) => format!("its VJP op `{}` is not differentiable (`backward = none`)", v.id()),
            None => "it declares a VJP rule only, and no differentiable VJP op is registered for it".to_string(),
        };
        TapeError::NoSecondOrder {
            op: op.id.clone(),
            reason: format!(
                "{has}; register one with `Registry::register_vjp_op` (an `#[op]` whose reference is the VJP rule and whose backward is its derivative)"
            ),
        }
    }
}
