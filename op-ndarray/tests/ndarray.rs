//! The ndarray adapter: standard-layout arrays move into tensors and back without a copy
//! (pointer equality), a transposed array is refused whole or copied in logical order on
//! request, views borrow tensors, and a call through arrays equals the call through tensors.

use ndarray::{array, s, Array, Array2, ArrayD, IxDyn};
use op_ndarray::{copy_to_tensor, into_array, into_tensor, view_of, CallNd, Error, NdElement};
use op_runtime::device::{DeviceId, DeviceStorage};
use op_runtime::TensorError;
use op_runtime::{bf16, f16, BackendKind, DType, Scalar, Tensor};
use std::sync::Arc;

fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// An owned array moves into a tensor and back out as the same allocation.
fn round_trip<T: NdElement + PartialEq>(a: ArrayD<T>) {
    let (ptr, want) = (a.as_ptr(), a.clone());
    let t = ok(into_tensor(a));
    assert_eq!((t.dtype(), t.shape()), (T::DTYPE, want.shape()));
    assert_eq!(ok(t.try_slice::<T>()).as_ptr(), ptr, "{}: into_tensor copied", T::DTYPE);
    assert_eq!(ok(view_of::<T>(&t)).as_ptr(), ptr, "{}: view_of copied", T::DTYPE);
    let back = ok(into_array::<T>(t));
    assert_eq!(back.as_ptr(), ptr, "{}: into_array copied", T::DTYPE);
    assert_eq!(back, want);
}

fn shaped<T: NdElement>(shape: &[usize], f: impl Fn(usize) -> T) -> ArrayD<T> {
    let n = shape.iter().product();
    ok(ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(f).collect()))
}

#[test]
fn standard_layout_round_trips_without_a_copy() {
    round_trip(shaped(&[3, 4], |i| i as f32 * 0.5));
    round_trip(shaped(&[2, 3, 5], |i| i as f64 - 7.0));
    round_trip(shaped(&[7], |i| f16::from_f32(i as f32)));
    round_trip(shaped(&[2, 2], |i| bf16::from_f32(i as f32)));
    round_trip(shaped(&[4, 1], |i| i as i32 - 2));
    round_trip(shaped(&[5], |i| i % 2 == 0));
    round_trip(shaped(&[], |_| 3.0f32)); // rank 0
    round_trip(shaped(&[0, 3], |i| i as u8)); // no elements
}

#[test]
fn a_window_sliced_in_place_moves_in_without_a_new_allocation() {
    let mut a: Array2<f32> = Array::from_shape_fn((4, 3), |(i, j)| (i * 3 + j) as f32);
    let base = a.as_ptr();
    a.slice_collapse(s![1.., ..]);
    assert_ne!(a.as_ptr(), base, "the window starts past its allocation's first element");
    let t = ok(into_tensor(a));
    assert_eq!(ok(t.try_slice::<f32>()), &[3.0f32, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0][..]);
    assert_eq!(ok(t.try_slice::<f32>()).as_ptr(), base, "the elements moved to the front of the same allocation");
}

#[test]
fn a_transposed_array_is_refused_whole_or_copied_on_request() {
    let a: Array2<f32> = Array::from_shape_fn((2, 3), |(i, j)| (10 * i + j) as f32);
    let at = a.clone().reversed_axes(); // owned, shape [3, 2], column-major
    let ptr = at.as_ptr();
    let refused = into_tensor(at).expect_err("a transposed array is not in standard layout");
    assert!(
        matches!(refused.error, Error::NotStandard { ref shape, ref strides } if shape == &[3, 2] && strides == &[1, 3]),
        "{}",
        refused.error
    );
    assert!(refused.to_string().contains("copy_to_tensor"), "{refused}");
    let at = refused.into_inner();
    assert_eq!((at.as_ptr(), at.shape()), (ptr, &[3, 2][..]), "the refused array comes back unharmed");
    // The explicit copy reads the logical order, for the owned array and for a view alike.
    for t in [ok(copy_to_tensor(&at)), ok(copy_to_tensor(&a.t()))] {
        assert_eq!(t.shape(), &[3, 2]);
        assert_eq!(ok(t.try_slice::<f32>()), &[0.0f32, 10.0, 1.0, 11.0, 2.0, 12.0][..]);
    }
    // A standard view is copied too (a tensor cannot borrow), into a new allocation.
    let t = ok(copy_to_tensor(&a.view()));
    assert_ne!(ok(t.try_slice::<f32>()).as_ptr(), a.as_ptr());
    assert_eq!(ok(t.try_slice::<f32>()), a.as_slice().expect("standard"));
}

#[test]
fn tensors_of_another_dtype_or_on_a_device_are_refused_and_handed_back() {
    let t = Tensor::vector(vec![1.0f64, 2.0]);
    let ptr = ok(t.try_slice::<f64>()).as_ptr();
    let refused = into_array::<f32>(t).expect_err("f64 is not f32");
    assert!(matches!(refused.error, Error::DType { expected: DType::f32, found: DType::f64, .. }));
    assert_eq!(ok(refused.into_inner().try_slice::<f64>()).as_ptr(), ptr, "the refused tensor comes back unharmed");
    assert!(matches!(view_of::<i32>(&Tensor::vector(vec![1.0f32])), Err(Error::DType { .. })));

    #[derive(Debug)]
    struct Remote;
    impl DeviceStorage for Remote {
        fn device(&self) -> DeviceId {
            DeviceId { backend: BackendKind::Wgpu, instance: 7 }
        }
        fn bytes(&self) -> u64 {
            8
        }
        fn read(&self) -> Result<Vec<u8>, TensorError> {
            Ok(vec![0; 8])
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }
    let d = ok(Tensor::on_device(DType::f32, [2], Arc::new(Remote)));
    assert!(matches!(view_of::<f32>(&d), Err(Error::Device { .. })));
    let refused = into_array::<f32>(d).expect_err("a device tensor is not on the host");
    assert!(matches!(refused.error, Error::Device { .. }), "{}", refused.error);
    assert!(!refused.into_inner().is_host());
}

#[test]
fn a_call_through_arrays_equals_the_call_through_tensors() {
    let reg = op_runtime::registry();
    let matmul = ok(reg.lookup("builtin/matmul"));
    let a: Array2<f32> = Array::from_shape_fn((3, 4), |(i, j)| ((i * 4 + j) as f32).sin());
    let b: Array2<f32> = Array::from_shape_fn((5, 4), |(i, j)| ((i * 4 + j) as f32).cos());
    // `b.t()` is a transposed view: copied in logical order, so the product is a * b^T.
    let out = ok(matmul.call_nd(&[&a.view(), &b.t()], &[]));
    let bt = ok(copy_to_tensor(&b.t()));
    let want = ok(matmul.call(&[&ok(copy_to_tensor(&a)), &bt], &[]));
    assert_eq!(out.provenance, want.provenance);
    let got = ok(out.into_array::<f32>());
    assert_eq!(got.shape(), &[3, 5]);
    assert_eq!(got.as_slice().expect("standard"), ok(want.outputs[0].try_slice::<f32>()));
    // Owned arrays and views of any dimension are inputs alike; parameters are scalars.
    let scale = ok(reg.lookup("builtin/scale"));
    let x = array![1.0f64, -2.0, 4.0];
    let y = ok(scale.call_nd(&[&x], &[Scalar::F64(0.25)]));
    assert_eq!((y.len(), ok(y.dtype(0))), (1, DType::f64));
    assert_eq!(ok(y.view::<f64>(0)).as_slice(), Some(&[0.25f64, -0.5, 1.0][..]));
    assert!(matches!(y.view::<f32>(0), Err(Error::DType { .. })));
    assert!(matches!(y.view::<f64>(1), Err(Error::NoOutput { outputs: 1, index: 1, .. })));
    assert!(matches!(y.into_arrays::<f32>(), Err(Error::DType { .. })));
    // Validation errors come back typed, naming the op.
    match scale.call_nd(&[&x], &[]) {
        Err(Error::Dispatch(e)) => assert!(e.to_string().contains("builtin/scale"), "{e}"),
        other => panic!("expected Error::Dispatch, got {other:?}"),
    }
}
