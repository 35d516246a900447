//! Batching (vmap over a leading axis): every tensor input carries one extra leading axis of the
//! same size, the op is dispatched once per slice with its own validation and launch geometry,
//! and the outputs are stacked. The batch is never folded into one launch sized for one slice
//! (windows of a median would then cross slice boundaries: a plausible, wrong number).

use crate::error::DispatchError;
use crate::op::RegisteredOp;
use crate::provenance::ProvenanceEntry;
use crate::registry::dispatch::CallOptions;
use crate::registry::OpHandle;
use crate::tensor::{Data, Scalar, Tensor};
use op_contract::contract::DType;
use thiserror::Error;

/// Errors of a batched call; every variant names the op.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum BatchError {
    /// The op has no tensor input to carry a batch axis.
    #[error("op `{op}` has no tensor input, so there is no axis to batch over")]
    NoTensorInput {
        /// The op's `name@version`.
        op: String,
    },
    /// Batched calls slice and stack on the host: a device tensor is refused (no implicit copy).
    #[error("op `{op}`: batched input `{input}` lives on {placement}; batched calls take host tensors (call `to_host()` first)")]
    Placement {
        /// The op's `name@version`.
        op: String,
        /// The input's name.
        input: String,
        /// Where it lives.
        placement: String,
    },
    /// An input has no leading axis to batch over.
    #[error("op `{op}`: batched input `{input}` is rank 0; a batched input needs a leading batch axis")]
    NoBatchAxis {
        /// The op's `name@version`.
        op: String,
        /// The input's name.
        input: String,
    },
    /// Inputs disagree on the batch size.
    #[error(
        "op `{op}`: input `{input}` has batch size {found}, but `{first}` has {expected}; every input needs the same leading batch size"
    )]
    BatchMismatch {
        /// The op's `name@version`.
        op: String,
        /// The first input (which fixed the batch size).
        first: String,
        /// Its batch size.
        expected: usize,
        /// The input that disagrees.
        input: String,
        /// Its batch size.
        found: usize,
    },
    /// One slice failed (validation, backend or execution); the slice index is kept.
    #[error("op `{op}`: batch slice {index} failed: {source}")]
    Slice {
        /// The op's `name@version`.
        op: String,
        /// The failing slice.
        index: usize,
        /// The dispatch error of that slice.
        source: Box<DispatchError>,
    },
    /// Slices produced outputs of different shapes or dtypes, which cannot be stacked.
    #[error("op `{op}`: output {output} of slice {index} has shape {found:?}, slice 0 had {expected:?}; outputs cannot be stacked")]
    Ragged {
        /// The op's `name@version`.
        op: String,
        /// The output index.
        output: usize,
        /// The slice that disagrees.
        index: usize,
        /// Slice 0's output shape.
        expected: Vec<usize>,
        /// This slice's output shape.
        found: Vec<usize>,
    },
}

/// The result of a batched call.
#[derive(Debug)]
pub struct BatchOutcome {
    /// Outputs stacked along a new leading axis of the batch size.
    pub outputs: Vec<Tensor>,
    /// One provenance entry per slice (one launch each).
    pub provenance: Vec<ProvenanceEntry>,
}

/// Slice `b` of a tensor along its leading axis.
fn slice0(t: &Tensor, b: usize) -> Option<Tensor> {
    let inner: Vec<usize> = t.shape().get(1..)?.to_vec();
    let n = crate::tensor::checked_numel(&inner)?;
    let data = t.data().slice_range(b.checked_mul(n)?, b.checked_mul(n)?.checked_add(n)?)?;
    Tensor::new(inner, data).ok()
}

impl OpHandle {
    /// Runs the op once per slice of a leading batch axis shared by every tensor input
    /// (parameters are shared by all slices) and stacks the outputs.
    pub fn call_batched(&self, inputs: &[&Tensor], params: &[Scalar], opts: CallOptions) -> Result<BatchOutcome, BatchError> {
        let op = self.op();
        let names: Vec<&str> = op.contract.signature.inputs().map(|t| t.name.as_str()).collect();
        if names.is_empty() {
            return Err(BatchError::NoTensorInput { op: op.id.clone() });
        }
        if let Some((t, name)) = inputs.iter().zip(&names).find(|(t, _)| !t.is_host()) {
            return Err(BatchError::Placement { op: op.id.clone(), input: name.to_string(), placement: t.placement().to_string() });
        }
        let batch = batch_size(&op.id, &names, inputs)?;
        if batch == 0 {
            return empty_batch(&op, inputs, params);
        }
        let mut per_output: Vec<Vec<Tensor>> = Vec::new();
        let mut provenance = Vec::with_capacity(batch);
        for b in 0..batch {
            let slices: Vec<Tensor> = inputs
                .iter()
                .map(|t| slice0(t, b))
                .collect::<Option<_>>()
                .ok_or_else(|| BatchError::NoBatchAxis { op: op.id.clone(), input: names[0].to_string() })?;
            let refs: Vec<&Tensor> = slices.iter().collect();
            let outcome = self.call_with(&refs, params, opts).map_err(|source| BatchError::Slice {
                op: op.id.clone(),
                index: b,
                source: Box::new(source),
            })?;
            per_output.resize_with(outcome.outputs.len(), Vec::new);
            for (k, t) in outcome.outputs.into_iter().enumerate() {
                if let Some(first) = per_output[k].first() {
                    if first.shape() != t.shape() || first.dtype() != t.dtype() {
                        let (expected, found) = (first.shape().to_vec(), t.shape().to_vec());
                        return Err(BatchError::Ragged { op: op.id.clone(), output: k, index: b, expected, found });
                    }
                }
                per_output[k].push(t);
            }
            provenance.push(outcome.provenance);
        }
        let outputs = per_output.into_iter().enumerate().map(|(k, slices)| stack(&op.id, k, batch, &slices)).collect::<Result<_, _>>()?;
        Ok(BatchOutcome { outputs, provenance })
    }
}

/// The leading axis every input shares (1 when there are too few inputs: dispatch of slice 0
/// then reports the arity error).
fn batch_size(id: &str, names: &[&str], inputs: &[&Tensor]) -> Result<usize, BatchError> {
    let name = |i: usize| names.get(i).copied().unwrap_or("?").to_string();
    let mut batch = None;
    for (i, t) in inputs.iter().enumerate() {
        let Some(&b) = t.shape().first() else {
            return Err(BatchError::NoBatchAxis { op: id.to_string(), input: name(i) });
        };
        match batch {
            None => batch = Some(b),
            Some(expected) if expected != b => {
                return Err(BatchError::BatchMismatch { op: id.to_string(), first: name(0), expected, input: name(i), found: b });
            }
            Some(_) => {}
        }
    }
    Ok(batch.unwrap_or(1))
}

/// A batch of size 0: no slice runs; the outputs' shapes still follow from one slice's signature.
fn empty_batch(op: &RegisteredOp, inputs: &[&Tensor], params: &[Scalar]) -> Result<BatchOutcome, BatchError> {
    let slice = |source| BatchError::Slice { op: op.id.clone(), index: 0, source: Box::new(source) };
    // An op with dtype variables: the instance the inputs bind (its outputs' dtypes).
    let op: &RegisteredOp = op.member_for(inputs, params).map_err(slice)?.map_or(op, |m| m.as_ref());
    let operands: Vec<(DType, &[usize])> = inputs.iter().map(|t| (t.dtype(), &t.shape()[1..])).collect();
    let bound = op.plan.validate(&operands, params, None).map_err(|source| BatchError::Slice {
        op: op.id.clone(),
        index: 0,
        source: Box::new(source),
    })?;
    let mut outputs = Vec::new();
    for (k, (o, s)) in op.contract.signature.outputs.iter().zip(&bound.out_shapes).enumerate() {
        let mut shape = vec![0];
        shape.extend_from_slice(s);
        outputs.push(Tensor::zeros(o.dtype, shape).map_err(|_| BatchError::Ragged {
            op: op.id.clone(),
            output: k,
            index: 0,
            expected: s.to_vec(),
            found: Vec::new(),
        })?);
    }
    Ok(BatchOutcome { outputs, provenance: Vec::new() })
}

/// Output `k`'s slices stacked along a new leading axis of size `batch`.
fn stack(id: &str, k: usize, batch: usize, slices: &[Tensor]) -> Result<Tensor, BatchError> {
    let mut shape = vec![batch];
    shape.extend_from_slice(slices[0].shape());
    let ragged =
        |shape: &[usize]| BatchError::Ragged { op: id.to_string(), output: k, index: 0, expected: shape.to_vec(), found: Vec::new() };
    let parts: Vec<&Data> = slices.iter().map(|t| t.data()).collect();
    let data = Data::concat(&parts).ok_or_else(|| ragged(&shape))?;
    Tensor::new(shape.clone(), data).map_err(|_| ragged(&shape))
}
