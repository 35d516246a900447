//! Launches of any size on wgpu: a kernel that linearises its index over rows
//! (`gid.x + gid.y * num_workgroups.x * 64`) runs past the device's 65,535 workgroups per
//! dimension (4.2M invocations at 64 each): a 16M-sample windowed median equals the reference.
//! A flat kernel (x only) over the limit, and a tensor over the device's storage binding size,
//! are typed errors before any work. Conformance launches linear kernels in rows one
//! workgroup wide, so a kernel that linearises wrongly is rejected on small cases.

use crate::common;

use crate::median;

use op_runtime::conformance::{self, Class, ConformanceFailure};
use op_runtime::{op, BackendKind, CallOptions, Real, Scalar, Tensor};
use op_runtime::{BackendError, DispatchError};

/// Elementwise add whose linear launch forgets the workgroup size in its row width.
#[op(name = "test/broken/add_row_width", version = 1, signature(a: f32[n], b: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(1), backward = none,
     kernel(wgsl = "kernels/broken/add_row_width.wgsl", bindings(a: read, b: read, out: read_write, uniform(n)), threads = n),
     license = "MIT", generated_tests = false)]
pub fn add_row_width<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().zip(b).map(|(x, y)| *x + *y).collect()
}

/// Negation with a flat (x-only) kernel.
#[op(name = "test/launch/flat_neg", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = none,
     kernel(wgsl = "kernels/flat_neg.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n),
     license = "MIT")]
pub fn flat_neg<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| -*v).collect()
}

/// A deterministic signal with spikes, `n` samples.
fn signal(n: usize) -> Vec<f32> {
    let mut s: u32 = 0x9e37_79b9;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let spike = if s.is_multiple_of(41) { 8.0 } else { 0.0 };
            (i as f32 * 0.001).sin() + spike + (s % 1000) as f32 * 1e-4
        })
        .collect()
}

#[test]
fn a_16m_sample_median_on_wgpu_equals_the_reference() {
    if !common::wgpu_available() {
        return;
    }
    let h = op_runtime::register(&median::windowed_median::DECL).expect("registers");
    let n = 16 << 20;
    let w = 7u32;
    let x = Tensor::vector(signal(n));
    let groups = (n - w as usize + 1).div_ceil(64);
    assert!(groups > 65_535, "{groups} workgroups: past the per-dimension limit");
    let t = std::time::Instant::now();
    let got = h.call_with(&[&x], &[Scalar::U32(w)], CallOptions::on(BackendKind::Wgpu)).expect("runs on wgpu").output().expect("out");
    let gpu = t.elapsed();
    let t = std::time::Instant::now();
    let want = h.call_with(&[&x], &[Scalar::U32(w)], CallOptions::on(BackendKind::Reference)).expect("reference").output().expect("out");
    eprintln!("16M-sample median: wgpu {gpu:?}, reference {:?}", t.elapsed());
    let (g, r) = (got.as_slice::<f32>().expect("f32"), want.as_slice::<f32>().expect("f32"));
    assert_eq!(g.len(), n - w as usize + 1);
    let bad = g.iter().zip(r).position(|(a, b)| a.to_bits() != b.to_bits());
    assert_eq!(bad, None, "first differing window {bad:?}");
}

#[test]
fn a_flat_kernel_past_the_workgroup_limit_is_a_typed_error() {
    if !common::wgpu_available() {
        return;
    }
    let h = op_runtime::register(&flat_neg::DECL).expect("registers");
    let n = 65_536 * 64;
    let x = Tensor::vector(vec![1.0f32; n]);
    let err = h.call_with(&[&x], &[], CallOptions::on(BackendKind::Wgpu)).expect_err("refused");
    match &err {
        DispatchError::Execution { source: BackendError::TooLarge(m), .. } => {
            assert!(m.contains("num_workgroups"), "the error names the convention that lifts the limit: {m}")
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    // Within the limit it runs.
    let x = Tensor::vector(vec![1.0f32; 65_535 * 64]);
    let out = h.call_with(&[&x], &[], CallOptions::on(BackendKind::Wgpu)).expect("runs").output().expect("out");
    assert!(out.as_slice::<f32>().expect("f32").iter().all(|v| *v == -1.0));
}

#[test]
fn a_tensor_past_the_storage_binding_limit_is_a_typed_error() {
    if !common::wgpu_available() {
        return;
    }
    let engine = op_runtime::wgpu::WgpuEngine::shared().expect("engine");
    let limit = engine.raw().limits().max_storage_buffer_binding_size;
    let n = 64usize << 20;
    if (n as u64) * 4 <= limit {
        eprintln!("this adapter binds {limit} bytes: 64M samples fit; nothing to refuse");
        return;
    }
    let h = op_runtime::register(&median::windowed_median::DECL).expect("registers");
    let x = Tensor::vector(vec![0.5f32; n]);
    let err = h.call_with(&[&x], &[Scalar::U32(7)], CallOptions::on(BackendKind::Wgpu)).expect_err("refused");
    match &err {
        DispatchError::Execution { source: BackendError::TooLarge(m), .. } => {
            assert!(m.contains(&limit.to_string()), "the error names the device's binding limit: {m}")
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn a_wrong_row_width_is_rejected_by_conformance() {
    if !common::wgpu_available() {
        return;
    }
    let h = op_runtime::register(&add_row_width::DECL).expect("registers");
    match conformance::conform(&h, BackendKind::Wgpu) {
        Err(ConformanceFailure::Rejected(report)) => assert!(report.defect(&Class::Unwritten).is_some(), "{report}"),
        other => panic!("expected a rejection, got {other:?}"),
    }
}
