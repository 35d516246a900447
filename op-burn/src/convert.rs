//! Moving elements between burn's `NdArray` float tensors and op-runtime tensors (`f32` and
//! `f64`, read in logical row-major order whatever the array's strides), and sorting a burn
//! dispatch tensor into what the adapter serves: an `NdArray` float tensor, plain or under
//! autodiff. Everything else is a typed error; nothing is converted.

use crate::error::Error;
use burn_autodiff::Autodiff;
use burn_backend::tensor::FloatTensor;
use burn_backend::{TensorData, TensorMetadata};
use burn_dispatch::{BackendTensor, DispatchAutodiffContext, DispatchTensor, DispatchTensorKind, GradientCheckpointingStrategy};
use burn_ndarray::{NdArray, NdArrayTensor};
use op_runtime::{Data, Tensor};

/// An autodiff float tensor of burn's `NdArray` backend.
pub(crate) type AdTensor = FloatTensor<Autodiff<NdArray>>;

/// What the call reads a tensor for, for error messages: the op and the tensor's name.
pub(crate) struct Site<'a> {
    pub op: &'a str,
    pub what: &'a str,
}

impl Site<'_> {
    pub(crate) fn dtype_err(&self, dtype: String) -> Error {
        Error::UnsupportedDType { op: self.op.to_string(), what: self.what.to_string(), dtype }
    }
}

/// A burn input as the adapter serves it.
pub(crate) enum Input {
    /// An `NdArray` float tensor without autodiff.
    Plain(NdArrayTensor),
    /// An `NdArray` float tensor under autodiff (tracked or not), with its checkpointing
    /// strategy.
    Autodiff(AdTensor, GradientCheckpointingStrategy),
}

impl Input {
    /// The backend tensor holding the elements.
    pub(crate) fn primitive(&self) -> &NdArrayTensor {
        match self {
            Input::Plain(t) => t,
            Input::Autodiff(t, _) => t.primitive(),
        }
    }
}

/// Sorts a dispatch tensor: an `NdArray` float tensor (plain or autodiff) of dtype `f32` or
/// `f64`, else `Error::Device` (another backend) or `Error::UnsupportedDType`.
pub(crate) fn sort(site: &Site<'_>, t: DispatchTensor) -> Result<Input, Error> {
    let dtype = t.dtype();
    let input = match (t.kind, t.autodiff) {
        (DispatchTensorKind::NdArray(BackendTensor::Float(p)), DispatchAutodiffContext::Disabled) => Input::Plain(p),
        (DispatchTensorKind::Autodiff(inner), context) => match (*inner, context) {
            (DispatchTensorKind::NdArray(BackendTensor::Autodiff(a)), DispatchAutodiffContext::Enabled(s)) => Input::Autodiff(a, s),
            (DispatchTensorKind::NdArray(_), _) => return Err(site.dtype_err(format!("{dtype:?} (not a float tensor)"))),
            // Another backend's tensor under autodiff (or an autodiff kind nested twice, which
            // burn does not make). The allow is for builds where nothing else is left.
            #[allow(unreachable_patterns)]
            (other, _) => return Err(device_err(site, &other)),
        },
        (DispatchTensorKind::NdArray(_), _) => return Err(site.dtype_err(format!("{dtype:?} (not a float tensor)"))),
        // Another backend's tensor: a variant burn's features add (flex, cubecl's wgpu or CUDA,
        // tch, ...). Unreachable where burn-dispatch has only `ndarray` and `autodiff`, as in the
        // library's own dependency tree (hence the allow); op-burn's tests add `flex` through a
        // dev-dependency and reach it (tests/burn.rs).
        #[allow(unreachable_patterns)]
        (other, _) => return Err(device_err(site, &other)),
    };
    match input.primitive() {
        NdArrayTensor::F32(_) | NdArrayTensor::F64(_) => Ok(input),
        other => Err(site.dtype_err(format!("{:?}", other.dtype()))),
    }
}

fn device_err(site: &Site<'_>, t: &DispatchTensorKind) -> Error {
    Error::Device { op: site.op.to_string(), what: site.what.to_string(), device: format!("{:?}", t.device()) }
}

/// The elements of an `NdArray` float tensor as a runtime tensor (one copy, in logical
/// row-major order: a strided or broadcast array is read element by element, never misread).
/// `shape` where given (the same elements under the runtime's shape: a scalar's cotangent
/// arrives as burn's `[1]`), else the array's own.
pub(crate) fn to_runtime(site: &Site<'_>, t: &NdArrayTensor, shape: Option<&[usize]>) -> Result<Tensor, Error> {
    let made = match t {
        NdArrayTensor::F32(s) => {
            let v = s.view();
            Tensor::from_vec(shape.unwrap_or(v.shape()).to_vec(), v.iter().copied().collect::<Vec<f32>>())
        }
        NdArrayTensor::F64(s) => {
            let v = s.view();
            Tensor::from_vec(shape.unwrap_or(v.shape()).to_vec(), v.iter().copied().collect::<Vec<f64>>())
        }
        other => return Err(site.dtype_err(format!("{:?}", other.dtype()))),
    };
    made.map_err(|e| Error::Tensor { op: site.op.to_string(), source: e })
}

/// A host runtime tensor as an `NdArray` float tensor of `shape` (its own shape, or `[1]` for a
/// rank-0 one), moving its elements. Another dtype is `Error::UnsupportedDType`; a device tensor
/// `Error::Device`.
pub(crate) fn from_runtime(site: &Site<'_>, t: Tensor, shape: Vec<usize>) -> Result<NdArrayTensor, Error> {
    if !t.is_host() {
        return Err(Error::Device { op: site.op.to_string(), what: site.what.to_string(), device: t.placement().to_string() });
    }
    let data = match t.into_data() {
        Data::F32(v) => TensorData::new(v, shape),
        Data::F64(v) => TensorData::new(v, shape),
        other => return Err(site.dtype_err(other.dtype().to_string())),
    };
    Ok(NdArrayTensor::from_data(data))
}

/// The burn shape of a runtime shape: burn has no rank-0 tensor in its API, so a scalar
/// output is a one-element rank-1 tensor.
pub(crate) fn burn_shape(shape: &[usize]) -> Vec<usize> {
    match shape.is_empty() {
        true => vec![1],
        false => shape.to_vec(),
    }
}

/// A plain `NdArray` float tensor as a dispatch tensor.
pub(crate) fn plain(t: NdArrayTensor) -> DispatchTensor {
    DispatchTensor { kind: DispatchTensorKind::NdArray(BackendTensor::Float(t)), autodiff: DispatchAutodiffContext::Disabled }
}

/// An autodiff `NdArray` float tensor as a dispatch tensor.
pub(crate) fn autodiff(t: AdTensor, strategy: GradientCheckpointingStrategy) -> DispatchTensor {
    DispatchTensor {
        kind: DispatchTensorKind::Autodiff(Box::new(DispatchTensorKind::NdArray(BackendTensor::Autodiff(t)))),
        autodiff: DispatchAutodiffContext::Enabled(strategy),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use op_runtime::device::{DeviceId, DeviceStorage};
    use op_runtime::{BackendKind, DType, TensorError};
    use std::sync::Arc;

    /// Two `f32` in a GPU backend's memory, as `Tensor::on_device` takes them (what a wgpu or
    /// CUDA kernel's resident output is). Reading it back panics: the refusal must come before
    /// any copy.
    #[derive(Debug)]
    struct Resident;
    impl DeviceStorage for Resident {
        fn device(&self) -> DeviceId {
            DeviceId { backend: BackendKind::Wgpu, instance: 7 }
        }
        fn bytes(&self) -> u64 {
            8
        }
        fn read(&self) -> Result<Vec<u8>, TensorError> {
            panic!("the adapter read a device tensor back (an implicit copy)")
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    #[test]
    fn a_runtime_tensor_on_a_device_is_refused_naming_the_op_and_the_tensor() {
        let site = Site { op: "test/op@1", what: "output 0" };
        let t = Tensor::on_device(DType::f32, [2], Arc::new(Resident)).expect("a device tensor");
        let placement = t.placement().to_string();
        match from_runtime(&site, t, vec![2]) {
            Err(Error::Device { op, what, device }) => {
                assert_eq!((op.as_str(), what.as_str()), ("test/op@1", "output 0"));
                assert_eq!(device, placement);
                assert!(device.contains("wgpu") && device.contains("#7"), "{device}");
            }
            Err(other) => panic!("expected Error::Device, got {other:?}"),
            Ok(_) => panic!("expected Error::Device, got a tensor"),
        }
        // The same shape on the host is served.
        let host = from_runtime(&site, Tensor::vector(vec![1.0f32, 2.0]), vec![2]).expect("a host tensor");
        assert!(matches!(host, NdArrayTensor::F32(_)));
    }
}
