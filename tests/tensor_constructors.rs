//! Public tensor constructors never abort or panic on a size they cannot allocate: a shape
//! whose element or byte count overflows is `ShapeOverflow`, one this host cannot hold is
//! `TooLarge`, and a shape that does not match the data given is `ShapeMismatch` (the call path
//! refuses such outputs too: `tests/example_median/runtime_dispatch.rs`).

use op_runtime::Data;
use op_runtime::TensorError;
use op_runtime::{DType, Tensor};
use std::panic::{catch_unwind, AssertUnwindSafe};

const DTYPES: [DType; 13] = [
    DType::bool,
    DType::u8,
    DType::i8,
    DType::u16,
    DType::i16,
    DType::u32,
    DType::i32,
    DType::u64,
    DType::i64,
    DType::f16,
    DType::bf16,
    DType::f32,
    DType::f64,
];

/// `f()`'s error, failing the test (with the shape) on success or a panic.
fn refused(what: &str, f: impl FnOnce() -> Result<Tensor, TensorError>) -> TensorError {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(t)) => panic!("{what}: built a tensor of shape {:?}", t.shape()),
        Ok(Err(e)) => e,
        Err(_) => panic!("{what}: panicked"),
    }
}

#[test]
fn zeros_of_absurd_shapes_are_typed_errors_never_an_abort_or_a_panic() {
    // The two shapes that aborted (4 TiB) and panicked ("capacity overflow").
    let e = refused("zeros f32 [1 << 40]", || Tensor::zeros(DType::f32, [1usize << 40]));
    assert!(matches!(&e, TensorError::TooLarge { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("[1099511627776]") && msg.contains("physical memory") && msg.contains("smaller shape"), "{msg}");
    let e = refused("zeros f32 [1 << 61]", || Tensor::zeros(DType::f32, [1usize << 61]));
    assert!(matches!(&e, TensorError::TooLarge { why, .. } if why.contains("address space")), "{e:?}");
    for dtype in DTYPES {
        for shape in
            [vec![1usize << 46], vec![1 << 20, 1 << 20, 1 << 20], vec![1 << 61], vec![usize::MAX], vec![usize::MAX, 2], vec![3, 1 << 62]]
        {
            let e = refused(&format!("zeros {dtype} {shape:?}"), || Tensor::zeros(dtype, shape.clone()));
            assert!(matches!(e, TensorError::TooLarge { .. } | TensorError::ShapeOverflow { .. }), "{dtype} {shape:?}: {e:?}");
        }
        // What fits is zero-filled; an empty dimension holds nothing, however large the others.
        let t = Tensor::zeros(dtype, [3, 4]).unwrap();
        assert_eq!((t.shape(), t.numel(), t.dtype()), (&[3usize, 4][..], 12, dtype));
        assert!((0..12).all(|i| t.data().bits(i) == Some(0)), "{dtype}");
        assert_eq!(Tensor::zeros(dtype, [0, usize::MAX]).unwrap().numel(), 0);
        assert_eq!(Tensor::zeros(dtype, Vec::<usize>::new()).unwrap().numel(), 1, "a rank-0 tensor holds one element");
    }
}

#[test]
fn from_vec_and_the_other_constructors_refuse_absurd_shapes_with_typed_errors() {
    let e = refused("from_vec [1 << 40]", || Tensor::from_vec([1usize << 40], vec![0f32; 3]));
    assert!(matches!(&e, TensorError::ShapeMismatch { shape, elements: 3 } if *shape == vec![1usize << 40]), "{e:?}");
    let e = refused("from_vec [MAX, 2]", || Tensor::from_vec([usize::MAX, 2], Vec::<f32>::new()));
    assert!(matches!(e, TensorError::ShapeOverflow { .. }), "{e:?}");
    let e = refused("from_vec [2^32, 2^32]", || Tensor::from_vec([1usize << 32, 1 << 32], vec![1u8]));
    assert!(matches!(e, TensorError::ShapeOverflow { .. }), "{e:?}");
    assert_eq!(Tensor::from_vec([0, usize::MAX], Vec::<f64>::new()).unwrap().numel(), 0);
    let e = refused("new", || Tensor::new([1usize << 61], Data::F32(vec![1.0])));
    assert!(matches!(e, TensorError::ShapeMismatch { .. }), "{e:?}");
    let e = refused("from_f64", || Tensor::from_f64(DType::f16, [1usize << 40], &[1.0]));
    assert!(matches!(e, TensorError::ShapeMismatch { .. }), "{e:?}");
    let e = refused("from_f64 overflow", || Tensor::from_f64(DType::f32, [usize::MAX, 3], &[]));
    assert!(matches!(e, TensorError::ShapeOverflow { .. }), "{e:?}");
    let e = refused("from_f64 non-float", || Tensor::from_f64(DType::u8, [1], &[1.0]));
    assert!(matches!(e, TensorError::NotFloat { .. }), "{e:?}");
    for shape in [vec![1usize << 61], vec![usize::MAX / 2], vec![1 << 40, 1 << 40]] {
        let e = refused("from_bytes", || Tensor::from_bytes("f32", shape.clone(), &[0; 8]));
        assert!(matches!(e, TensorError::ShapeOverflow { .. } | TensorError::ByteLength { .. }), "{shape:?}: {e:?}");
    }
    // Conversions of a tensor that exists allocate what it holds, fallibly.
    let t = Tensor::from_f64(DType::f32, [2, 2], &[1.0, -0.0, 2.5, f64::INFINITY]).unwrap();
    let h = t.to_dtype(DType::f16).unwrap();
    assert_eq!(h.to_dtype(DType::f32).unwrap(), t);
    assert!(matches!(t.to_dtype(DType::i32), Err(TensorError::NotFloat { .. })));
    assert_eq!(Data::concat(&[t.data(), t.data()]).map(|d| d.len()), Some(8));
}
