//! Optimisers: update a tape's trainable parameters from their gradients. They read gradients
//! and write parameter values; they never run ops.

use crate::tape::{Grads, Tape, TapeError};

/// Plain stochastic gradient descent: `p -= lr * grad` for every parameter with a gradient.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sgd {
    /// The learning rate.
    pub lr: f64,
}

impl Sgd {
    /// SGD with learning rate `lr`.
    pub fn new(lr: f64) -> Sgd {
        Sgd { lr }
    }

    /// One update of every parameter of `tape` that has a gradient in `grads` (computed in
    /// f64, stored at the parameter's dtype). A gradient of another dtype or length is a
    /// typed error naming the parameter.
    pub fn step(&self, tape: &mut Tape, grads: &Grads) -> Result<(), TapeError> {
        let lr = self.lr;
        for (v, name, p) in tape.params_mut() {
            let Some(g) = grads.get(v) else { continue };
            let bad = || TapeError::GradDType { op: format!("parameter `{name}`"), dtype: g.dtype() };
            match (g.as_slice::<f32>(), g.as_slice::<f64>()) {
                (Some(g), _) => match p.as_mut_slice::<f32>() {
                    Some(p) if p.len() == g.len() => p.iter_mut().zip(g).for_each(|(p, g)| *p -= (lr * *g as f64) as f32),
                    _ => return Err(bad()),
                },
                (None, Some(g)) => match p.as_mut_slice::<f64>() {
                    Some(p) if p.len() == g.len() => p.iter_mut().zip(g).for_each(|(p, g)| *p -= lr * *g),
                    _ => return Err(bad()),
                },
                _ => return Err(bad()),
            }
        }
        Ok(())
    }
}
