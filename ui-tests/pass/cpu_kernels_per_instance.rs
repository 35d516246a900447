//! Several `cpu(path, dtypes(...))` kernels serving disjoint instances: each instance runs its
//! own (here told apart by a marker each kernel adds, so the check sees which one ran).

use op_runtime::{op, BackendKind, CallOptions, DType, Real, Registry, Tensor};

/// Doubles.
#[op(
    name = "ui/double_per_instance", version = 1,
    signature<T: f32 | f64>(x: T[n]) -> T[n],
    category = elementwise, tolerance = ulp(1), backward = none,
    cpu(double_f32, dtypes(T: f32)),
    cpu(double_f64, dtypes(T: f64)),
    generated_tests = false,
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

/// The f32 instance's kernel; adds 100 so the run shows which kernel ran.
pub fn double_f32(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v + v + 100.0).collect()
}

/// The f64 instance's kernel; adds 200 so the run shows which kernel ran.
pub fn double_f64(x: &[f64]) -> Vec<f64> {
    x.iter().map(|v| v + v + 200.0).collect()
}

pub(crate) fn main() {
    let r = Registry::new();
    let h = r.register(&double::DECL).unwrap();
    for (d, marker) in [(DType::f32, 100.0), (DType::f64, 200.0)] {
        let x = Tensor::from_f64(d, vec![2], &[1.0, 2.5]).unwrap();
        let out = h.call_with(&[&x], &[], CallOptions::on(BackendKind::Cpu)).unwrap();
        assert_eq!(out.provenance.backend, BackendKind::Cpu);
        let y = out.output().unwrap();
        assert_eq!(y.dtype(), d);
        assert_eq!(y.data().to_f64_vec().unwrap(), vec![2.0 + marker, 5.0 + marker], "the {d} instance runs its own kernel");
    }
}
