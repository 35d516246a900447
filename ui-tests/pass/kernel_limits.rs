//! A WGSL kernel whose workgroup (512) is above WebGPU's default limits declares the limits it
//! needs with `limits(...)`; it then runs only on devices that allow it.

use op_runtime::{op, Real};

#[op(
    name = "ui/test/double_wide", version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise, tolerance = ulp(1), backward = none,
    kernel(wgsl = "../kernels/wide_double.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n,
        limits(max_compute_invocations_per_workgroup = 512, max_compute_workgroup_size_x = 512)),
    generated_tests = false,
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

pub(crate) fn main() {
    assert_eq!(double(&[1.5f32]), vec![3.0f32]);
}
