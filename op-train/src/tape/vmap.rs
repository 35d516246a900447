//! Batched pipelines: a whole recorded pipeline (or its gradient) as a function of tensors
//! ([`TensorFn`]: [`Tape::func`], [`Tape::grad_func`]) mapped over a leading batch axis by
//! [`vmap`], each input batched or shared ([`InAxis`]); a mapped function maps again (a batch of
//! batches). Every slice runs the pipeline as recorded, each op with its own validation and
//! launch geometry, so a batch is never folded into an op's own dimensions: a slice whose shape
//! is not the one recorded is the tape's typed error, never a plausible number. Slicing and
//! stacking happen on the host: device inputs are read back, each slice runs where the tape
//! runs (uploaded, counted), and the stacked outputs go back to the device. It owns slicing,
//! stacking and the batch checks; running is the tape's.

use super::{SharedDevice, Tape, TapeError, Var};
use op_core::tensor::{Data, Tensor};
use std::borrow::Cow;

/// How one input of a mapped function meets the batch axis (JAX's `in_axes`: `0` or `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InAxis {
    /// Sliced along its leading axis: slice `b` goes to call `b`.
    Batched,
    /// Given whole to every call.
    Shared,
}

/// A function of tensors that [`vmap`] maps over a batch axis.
pub trait TensorFn {
    /// How many inputs it takes.
    fn arity(&self) -> usize;
    /// Calls it.
    fn call(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, TapeError>;
    /// The device it runs on, if any (a batch of device tensors is stacked back there).
    fn device(&self) -> Option<SharedDevice> {
        None
    }
}

/// A recorded pipeline as a function: its inputs fed in order, the chosen values returned
/// ([`Tape::func`]).
#[derive(Debug)]
pub struct TapeFn<'t> {
    tape: &'t Tape,
    inputs: Vec<Var>,
    outputs: Vec<Var>,
}

/// The gradient of a pipeline's single-element loss as a function of its inputs
/// ([`Tape::grad_func`]): one gradient per value of `wrt`, on the host.
#[derive(Debug)]
pub struct GradFn<'t> {
    tape: &'t Tape,
    inputs: Vec<Var>,
    loss: Var,
    wrt: Vec<Var>,
}

impl Tape {
    /// The pipeline as a function from `inputs` (placeholders, fed in this order) to the values
    /// `outputs` (each call plans and runs the tape; parameters are its current values).
    pub fn func(&self, inputs: &[Var], outputs: &[Var]) -> TapeFn<'_> {
        TapeFn { tape: self, inputs: inputs.to_vec(), outputs: outputs.to_vec() }
    }

    /// The gradient of the single-element `loss` with respect to `wrt` (float inputs or
    /// parameters) as a function of `inputs`; `vmap` of it gives per-example gradients.
    pub fn grad_func(&self, inputs: &[Var], loss: Var, wrt: &[Var]) -> GradFn<'_> {
        GradFn { tape: self, inputs: inputs.to_vec(), loss, wrt: wrt.to_vec() }
    }
}

impl TapeFn<'_> {
    fn feeds<'a>(&self, inputs: &[&'a Tensor]) -> Result<Vec<(Var, &'a Tensor)>, TapeError> {
        feeds(&self.inputs, inputs)
    }
}

fn feeds<'a>(vars: &[Var], inputs: &[&'a Tensor]) -> Result<Vec<(Var, &'a Tensor)>, TapeError> {
    if vars.len() != inputs.len() {
        return Err(TapeError::Batch { problem: format!("the function takes {} input(s), given {}", vars.len(), inputs.len()) });
    }
    Ok(vars.iter().copied().zip(inputs.iter().copied()).collect())
}

impl TensorFn for TapeFn<'_> {
    fn arity(&self) -> usize {
        self.inputs.len()
    }
    fn call(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, TapeError> {
        let run = self.tape.run(&self.feeds(inputs)?)?;
        self.outputs.iter().map(|v| run.value(*v).cloned().ok_or(TapeError::UnknownVar { op: "-".into(), var: *v })).collect()
    }
    fn device(&self) -> Option<SharedDevice> {
        self.tape.device
    }
}

impl TensorFn for GradFn<'_> {
    fn arity(&self) -> usize {
        self.inputs.len()
    }
    fn call(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, TapeError> {
        let mut run = self.tape.run(&feeds(&self.inputs, inputs)?)?;
        let grads = self.tape.grad(&mut run, self.loss, &self.wrt)?;
        self.wrt
            .iter()
            .map(|v| match grads.get(*v) {
                Some(g) => Ok(g.clone()),
                None => {
                    let i = &self.tape.vars[v.0];
                    Tensor::zeros(i.dtype, i.shape.clone()).map_err(|e| TapeError::Shim { op: i.name.clone(), message: e.to_string() })
                }
            })
            .collect()
    }
    fn device(&self) -> Option<SharedDevice> {
        self.tape.device
    }
}

/// `f` mapped over a leading batch axis (see [`vmap`]).
#[derive(Debug)]
pub struct Vmap<F> {
    f: F,
    in_axes: Vec<InAxis>,
}

/// `f` mapped over a leading batch axis: inputs marked [`InAxis::Batched`] are sliced (all of
/// one batch size), the others given whole to every call; each output stacked along a new
/// leading axis. `in_axes` needs one entry per input of `f` and at least one `Batched`, else a
/// typed error; a `Vmap` maps again (nested batches). A slice the function refuses (its shape
/// is not the recorded one: a mis-batched input) is an error naming the slice.
///
/// ```
/// use op_runtime::train::{vmap, InAxis, TensorFn};
/// use op_runtime::{DType, Tape, Tensor};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut t = Tape::new();
/// let x = t.input("x", DType::f64, [3]);
/// let s = t.input("s", DType::f64, [3]);
/// let y = t.call1("builtin/mul", &[x, s], &[])?;
/// let rows = Tensor::from_vec([2, 3], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// let scale = Tensor::vector(vec![10.0f64, 1.0, 0.5]);
/// let out = vmap(t.func(&[x, s], &[y]), &[InAxis::Batched, InAxis::Shared])?.call(&[&rows, &scale])?;
/// assert_eq!(out[0].as_slice::<f64>(), Some(&[10.0, 2.0, 1.5, 40.0, 5.0, 3.0][..]));
/// # Ok(())
/// # }
/// ```
pub fn vmap<F: TensorFn>(f: F, in_axes: &[InAxis]) -> Result<Vmap<F>, TapeError> {
    if in_axes.len() != f.arity() {
        return Err(TapeError::Batch {
            problem: format!("in_axes has {} entries for a function of {} input(s)", in_axes.len(), f.arity()),
        });
    }
    if !in_axes.contains(&InAxis::Batched) {
        return Err(TapeError::Batch { problem: "no input is `InAxis::Batched`, so there is no axis to map over".into() });
    }
    Ok(Vmap { f, in_axes: in_axes.to_vec() })
}

impl<F: TensorFn> Vmap<F> {
    /// The batch size every batched input agrees on.
    fn batch_size(&self, inputs: &[&Tensor]) -> Result<usize, TapeError> {
        let mut size: Option<(usize, usize)> = None;
        for (k, (t, axis)) in inputs.iter().zip(&self.in_axes).enumerate() {
            if *axis == InAxis::Shared {
                continue;
            }
            let Some(&b) = t.shape().first() else {
                return Err(TapeError::Batch { problem: format!("input {k} is `Batched` but rank 0: it has no batch axis") });
            };
            match size {
                None => size = Some((k, b)),
                Some((first, s)) if s != b => {
                    return Err(TapeError::Batch {
                        problem: format!("input {k} has batch size {b}, but input {first} has {s}; batched inputs share one batch size"),
                    })
                }
                Some(_) => {}
            }
        }
        match size {
            Some((_, 0)) => Err(TapeError::Batch { problem: "the batch is empty (size 0): there is no slice to run".into() }),
            Some((_, b)) => Ok(b),
            None => Err(TapeError::Batch { problem: "no input is batched".into() }),
        }
    }
}

impl<F: TensorFn> TensorFn for Vmap<F> {
    fn arity(&self) -> usize {
        self.in_axes.len()
    }

    fn call(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>, TapeError> {
        if inputs.len() != self.in_axes.len() {
            return Err(TapeError::Batch {
                problem: format!("the function takes {} input(s), given {}", self.in_axes.len(), inputs.len()),
            });
        }
        let batch = self.batch_size(inputs)?;
        let on_device = inputs.iter().any(|t| !t.is_host());
        // Batched inputs on the host (read back once where they live on a device).
        let hosted: Vec<Cow<'_, Tensor>> = inputs
            .iter()
            .zip(&self.in_axes)
            .map(|(t, a)| match (a, t.is_host()) {
                (InAxis::Batched, false) => super::device::to_host("a batched input", t).map(Cow::Owned),
                _ => Ok(Cow::Borrowed(*t)),
            })
            .collect::<Result<_, _>>()?;
        let mut per_output: Vec<Vec<Tensor>> = Vec::new();
        for b in 0..batch {
            let slices: Vec<Cow<'_, Tensor>> = hosted
                .iter()
                .zip(&self.in_axes)
                .map(|(t, a)| match a {
                    InAxis::Batched => slice_leading(t, b).map(Cow::Owned),
                    InAxis::Shared => Ok(Cow::Borrowed(t.as_ref())),
                })
                .collect::<Result<_, _>>()?;
            let refs: Vec<&Tensor> = slices.iter().map(|c| c.as_ref()).collect();
            let outs = self.f.call(&refs).map_err(|e| TapeError::Slice { index: b, source: Box::new(e) })?;
            per_output.resize_with(outs.len(), Vec::new);
            for (k, t) in outs.into_iter().enumerate() {
                per_output[k].push(t);
            }
        }
        let stacked = per_output.iter().enumerate().map(|(k, s)| stack(k, s)).collect::<Result<Vec<_>, _>>()?;
        match (on_device, self.f.device()) {
            (true, Some(d)) => stacked.iter().map(|t| super::device::place(Some(d), "a stacked output", t)).collect(),
            _ => Ok(stacked),
        }
    }

    fn device(&self) -> Option<SharedDevice> {
        self.f.device()
    }
}

/// Slice `b` of a host tensor along its leading axis.
fn slice_leading(t: &Tensor, b: usize) -> Result<Tensor, TapeError> {
    let inner: Vec<usize> = t.shape().get(1..).unwrap_or(&[]).to_vec();
    let n: usize = inner.iter().product();
    let data = t
        .data()
        .slice_range(b * n, (b + 1) * n)
        .ok_or_else(|| TapeError::Batch { problem: format!("slice {b} lies outside a tensor of shape {:?}", t.shape()) })?;
    Tensor::new(inner, data).map_err(|e| TapeError::Batch { problem: e.to_string() })
}

/// Output `k`'s slices stacked along a new leading axis (read back where they live on a device).
fn stack(k: usize, slices: &[Tensor]) -> Result<Tensor, TapeError> {
    let first = slices.first().ok_or_else(|| TapeError::Batch { problem: format!("output {k} has no slice") })?;
    let hosted: Vec<Cow<'_, Tensor>> = slices
        .iter()
        .map(|t| if t.is_host() { Ok(Cow::Borrowed(t)) } else { super::device::to_host("a batched output", t).map(Cow::Owned) })
        .collect::<Result<_, _>>()?;
    if let Some((b, t)) = hosted.iter().enumerate().find(|(_, t)| t.shape() != first.shape() || t.dtype() != first.dtype()) {
        return Err(TapeError::Batch {
            problem: format!(
                "output {k} of slice {b} is {}{:?}, slice 0's {}{:?}; they cannot be stacked",
                t.dtype(),
                t.shape(),
                first.dtype(),
                first.shape()
            ),
        });
    }
    let parts: Vec<&Data> = hosted.iter().map(|t| t.data()).collect();
    let data = Data::concat(&parts).ok_or_else(|| TapeError::Batch { problem: format!("output {k}'s slices cannot be joined") })?;
    let mut shape = vec![slices.len()];
    shape.extend_from_slice(first.shape());
    Tensor::new(shape, data).map_err(|e| TapeError::Batch { problem: e.to_string() })
}
