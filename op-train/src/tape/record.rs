//! Gradients recorded as values of the tape (`Tape::record_grad`): backward appended as calls of
//! each op's VJP op (its differentiable one where registered, else the kernel one), composite
//! ops' graphs re-recorded inline and differentiated in turn, contributions summed with
//! `builtin/add`, the seed and zero cotangents held as constants. A gradient is then a value
//! like any other: `backward`, `jvp`, `hvp` and `vmap` apply to functions of it (the backward of
//! a gradient runs the VJP ops' own VJPs, the second derivatives). It owns the recording; the
//! rules are the ops'.

use super::{exec, reverse_rule, Kind, Rule, Tape, TapeError, Var, MAX_DEPTH};
use op_core::graph::GraphError;
use op_core::tensor::{Scalar, Tensor};
use std::collections::HashMap;
use std::ops::Range;

impl Tape {
    /// Records the gradient of the single-element `loss` with respect to `wrt` (float inputs or
    /// parameters) as values of this tape, one per `wrt`: calls of every op's VJP op appended
    /// after the pipeline. An op on the path needs a VJP op: a differentiable one
    /// (`Registry::register_vjp_op`; every built-in has one), or the one its VJP kernels make
    /// (which differentiates no further: the backward of a gradient through it names it), or a
    /// composite graph; an op whose VJP is a rule only is a typed error naming it. A value
    /// feeding several ops gets its cotangents summed with `builtin/add` (rank-1 values: a
    /// recorded gradient through another fan-out is `builtin/add`'s rank error).
    ///
    /// ```
    /// use op_runtime::{DType, Tape, Tensor};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut t = Tape::new();
    /// let x = t.input("x", DType::f64, [2]);
    /// let y = t.call1("builtin/tanh", &[x], &[])?;
    /// let loss = t.call1("builtin/sum", &[y], &[])?;
    /// let g = t.record_grad(loss, &[x])?[0]; // d loss / dx = sech^2 x, a value of the tape
    /// let gsum = t.call1("builtin/sum", &[g], &[])?;
    /// let xs = Tensor::vector(vec![0.3f64, -1.2]);
    /// let mut run = t.run(&[(x, &xs)])?;
    /// let second = t.grad(&mut run, gsum, &[x])?; // the backward of a gradient
    /// let d2 = second.get(x).and_then(|t| t.as_slice::<f64>()).expect("f64");
    /// for (d, x) in d2.iter().zip([0.3f64, -1.2]) {
    ///     assert!((d + 2.0 * x.tanh() / x.cosh().powi(2)).abs() < 1e-12);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn record_grad(&mut self, loss: Var, wrt: &[Var]) -> Result<Vec<Var>, TapeError> {
        let mask = self.wrt_mask(wrt)?;
        let i = self.vars.get(loss.0).ok_or(TapeError::UnknownVar { op: "-".into(), var: loss })?;
        if !i.dtype.is_float() || i.shape.iter().product::<usize>() != 1 {
            let op = match i.kind {
                Kind::Output { node, .. } => self.nodes[node].op.id.clone(),
                _ => i.name.clone(),
            };
            return Err(TapeError::NotScalarLoss { op, var: loss, dtype: i.dtype, shape: i.shape.clone() });
        }
        let (dtype, shape) = (i.dtype, i.shape.clone());
        let one = Tensor::from_f64(dtype, shape, &[1.0]).map_err(|e| TapeError::Shim { op: "-".into(), message: e.to_string() })?;
        let seed = self.constant("d loss", one)?;
        let cot = self.record_backward(0..self.nodes.len(), vec![(loss, seed)], &mask, 0)?;
        wrt.iter().map(|v| cot.get(v).copied().map_or_else(|| self.zeros_const(*v), Ok)).collect()
    }

    /// A constant of zeros shaped like `v`.
    fn zeros_const(&mut self, v: Var) -> Result<Var, TapeError> {
        let i = &self.vars[v.0];
        let z = Tensor::zeros(i.dtype, i.shape.clone()).map_err(|e| TapeError::Shim { op: i.name.clone(), message: e.to_string() })?;
        let name = format!("0 like {}", i.name);
        self.constant(&name, z)
    }

    /// Appends the backward of nodes `range` from cotangent values `seeds`; returns the
    /// cotangent value of every value it reached that `wrt` asks for (or that leads to one).
    fn record_backward(
        &mut self,
        range: Range<usize>,
        seeds: Vec<(Var, Var)>,
        wrt: &[bool],
        depth: usize,
    ) -> Result<HashMap<Var, Var>, TapeError> {
        let requires = self.requires(wrt);
        let mut cot: HashMap<Var, Var> = HashMap::new();
        for (v, g) in seeds {
            self.add_cot(&mut cot, v, g)?;
        }
        for ni in range.rev() {
            let n = &self.nodes[ni];
            let (handle, op, inputs, params, outputs) =
                (n.handle.clone(), n.op.clone(), n.inputs.clone(), n.params.clone(), n.outputs.clone());
            let diff = exec::diff_positions(&op);
            if !diff.iter().any(|&p| inputs.get(p).is_some_and(|v| requires.get(v.0).copied().unwrap_or(false))) {
                continue;
            }
            if outputs.iter().all(|v| !cot.contains_key(v)) {
                continue;
            }
            let mut gy = Vec::with_capacity(outputs.len());
            for v in &outputs {
                gy.push(match cot.get(v) {
                    Some(g) => *g,
                    None => self.zeros_const(*v)?,
                });
            }
            let gx: Vec<Option<Var>> = match reverse_rule(&op)? {
                Rule::Vjp => {
                    let h = handle.differentiable_vjp_op().or_else(|| handle.vjp_op()).ok_or_else(|| TapeError::NoSecondOrder {
                        op: op.id.clone(),
                        reason: "its VJP is a rule only, so its gradient cannot be recorded as values: declare VJP kernels, or register a differentiable VJP op with `Registry::register_vjp_op`".into(),
                    })?;
                    let all: Vec<Var> = inputs.iter().chain(&gy).copied().collect();
                    let gx = self.apply(&h, &all, &params)?;
                    self.same_shapes(&op, &inputs, &diff, &gx)?;
                    gx.into_iter().map(Some).collect()
                }
                Rule::Composite => self.inline_composite(&op, &inputs, &params, &gy, depth)?,
            };
            for (&p, g) in diff.iter().zip(gx) {
                let v = inputs[p];
                if let (true, Some(g)) = (requires[v.0], g) {
                    self.add_cot(&mut cot, v, g)?;
                }
            }
        }
        Ok(cot)
    }

    /// A composite op's graph recorded again here (rematerialised from its inputs) and its
    /// backward appended from the cotangents `gy`: one cotangent per differentiable input.
    fn inline_composite(
        &mut self,
        op: &op_core::op::RegisteredOp,
        inputs: &[Var],
        params: &[Scalar],
        gy: &[Var],
        depth: usize,
    ) -> Result<Vec<Option<Var>>, TapeError> {
        if depth >= MAX_DEPTH {
            return Err(TapeError::CompositeTooDeep { op: op.id.clone(), depth: MAX_DEPTH });
        }
        let builder = op.decl.composite.ok_or_else(|| TapeError::NoCompositeGraph { op: op.id.clone() })?;
        let start = self.nodes.len();
        let outs = builder(self, inputs, params)
            .map_err(|GraphError(e)| TapeError::CompositeMismatch { op: op.id.clone(), reason: format!("failed to record: {e}") })?;
        if outs.len() != gy.len() {
            let reason = format!("returns {} value(s), the op declares {} output(s)", outs.len(), gy.len());
            return Err(TapeError::CompositeMismatch { op: op.id.clone(), reason });
        }
        let mut wrt = vec![false; self.vars.len()];
        let diff = exec::diff_positions(op);
        for &p in &diff {
            wrt[inputs[p].0] = true;
        }
        let seeds = outs.into_iter().zip(gy.iter().copied()).collect();
        let cot = self.record_backward(start..self.nodes.len(), seeds, &wrt, depth + 1)?;
        Ok(diff.iter().map(|&p| cot.get(&inputs[p]).copied()).collect())
    }

    /// Refuses gradients recorded in another shape than their operand's: a broadcasting op's VJP
    /// op gives its gradients in the broadcast shape, and summing one back over the broadcast
    /// axes has no built-in to record it with yet.
    fn same_shapes(&self, op: &op_core::op::RegisteredOp, inputs: &[Var], diff: &[usize], gx: &[Var]) -> Result<(), TapeError> {
        for (&p, g) in diff.iter().zip(gx) {
            let (x, g) = (&self.vars[inputs[p].0], &self.vars[g.0]);
            if x.shape != g.shape {
                let reason = format!(
                    "the gradient of `{}` (shape {:?}) would be recorded in the broadcast shape {:?}; recording the sum over the broadcast axes is not supported (reverse mode, `Tape::jvp` and `Tape::hvp` handle it)",
                    x.name, x.shape, g.shape
                );
                return Err(TapeError::NoSecondOrder { op: op.id.clone(), reason });
            }
        }
        Ok(())
    }

    /// `cot[v] += g`, recorded as a `builtin/add` where `v` already has a cotangent.
    fn add_cot(&mut self, cot: &mut HashMap<Var, Var>, v: Var, g: Var) -> Result<(), TapeError> {
        let sum = match cot.get(&v) {
            Some(acc) => self.call1("builtin/add", &[*acc, g], &[])?,
            None => g,
        };
        cot.insert(v, sum);
        Ok(())
    }
}
