use op_runtime::{op, BackendKind, CallOptions, DType, Real, Registry, Tensor};

/// Copies `x` and says which element is largest (an index output stays `u32`).
#[op(
    name = "ui/double_argmax", version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n] where n >= 1) -> (y: T[n], at: u32[]),
    category = selection, tolerance = exact, backward = none,
    cpu(fast, dtypes(T: f32)),
    kernel(wgsl = "../kernels/generic_double_argmax.wgsl", dtypes(T: f32 | f16), bindings(x: read, y: read_write, at: read_write, uniform(n)), threads = n),
)]
pub fn double_argmax<T: Real>(x: &[T]) -> (Vec<T>, Vec<u32>) {
    let mut at = 0;
    for (i, v) in x.iter().enumerate() {
        if v.total_cmp(&x[at]) == std::cmp::Ordering::Greater {
            at = i;
        }
    }
    (x.to_vec(), vec![at as u32])
}

/// The f32 instance's kernel (a generic function, instantiated at the instance's type).
pub fn fast<T: Real>(x: &[T]) -> (Vec<T>, Vec<u32>) {
    double_argmax(x)
}

pub(crate) fn main() {
    let r = Registry::new();
    let h = r.register(&double_argmax::DECL).unwrap();
    for d in [DType::f16, DType::bf16, DType::f32, DType::f64] {
        let x = Tensor::from_f64(d, vec![3], &[1.0, 3.0, 2.0]).unwrap();
        let out = h.call_with(&[&x], &[], CallOptions::on(BackendKind::Reference)).unwrap().outputs;
        assert_eq!(out[0].dtype(), d);
        assert_eq!(out[1].as_slice::<u32>(), Some(&[1u32][..]));
    }
}
