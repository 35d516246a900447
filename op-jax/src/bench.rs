//! Baselines for `bench/overhead.py` (issue 35's benchmark): an FFI handler that does nothing,
//! and the Rust call of an op timed in Rust, so the cost of the JAX path can be told apart from
//! XLA's own dispatch and from the op's work.

use crate::handler::{error, metadata};
use crate::xla;
use op_runtime::{Scalar, Tensor};
use std::ptr::null_mut;
use std::time::Instant;

/// `XLA_FFI_Handler` that answers XLA's metadata query like the op handlers and otherwise
/// returns at once: the floor under any FFI call.
pub extern "C" fn empty(frame: *mut xla::CallFrame) -> *mut xla::Error {
    if frame.is_null() {
        return null_mut();
    }
    // SAFETY: XLA passes a valid call frame; the metadata extension is checked as the op
    // handlers check it.
    unsafe {
        let f = &*frame;
        if !f.extension_start.is_null() && (*f.extension_start).type_ == xla::EXTENSION_METADATA {
            if let Err(e) = metadata(f.extension_start as *mut xla::MetadataExtension) {
                return error(frame, e);
            }
        }
    }
    null_mut()
}

/// Median seconds of `reps` calls of `h` (after one warm-up call), each through
/// `OpHandle::call` with the inputs already op-runtime tensors.
pub fn time_call(h: &op_runtime::OpHandle, inputs: &[Tensor], params: &[Scalar], reps: usize) -> Result<f64, String> {
    let refs: Vec<&Tensor> = inputs.iter().collect();
    h.call(&refs, params).map_err(|e| e.to_string())?;
    let mut times = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        let out = h.call(&refs, params).map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64());
        drop(out);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}
