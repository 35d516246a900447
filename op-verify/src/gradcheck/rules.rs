//! The declared backward as gradcheck calls it: cotangents in, `J^T u` from the VJP (or the
//! composite graph's), `<u, J v>` from the JVP rules. Owns calling the rules in f64 on the
//! checker's point; it must not measure differences or judge.

use super::probe::{Checker, Dir};
use super::GradcheckError;
use op_contract::sample::Rng;
use op_core::tensor::Tensor;
use op_train::tape::{exec, Mode};

impl Checker {
    fn cotangents(&self, u: &[Option<Vec<f64>>]) -> Result<Vec<Tensor>, GradcheckError> {
        let outs = &self.op.contract.signature.outputs;
        let shapes = self.out_shapes()?;
        outs.iter()
            .zip(u)
            .zip(shapes)
            .map(|((o, u), shape)| match u {
                Some(u) => Tensor::from_vec(shape, u.clone()),
                None => Tensor::zeros(o.dtype, shape),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| GradcheckError::Shim { op: self.op.id.clone(), message: e.to_string() })
    }

    pub fn out_shapes(&self) -> Result<Vec<Vec<usize>>, GradcheckError> {
        let refs: Vec<&Tensor> = self.inputs.iter().collect();
        let params = exec::convert_params(&self.op, &self.params, Mode::ReferenceF64);
        Ok(exec::bind(&self.op, &refs, &params, Mode::ReferenceF64)
            .map_err(self.shim_err())?
            .out_shapes
            .iter()
            .map(|s| s.to_vec())
            .collect())
    }

    /// The backward's J^T u: one flat f64 vector per differentiable input.
    pub fn vjp(&self, u: &[Option<Vec<f64>>]) -> Result<Vec<Vec<f64>>, GradcheckError> {
        let cots = self.cotangents(u)?;
        let refs: Vec<&Tensor> = self.inputs.iter().collect();
        let gs = match &self.graph {
            Some(g) => g.graph_vjp(&self.op, &refs, cots)?.0,
            None => {
                let crefs: Vec<&Tensor> = cots.iter().collect();
                exec::vjp(&self.op, &refs, &self.params, &crefs, Mode::ReferenceF64).map_err(self.shim_err())?
            }
        };
        gs.iter()
            .map(|g| {
                g.data().to_f64_vec().ok_or_else(|| GradcheckError::Shim {
                    op: self.op.id.clone(),
                    message: format!("the backward returned a `{}` gradient", g.dtype()),
                })
            })
            .collect()
    }

    /// The JVP's <u, J v>: the sum over differentiable inputs of each rule's tangent.
    pub fn jvp(&self, dir: &Dir, u: &[Option<Vec<f64>>]) -> Result<f64, GradcheckError> {
        let refs: Vec<&Tensor> = self.inputs.iter().collect();
        let mut s = 0.0;
        for (k, v) in dir.v.iter().enumerate() {
            if v.iter().all(|x| *x == 0.0) {
                continue;
            }
            let x = &self.inputs[self.diff[k]];
            let tangent = Tensor::from_vec(x.shape().to_vec(), v.clone())
                .map_err(|e| GradcheckError::Shim { op: self.op.id.clone(), message: e.to_string() })?;
            let outs = exec::jvp(&self.op, k, &refs, &self.params, &tangent, Mode::ReferenceF64).map_err(self.shim_err())?;
            for (o, u) in outs.iter().zip(u) {
                if let (Some(u), Some(v)) = (u, o.as_slice::<f64>()) {
                    s += u.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
                }
            }
        }
        Ok(s)
    }

    /// The declared backward along `dir`: `<J^T u, v>` from the VJP, else `<u, J v>`.
    pub fn rule_along(&self, dir: &Dir, u: &[Option<Vec<f64>>]) -> Result<f64, GradcheckError> {
        if self.has_vjp {
            Ok(dir.dot(&self.vjp(u)?))
        } else {
            self.jvp(dir, u)
        }
    }

    /// A random cotangent: uniform in [-1, 1] for float outputs, none for the others.
    pub fn cotangent(&self, out_shapes: &[Vec<usize>], rng: &mut Rng) -> Vec<Option<Vec<f64>>> {
        let sig = &self.op.contract.signature;
        out_shapes
            .iter()
            .zip(&sig.outputs)
            .map(|(s, o)| o.dtype.is_float().then(|| (0..s.iter().product::<usize>()).map(|_| rng.uniform(-1.0, 1.0)).collect()))
            .collect()
    }
}
