//! Calling a registered op on arrays: `handle.call_nd(&[&x.view()], &params)` copies each array
//! into a tensor (a tensor owns its storage), dispatches through the registry, and hands the
//! outputs back as arrays without copying them. The caller never names a `Tensor`.

use crate::convert::{self, NdElement};
use crate::error::Error;
use ndarray::{ArrayBase, ArrayD, ArrayViewD, Dimension};
use op_runtime::provenance::ProvenanceEntry;
use op_runtime::{CallOptions, DType, OpHandle, Scalar, Tensor};

/// An array or view a call takes as a tensor input, of any element type and dimension.
pub trait NdInput {
    /// A copy of its elements as a tensor, in logical order.
    fn to_tensor(&self) -> Result<Tensor, Error>;
}

impl<T: NdElement, S: ndarray::Data<Elem = T>, D: Dimension> NdInput for ArrayBase<S, D> {
    fn to_tensor(&self) -> Result<Tensor, Error> {
        convert::copy_to_tensor(self)
    }
}

/// The outputs of a call through arrays, and its provenance.
#[derive(Debug)]
pub struct NdOutcome {
    op: String,
    outputs: Vec<Tensor>,
    /// What ran: op, content hash, backend, device.
    pub provenance: ProvenanceEntry,
}

impl NdOutcome {
    /// The number of outputs.
    pub fn len(&self) -> usize {
        self.outputs.len()
    }

    /// Whether the op has no output.
    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }

    /// The dtype of output `k`.
    pub fn dtype(&self, k: usize) -> Result<DType, Error> {
        self.get(k).map(Tensor::dtype)
    }

    fn get(&self, k: usize) -> Result<&Tensor, Error> {
        self.outputs.get(k).ok_or_else(|| Error::NoOutput { op: self.op.clone(), outputs: self.outputs.len(), index: k })
    }

    /// Output `k` borrowed as an array view (no copy); another dtype than `T` is `Error::DType`.
    pub fn view<T: NdElement>(&self, k: usize) -> Result<ArrayViewD<'_, T>, Error> {
        convert::view_named(self.get(k)?, &format!("output {k} of op `{}`", self.op))
    }

    /// Every output as an owned array, without copying: each must hold `T` elements
    /// (`Error::DType` names the first that does not; use [`NdOutcome::view`] for mixed dtypes).
    pub fn into_arrays<T: NdElement>(self) -> Result<Vec<ArrayD<T>>, Error> {
        for (k, t) in self.outputs.iter().enumerate() {
            if t.dtype() != T::DTYPE {
                return Err(Error::DType { what: format!("output {k} of op `{}`", self.op), expected: T::DTYPE, found: t.dtype() });
            }
        }
        self.outputs.into_iter().map(|t| convert::into_array(t).map_err(Error::from)).collect()
    }

    /// The first output as an owned array, without copying.
    pub fn into_array<T: NdElement>(self) -> Result<ArrayD<T>, Error> {
        let op = self.op.clone();
        let n = self.outputs.len();
        self.into_arrays::<T>()?.into_iter().next().ok_or(Error::NoOutput { op, outputs: n, index: 0 })
    }
}

/// Calls through arrays, for [`OpHandle`].
pub trait CallNd {
    /// Calls the op on arrays or views (one per tensor input, in signature order, of any element
    /// types) with its scalar parameters; each input is copied into a tensor once, the outputs
    /// come back as arrays without a copy.
    fn call_nd(&self, inputs: &[&dyn NdInput], params: &[Scalar]) -> Result<NdOutcome, Error>;

    /// [`CallNd::call_nd`] with per-call options (e.g. a backend).
    fn call_nd_with(&self, inputs: &[&dyn NdInput], params: &[Scalar], options: CallOptions) -> Result<NdOutcome, Error>;
}

impl CallNd for OpHandle {
    fn call_nd(&self, inputs: &[&dyn NdInput], params: &[Scalar]) -> Result<NdOutcome, Error> {
        self.call_nd_with(inputs, params, CallOptions::default())
    }

    fn call_nd_with(&self, inputs: &[&dyn NdInput], params: &[Scalar], options: CallOptions) -> Result<NdOutcome, Error> {
        let tensors = inputs.iter().map(|a| a.to_tensor()).collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let out = self.call_with(&refs, params, options)?;
        Ok(NdOutcome { op: out.provenance.op.to_string(), outputs: out.outputs, provenance: out.provenance })
    }
}
