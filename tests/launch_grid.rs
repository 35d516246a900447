//! 2-D and 3-D launches: `threads = (x, y[, z])` launches `ceil(threads / workgroup)`
//! workgroups along each dimension of a WGSL kernel's `@workgroup_size(x, y[, z])` (CUDA:
//! blocks of `block = (x, y[, z])`). A transpose in 8 x 8 workgroups and an elementwise op
//! over a 3-D launch conform and equal their references on shapes that are not multiples of
//! the workgroup; a transpose whose guard swaps the extents is rejected.
//!
//! wgpu tests skip with a printed reason when no adapter exists, unless
//! `OP_REQUIRE_GPU_ADAPTER=1` (CI); CUDA ones unless `OP_REQUIRE_CUDA=1` (the device check).

mod common;

use op_runtime::conformance;
use op_runtime::{op, BackendKind, CallOptions, Real, Tensor};

/// `x` of `m` rows and `n` columns, transposed.
fn transposed<T: Real>(x: &[T], m: usize, n: usize) -> Vec<T> {
    (0..n * m).map(|k| x[(k % m) * n + k / m]).collect()
}

/// Transpose over a 2-D launch (WGSL 8 x 8 workgroups, CUDA 16 x 16 blocks).
#[op(name = "test/grid/transpose", version = 1,
     signature(x: f32[m, n]) -> f32[n, m],
     category = selection, tolerance = exact, backward = none,
     kernel(wgsl = "kernels/transpose.wgsl", bindings(x: read, out: read_write, uniform(m, n)), threads = (n, m)),
     kernel(cuda = "kernels/transpose.cu", entry = "transpose", bindings(x: read, out: read_write, uniform(m, n)), threads = (n, m), block = (16, 16)),
     license = "MIT")]
pub fn transpose<T: Real>(x: &[T], m: usize, n: usize) -> Vec<T> {
    transposed(x, m, n)
}

/// `2 x + 1` over a 3-D launch (4 x 4 x 4 workgroups).
#[op(name = "test/grid/affine3", version = 1,
     signature(x: f32[a, b, c]) -> f32[a, b, c],
     category = elementwise, tolerance = ulp(1), backward = none,
     kernel(wgsl = "kernels/affine3.wgsl", bindings(x: read, out: read_write, uniform(a, b, c)), threads = (c, b, a)),
     license = "MIT")]
pub fn affine3<T: Real>(x: &[T]) -> Vec<T> {
    let (one, two) = (T::one(), T::from_f64(2.0));
    x.iter().map(|v| two * *v + one).collect()
}

/// Deliberately broken transpose: its guard swaps the extents.
#[op(name = "test/broken/transpose_swapped_guard", version = 1,
     signature(x: f32[m, n]) -> f32[n, m],
     category = selection, tolerance = exact, backward = none, generated_tests = false,
     kernel(wgsl = "kernels/broken/transpose_swapped_guard.wgsl", bindings(x: read, out: read_write, uniform(m, n)), threads = (n, m)),
     license = "MIT")]
pub fn transpose_swapped_guard<T: Real>(x: &[T], m: usize, n: usize) -> Vec<T> {
    transposed(x, m, n)
}

#[test]
fn a_2d_launch_transposes_a_matrix_that_is_no_multiple_of_the_workgroup() {
    let h = op_runtime::register(&transpose::DECL).expect("registers");
    let (m, n) = (300, 77);
    let x: Vec<f32> = (0..m * n).map(|k| k as f32 * 0.5 - 3.0).collect();
    let xt = Tensor::from_vec(vec![m, n], x.clone()).expect("tensor");
    let want = transposed(&x, m, n);
    for (kind, here) in [(BackendKind::Wgpu, common::wgpu_available()), (BackendKind::Cuda, common::cuda_available())] {
        if !here {
            continue;
        }
        let out = h.call_with(&[&xt], &[], CallOptions::on(kind)).expect("runs").output().expect("one output");
        assert_eq!(out.shape(), &[n, m]);
        assert_eq!(out.as_slice::<f32>().expect("f32"), want.as_slice(), "{kind}");
        let receipt = conformance::conform(&h, kind).unwrap_or_else(|e| panic!("{kind}: {e}"));
        eprintln!("test/grid/transpose conforms on {kind}: {} cases", receipt.cases);
    }
}

#[test]
fn a_3d_launch_covers_every_element() {
    let h = op_runtime::register(&affine3::DECL).expect("registers");
    if !common::wgpu_available() {
        return;
    }
    let (a, b, c) = (5, 9, 13);
    let x: Vec<f32> = (0..a * b * c).map(|k| k as f32).collect();
    let xt = Tensor::from_vec(vec![a, b, c], x.clone()).expect("tensor");
    let out = h.call_with(&[&xt], &[], CallOptions::on(BackendKind::Wgpu)).expect("runs").output().expect("one output");
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(out.as_slice::<f32>().expect("f32"), want.as_slice());
    let receipt = conformance::conform(&h, BackendKind::Wgpu).expect("conforms");
    eprintln!("test/grid/affine3 conforms on wgpu: {} cases", receipt.cases);
}

#[test]
fn a_2d_kernel_whose_guard_swaps_the_extents_is_rejected() {
    if let Some(report) = common::wgpu_rejection(&transpose_swapped_guard::DECL) {
        assert!(report.to_string().contains("test/broken/transpose_swapped_guard"), "{report}");
    }
}

#[test]
fn a_2d_launch_on_device_tensors_equals_the_host_call() {
    let Some((engine, r)) = common::private_wgpu() else { return };
    let h = r.register(&transpose::DECL).expect("registers");
    let (m, n) = (129, 65);
    let x: Vec<f32> = (0..m * n).map(|k| (k as f32).sqrt()).collect();
    let xt = Tensor::from_vec(vec![m, n], x.clone()).expect("tensor");
    let dx = xt.to_device(engine).expect("upload");
    let out = h.call_with(&[&dx], &[], CallOptions::default()).expect("runs").output().expect("one output");
    assert_eq!(out.shape(), &[n, m]);
    assert_eq!(out.to_host().expect("read back").as_slice::<f32>().expect("f32"), transposed(&x, m, n).as_slice());
}
