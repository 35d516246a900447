//! A CUDA kernel with an `#include "common.cuh"` header: parameters bind in descriptor order,
//! and the header's bytes are part of the identity.

use op_runtime::{op, Real};

/// Doubles every element.
#[op(
    name = "ui/pass/double_cuda", version = 1,
    signature(x: f32[n]) -> f32[n],
    category = elementwise, tolerance = ulp(0),
    backward = none,
    kernel(cuda = "../kernels/double.cu", entry = "double_kernel",
           bindings(x: read, out: read_write, uniform(n)), threads = n, block = 128),
)]
pub fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

pub(crate) fn main() {
    let op = op_runtime::RegisteredOp::load(&double::DECL).expect("the declaration loads");
    println!("{} {}", op.id(), op.hash_hex());
    let k = &double::DECL.kernels[0];
    assert_eq!(k.entry, "double_kernel");
    assert_eq!(k.headers.len(), 1);
    assert!(k.headers[0].0.ends_with("common.cuh"));
}
