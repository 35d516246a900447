//! Batching (vmap over a leading axis): one dispatch per slice with the kernel's own launch
//! geometry, outputs stacked; mismatched batches are typed errors; a batched tensor is never
//! silently folded into one launch.

use crate::common;

use crate::median;

use op_runtime::BatchError;
use op_runtime::{BackendKind, CallOptions, DispatchError, Registry, Scalar, Tensor};

fn median_handle() -> op_runtime::OpHandle {
    Registry::new().register(&median::windowed_median::DECL).unwrap()
}

/// Three rows of eight samples with a spike each.
fn rows() -> Tensor {
    let data: Vec<f32> = (0..24).map(|i| if i % 8 == 3 { 100.0 } else { (i % 5) as f32 }).collect();
    Tensor::from_vec([3, 8], data).unwrap()
}

fn per_slice_reference(x: &Tensor, w: u32) -> Vec<f32> {
    let v = x.as_slice::<f32>().unwrap();
    v.chunks(8).flat_map(|row| median::windowed_median::<f32>(row, w)).collect()
}

#[test]
fn batched_calls_run_once_per_slice_and_stack() {
    let h = median_handle();
    let x = rows();
    for backend in [BackendKind::Reference, BackendKind::Wgpu] {
        if backend == BackendKind::Wgpu && !common::wgpu_available() {
            continue;
        }
        let out = h.call_batched(&[&x], &[Scalar::U32(3)], CallOptions::on(backend)).unwrap();
        assert_eq!(out.outputs[0].shape(), &[3, 6]);
        assert_eq!(out.outputs[0].as_slice::<f32>().unwrap(), per_slice_reference(&x, 3).as_slice());
        assert_eq!(out.provenance.len(), 3, "one launch per slice");
        assert!(out.provenance.iter().all(|p| p.backend == backend));
    }
}

#[test]
fn folding_the_batch_would_give_plausible_wrong_numbers_so_it_never_happens() {
    let h = median_handle();
    let x = rows();
    // What a mis-batched launch would compute: one launch over the flattened rows, whose
    // windows straddle row boundaries.
    let flat = Tensor::vector(x.as_slice::<f32>().unwrap().to_vec());
    let folded = h.call_with(&[&flat], &[Scalar::U32(3)], CallOptions::on(BackendKind::Reference)).unwrap();
    let batched = h.call_batched(&[&x], &[Scalar::U32(3)], CallOptions::on(BackendKind::Reference)).unwrap();
    assert_ne!(folded.outputs[0].numel(), batched.outputs[0].numel());
    // Passing the batched tensor to the plain call is a typed rank error, never a fold.
    let e = h.call_with(&[&x], &[Scalar::U32(3)], CallOptions::default()).unwrap_err();
    assert!(matches!(e, DispatchError::InputRank { .. }), "{e}");
    assert!(e.to_string().contains("input `x` must have rank 1 ([n])"), "{e}");
}

#[test]
fn batch_errors_are_typed_and_name_the_op() {
    let r = Registry::with_builtins();
    let add = r.lookup("builtin/add").unwrap();
    let a = Tensor::from_vec([2, 3], vec![1.0f32; 6]).unwrap();
    let b = Tensor::from_vec([3, 3], vec![1.0f32; 9]).unwrap();
    let e = add.call_batched(&[&a, &b], &[], CallOptions::on(BackendKind::Reference)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "op `builtin/add@1`: input `b` has batch size 3, but `a` has 2; every input needs the same leading batch size"
    );
    let scalar = Tensor::from_vec(Vec::<usize>::new(), vec![1.0f32]).unwrap();
    let e = add.call_batched(&[&scalar, &scalar], &[], CallOptions::default()).unwrap_err();
    assert!(matches!(e, BatchError::NoBatchAxis { .. }), "{e}");
    // A slice that violates a constraint reports the slice and the constraint.
    let h = median_handle();
    let e = h.call_batched(&[&rows()], &[Scalar::U32(4)], CallOptions::on(BackendKind::Reference)).unwrap_err();
    assert_eq!(e.to_string(), "op `user/example/windowed_median@1`: batch slice 0 failed: op `user/example/windowed_median@1`: constraint `w % 2 == 1` is violated (w = 4)");
}

#[test]
fn an_empty_batch_has_the_stacked_shape() {
    let r = Registry::with_builtins();
    let mm = r.lookup("builtin/matmul").unwrap();
    let a = Tensor::zeros(op_runtime::DType::f32, [0, 2, 3]).unwrap();
    let b = Tensor::zeros(op_runtime::DType::f32, [0, 3, 4]).unwrap();
    let out = mm.call_batched(&[&a, &b], &[], CallOptions::default()).unwrap();
    assert_eq!(out.outputs[0].shape(), &[0, 2, 4]);
    assert!(out.provenance.is_empty());
}
