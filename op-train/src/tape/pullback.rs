//! One call's pullback outside a recorded pipeline: the gradients of an op's tensor inputs for
//! given cotangents of its outputs, by the rule the tape's backward applies to that op (its VJP
//! op where its backward declares VJP kernels, else its VJP rule, else its composite graph), for
//! adapters whose own autograd drives the backward (candle). It runs no forward of the op.

use super::{device, Run, Tape, TapeError};
use op_core::graph::Var;
use op_core::provenance::ProvenanceRecord;
use op_core::registry::OpHandle;
use op_core::tensor::{Scalar, Tensor};

/// The gradients of one call and the provenance of the calls that computed them.
#[derive(Debug)]
pub struct Pullback {
    /// One entry per tensor input, in signature order: the gradient of a float input (zeros
    /// where no gradient reaches it), `None` for a non-float input (no gradient flows there).
    pub grads: Vec<Option<Tensor>>,
    /// The dispatched calls that computed them: the VJP op's call, or a composite graph's calls;
    /// empty where the op's VJP rule ran on the host through its shim.
    pub provenance: ProvenanceRecord,
}

impl Tape {
    /// The pullback of one call of `handle` on `inputs` with `params`: the gradient of every
    /// tensor input for `cotangents` (one per output, each of the output's dtype and shape), by
    /// the rule [`Tape::backward`] would apply to the same call on this tape (its mode, call
    /// options, device and presented receipts). Nothing is recorded on this tape and the op's
    /// forward does not run; a composite op's graph is rematerialised as `backward` does.
    /// Errors are typed: validation of the call, a cotangent that does not match its output
    /// (`TapeError::Cotangent`), an op gradients cannot flow through.
    pub fn pullback(
        &self,
        handle: &OpHandle,
        inputs: Vec<Tensor>,
        params: &[Scalar],
        cotangents: Vec<Tensor>,
    ) -> Result<Pullback, TapeError> {
        let mut t = Tape::with_mode(&self.registry, self.mode);
        t.options = self.options;
        t.device = self.device;
        t.receipts = self.receipts.clone();
        t.depth = self.depth;
        let op = handle.op();
        let names: Vec<String> = op.contract.signature.inputs().map(|s| s.name.clone()).collect();
        let name = |k: usize| names.get(k).cloned().unwrap_or_else(|| format!("input {k}"));
        let vars: Vec<Var> = inputs.iter().enumerate().map(|(k, x)| t.input(&name(k), x.dtype(), x.shape().to_vec())).collect();
        let outs = t.apply(handle, &vars, params)?;
        if cotangents.len() != outs.len() {
            return Err(TapeError::Cotangent {
                op: op.id.clone(),
                output: outs.len().min(cotangents.len()),
                problem: format!("{} cotangent(s) given for {} output(s)", cotangents.len(), outs.len()),
            });
        }
        let mut values: Vec<Option<Tensor>> = vec![None; t.vars.len()];
        for ((k, v), x) in vars.iter().enumerate().zip(inputs) {
            values[v.0] = Some(t.placed(&name(k), x)?);
        }
        let mut seeds = Vec::with_capacity(outs.len());
        for (k, (v, c)) in outs.iter().zip(cotangents).enumerate() {
            let i = &t.vars[v.0];
            if c.dtype() != i.dtype || c.shape() != i.shape.as_slice() {
                let problem = format!("the cotangent is {}{:?}, the output is {}{:?}", c.dtype(), c.shape(), i.dtype, i.shape);
                return Err(TapeError::Cotangent { op: op.id.clone(), output: k, problem });
            }
            seeds.push((*v, t.placed(&format!("the cotangent of output {k}"), c)?));
        }
        let mut wrt = vec![false; t.vars.len()];
        vars.iter().for_each(|v| wrt[v.0] = t.vars[v.0].dtype.is_float());
        let mut run = Run { values, ops: Vec::new(), provenance: ProvenanceRecord::default() };
        let mut grads = t.gradients(&mut run, seeds, &wrt)?;
        let mut out = Vec::with_capacity(vars.len());
        for (k, v) in vars.iter().enumerate() {
            let i = &t.vars[v.0];
            out.push(match (wrt[v.0], grads.grads.get_mut(v.0).and_then(Option::take)) {
                (false, _) => None,
                (true, Some(g)) if g.is_host() => Some(g),
                (true, Some(g)) => Some(device::to_host(&name(k), &g)?),
                (true, None) => Some(
                    Tensor::zeros(i.dtype, i.shape.clone()).map_err(|e| TapeError::Shim { op: op.id.clone(), message: e.to_string() })?,
                ),
            });
        }
        Ok(Pullback { grads: out, provenance: run.provenance })
    }

    /// `x` where this tape's values live, moved as is on the host (no copy); a device tensor
    /// on another device, or on a host tape, is refused as `run` refuses it.
    fn placed(&self, what: &str, x: Tensor) -> Result<Tensor, TapeError> {
        if !self.feedable(&x) {
            return Err(TapeError::Placement { name: what.to_string(), placement: x.placement().to_string() });
        }
        match self.device {
            None => Ok(x),
            Some(_) => device::place(self.device, what, &x),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use op_core::registry::Registry;

    fn vector(v: &[f32]) -> Tensor {
        Tensor::vector(v.to_vec())
    }

    /// The pullback of one call equals the tape's backward through the same call, and a
    /// cotangent that does not match its output is a typed error naming the op.
    #[test]
    fn a_pullback_is_the_tapes_backward_of_one_call() {
        let reg = Registry::with_builtins();
        let mse = reg.lookup("builtin/mse_loss").unwrap();
        let (a, b) = ([0.5f32, -1.0, 2.0], [0.25f32, 1.0, -2.0]);
        let tape = Tape::with_registry(&reg);
        let cot = Tensor::from_vec(Vec::<usize>::new(), vec![1.0f32]).unwrap();
        let pb = tape.pullback(&mse, vec![vector(&a), vector(&b)], &[], vec![cot.clone()]).unwrap();
        let mut t = Tape::with_registry(&reg);
        let (pa, pb_) = (t.param("a", vector(&a)).unwrap(), t.param("b", vector(&b)).unwrap());
        let loss = t.call1("builtin/mse_loss", &[pa, pb_], &[]).unwrap();
        let mut run = t.run(&[]).unwrap();
        let g = t.backward(&mut run, loss).unwrap();
        assert_eq!(pb.grads, vec![g.get(pa).cloned(), g.get(pb_).cloned()]);
        assert_eq!(pb.provenance.entries.iter().map(|e| e.op.to_string()).collect::<Vec<_>>(), ["builtin/mse_loss/vjp@1"]);
        let e = tape.pullback(&mse, vec![vector(&a), vector(&b)], &[], vec![vector(&[1.0])]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "op `builtin/mse_loss@1`: cotangent of output 0: the cotangent is f32[1], the output is f32[]; give one cotangent per output, of its dtype and shape"
        );
        let e = tape.pullback(&mse, vec![vector(&a), vector(&b)], &[], vec![cot.clone(), cot]).unwrap_err();
        assert!(matches!(e, TapeError::Cotangent { .. }), "{e}");
    }
}
