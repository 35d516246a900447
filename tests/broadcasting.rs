//! numpy broadcasting of the binary built-ins (`broadcast = numpy` in their contracts): `add` of
//! `[r, c]` and `[c]` gives `[r, c]` on every backend here, its VJP on the tape sums the
//! broadcast operand's gradient over the rows (against finite differences too), shapes that do
//! not broadcast are a typed error naming both, on a direct call and on a tape, and a device
//! tensor that would need expanding is refused (no implicit copy).

mod common;

use op_runtime::train::{Tape, TapeError};
use op_runtime::{BackendKind, CallOptions, DType, DispatchError, Registry, Tensor};

fn kinds() -> Vec<BackendKind> {
    let mut k = vec![BackendKind::Reference, BackendKind::Cpu];
    if common::wgpu_available() {
        k.push(BackendKind::Wgpu);
    }
    k
}

fn t(shape: &[usize], v: Vec<f32>) -> Tensor {
    Tensor::from_vec(shape.to_vec(), v).expect("a tensor")
}

#[test]
fn add_of_a_matrix_and_a_row_broadcasts_on_every_backend() {
    let r = op_runtime::registry();
    let (rows, cols) = (3, 4);
    let a: Vec<f32> = (0..rows * cols).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..cols).map(|j| 100.0 * (j + 1) as f32).collect();
    let expect: Vec<f32> = (0..rows * cols).map(|i| a[i] + b[i % cols]).collect();
    for kind in kinds() {
        for (x, y) in [(t(&[rows, cols], a.clone()), t(&[cols], b.clone())), (t(&[cols], b.clone()), t(&[rows, cols], a.clone()))] {
            let out =
                r.lookup("builtin/add").unwrap().call_with(&[&x, &y], &[], CallOptions::on(kind)).unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(out.provenance.backend, kind);
            assert_eq!(out.outputs[0].shape(), &[rows, cols], "{kind}");
            assert_eq!(out.outputs[0].as_slice::<f32>().unwrap(), &expect[..], "{kind}");
        }
    }
    // A column against a row: [r, 1] and [1, c] give [r, c]; `mul` and `sub` broadcast alike.
    let col = t(&[rows, 1], vec![1.0, 2.0, 3.0]);
    let row = t(&[1, cols], vec![10.0, 20.0, 30.0, 40.0]);
    let out = r.call("builtin/mul", &[&col, &row], &[]).unwrap().outputs.remove(0);
    assert_eq!(out.shape(), &[rows, cols]);
    assert_eq!(out.as_slice::<f32>().unwrap()[cols..2 * cols], [20.0, 40.0, 60.0, 80.0]);
    let out = r.call("builtin/sub", &[&row, &col], &[]).unwrap().outputs.remove(0);
    assert_eq!(out.as_slice::<f32>().unwrap()[2 * cols], 7.0);
}

/// `sum_ij (a + b)_ij * w_ij` on a tape (the sum as `ones[1, r] x p x ones[c, 1]`, a
/// single element): the gradients of `a` and `b`.
fn grads(kind: BackendKind, a: &Tensor, b: &Tensor, w: &Tensor) -> (Vec<f32>, Vec<f32>) {
    let (rows, cols) = (w.shape()[0], w.shape()[1]);
    let mut tape = Tape::new();
    tape.set_call_options(CallOptions::on(kind));
    let (av, bv) = (tape.param("a", a.clone()).unwrap(), tape.param("b", b.clone()).unwrap());
    let wv = tape.input("w", DType::f32, [rows, cols]);
    let (lv, rv) = (tape.input("ones_r", DType::f32, [1, rows]), tape.input("ones_c", DType::f32, [cols, 1]));
    let s = tape.call1("builtin/add", &[av, bv], &[]).unwrap();
    assert_eq!(tape.shape(s), Some(&[rows, cols][..]), "the tape plans the broadcast shape");
    let p = tape.call1("builtin/mul", &[s, wv], &[]).unwrap();
    let q = tape.call1("builtin/matmul", &[lv, p], &[]).unwrap();
    let loss = tape.call1("builtin/matmul", &[q, rv], &[]).unwrap();
    let (ones_r, ones_c) = (t(&[1, rows], vec![1.0; rows]), t(&[cols, 1], vec![1.0; cols]));
    let mut run = tape.run(&[(wv, w), (lv, &ones_r), (rv, &ones_c)]).unwrap_or_else(|e| panic!("{kind}: {e}"));
    let g = tape.backward(&mut run, loss).unwrap_or_else(|e| panic!("{kind}: {e}"));
    let get = |v| g.get(v).expect("a gradient").as_slice::<f32>().expect("f32").to_vec();
    (get(av), get(bv))
}

#[test]
fn the_vjp_of_add_sums_the_broadcast_operands_gradient_over_rows() {
    let (rows, cols) = (5, 3);
    let a = t(&[rows, cols], (0..rows * cols).map(|i| i as f32).collect());
    let b = t(&[cols], vec![0.5, -1.0, 2.0]);
    let wv: Vec<f32> = (0..rows * cols).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let w = t(&[rows, cols], wv.clone());
    let row_sums: Vec<f32> = (0..cols).map(|j| (0..rows).map(|i| wv[i * cols + j]).sum()).collect();
    for kind in kinds() {
        let (ga, gb) = grads(kind, &a, &b, &w);
        assert_eq!(ga, wv, "{kind}: d/da is w");
        assert_eq!(gb, row_sums, "{kind}: d/db sums w over the rows");
    }
    // The same against central differences of the loss in b (f32, exact on these integers).
    let loss = |b: &[f32]| -> f64 { (0..rows * cols).map(|i| ((i as f32 + b[i % cols]) * wv[i]) as f64).sum() };
    for j in 0..cols {
        let mut up = vec![0.5f32, -1.0, 2.0];
        let mut down = up.clone();
        up[j] += 0.25;
        down[j] -= 0.25;
        let numeric = (loss(&up) - loss(&down)) / 0.5;
        assert!((numeric - row_sums[j] as f64).abs() < 1e-3, "column {j}: numeric {numeric}, vjp {}", row_sums[j]);
    }
}

#[test]
fn shapes_that_do_not_broadcast_are_a_typed_error_naming_both() {
    let r = op_runtime::registry();
    let (a, b) = (t(&[3, 4], vec![0.0; 12]), t(&[3], vec![0.0; 3]));
    let e = r.call("builtin/add", &[&a, &b], &[]).unwrap_err();
    match &e {
        DispatchError::Broadcast { op, first, first_shape, second, second_shape } => {
            assert_eq!((op.as_str(), first.as_str(), second.as_str()), ("builtin/add@1", "a", "b"));
            assert_eq!((&first_shape[..], &second_shape[..]), (&[3, 4][..], &[3][..]));
        }
        other => panic!("expected a broadcast error, got {other:?}"),
    }
    assert!(e.to_string().contains("[3, 4]") && e.to_string().contains("[3]"), "{e}");
    // The tape refuses it when recording, before anything runs.
    let mut tape = Tape::with_registry(&Registry::with_builtins());
    let (x, y) = (tape.input("x", DType::f32, [2, 5]), tape.input("y", DType::f32, [4]));
    let e = tape.call1("builtin/mul", &[x, y], &[]).unwrap_err();
    assert!(matches!(&e, TapeError::Dispatch(DispatchError::Broadcast { .. })), "{e}");
    assert!(e.to_string().contains("[2, 5]") && e.to_string().contains("[4]"), "{e}");
    // A dtype mismatch is still a dtype error, not a broadcast one.
    let d = Tensor::from_vec(vec![4], vec![0.0f64; 4]).unwrap();
    let e = r.call("builtin/add", &[&a, &d], &[]).unwrap_err();
    assert!(matches!(e, DispatchError::InputDType { .. } | DispatchError::NotAMember { .. } | DispatchError::NoInstance { .. }), "{e}");
}

#[test]
fn a_device_tensor_that_would_need_expanding_is_refused() {
    let Some((engine, reg)) = common::private_wgpu() else { return };
    let a = t(&[2, 3], vec![1.0; 6]).to_device(engine).unwrap();
    let b = t(&[3], vec![1.0; 3]).to_device(engine).unwrap();
    let e = reg.call("builtin/add", &[&a, &b], &[]).unwrap_err();
    assert!(matches!(&e, DispatchError::BroadcastOnDevice { input, .. } if input == "b"), "{e}");
    // Equal shapes of any rank run on the device as they are.
    let c = reg.call("builtin/add", &[&a, &a], &[]).unwrap().outputs.remove(0);
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(c.to_host().unwrap().as_slice::<f32>().unwrap(), &[2.0; 6]);
}
