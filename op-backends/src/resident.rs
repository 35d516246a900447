//! What the GPU backends share about device tensors: finding a call's inputs in one device's
//! buffers (typed `Placement` errors otherwise), wrapping the buffers a launch left on the
//! device as the call's output tensors, and `Device::upload`'s rules (a tensor already there is
//! returned as is; one on another device is refused). Each backend supplies only its buffer
//! type and how to make one.

use op_core::backend::{BackendError, ExecRequest};
use op_core::device::{DeviceId, DeviceStorage, Placement};
use op_core::error::TensorError;
use op_core::tensor::Tensor;
use std::sync::Arc;

/// Every input of `req` as a buffer of type `B` on device `here`, or `Placement` naming the op
/// and the input: a host input among device ones, a tensor on another device or backend, or a
/// guarded (conformance) run, which takes host tensors only.
pub fn inputs_on<'r, B: DeviceStorage>(req: &ExecRequest<'r>, here: DeviceId) -> Result<Vec<&'r B>, BackendError> {
    let op = &req.op.id;
    let here = Placement::Device(here);
    if req.guard > 0 {
        return Err(BackendError::Placement(format!("op `{op}`: guarded (conformance) runs take host tensors only").into()));
    }
    let mut out = Vec::with_capacity(req.inputs.len());
    for (t, decl) in req.inputs.iter().zip(req.op.contract.signature.inputs()) {
        let name = &decl.name;
        let Some(s) = t.device_storage() else {
            return Err(BackendError::Placement(
                format!(
                    "op `{op}`: input `{name}` is on the host while other inputs are on {here}; a call takes all its tensors \
                 on one device (move it with `to_device`; no implicit copy)"
                )
                .into(),
            ));
        };
        match s.as_any().downcast_ref::<B>() {
            Some(b) if Placement::Device(s.device()) == here => out.push(b),
            _ => {
                return Err(BackendError::Placement(
                    format!(
                        "op `{op}`: input `{name}` lives on {}, but this call runs on {here}: move it through the host \
                     (`to_host`, then `to_device`); no implicit copy",
                        t.placement()
                    )
                    .into(),
                ))
            }
        }
    }
    Ok(out)
}

/// The call's outputs as device tensors: `made` holds the buffers a launch left on the device
/// for the outputs numbered `outs`, in order; every declared output must be among them.
pub fn device_outputs<B: DeviceStorage>(req: &ExecRequest<'_>, outs: Vec<usize>, made: Vec<B>) -> Result<Vec<Tensor>, BackendError> {
    let sig = &req.op.contract.signature;
    let mut result: Vec<Option<Tensor>> = vec![None; sig.outputs.len()];
    for (o, buf) in outs.into_iter().zip(made) {
        let shape = req.bound.out_shapes.get(o).ok_or_else(|| BackendError::Kernel(format!("output {o} has no shape").into()))?;
        let dtype = sig.outputs.get(o).ok_or_else(|| BackendError::Kernel(format!("output {o} is not declared").into()))?.dtype;
        let t =
            Tensor::on_device(dtype, shape.to_vec(), Arc::new(buf)).map_err(|e| BackendError::Kernel(format!("output {o}: {e}").into()))?;
        result[o] = Some(t);
    }
    result
        .into_iter()
        .enumerate()
        .map(|(o, t)| t.ok_or_else(|| BackendError::Kernel(format!("output {o} was not produced").into())))
        .collect()
}

/// `Device::upload` for device `me`: a tensor already there as is (no transfer), one on another
/// device refused, a host tensor's bytes handed to `make` (one counted transfer) and wrapped.
pub fn upload_to<B: DeviceStorage>(me: DeviceId, t: &Tensor, make: impl FnOnce(&[u8]) -> Result<B, String>) -> Result<Tensor, TensorError> {
    if let Some(s) = t.device_storage() {
        if s.device() == me {
            return Ok(t.clone());
        }
        let reason = format!("the tensor lives on {}: move it to the host with `to_host()` first (no implicit copy)", s.device());
        return Err(TensorError::Transfer { device: Placement::Device(me).to_string(), reason });
    }
    let bytes = t.data().to_le_bytes();
    let buffer = make(&bytes).map_err(|reason| TensorError::Transfer { device: me.to_string(), reason })?;
    Tensor::on_device(t.dtype(), t.shape().to_vec(), Arc::new(buffer))
}
