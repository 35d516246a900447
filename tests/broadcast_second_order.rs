//! Forward mode, second order and recorded gradients through a broadcasting built-in: `mul` of
//! `a: [r, c]` and `b: [c]` inside `f(a, b) = sum_ij (a_ij b_j)^2`, checked against the hand
//! derivation (f64 tape values through dispatch are f32; compared to a relative 1e-5).

use op_runtime::train::Tape;
use op_runtime::Tensor;

const R: usize = 3;
const C: usize = 4;

fn t(shape: &[usize], v: Vec<f32>) -> Tensor {
    Tensor::from_vec(shape.to_vec(), v).expect("a tensor")
}

struct Case {
    a: Vec<f32>,
    b: Vec<f32>,
}

fn case(seed: u32) -> Case {
    let s = seed as f32;
    Case {
        a: (0..R * C).map(|i| ((i as f32 * 0.37 + s) % 2.0) - 1.0).collect(),
        b: (0..C).map(|j| ((j as f32 * 0.61 + 0.5 * s) % 3.0) - 1.5).collect(),
    }
}

/// The tape of `sum(square(flatten(mul(a, b))))`: (tape, a, b, loss).
fn tape(c: &Case) -> (Tape, op_runtime::Var, op_runtime::Var, op_runtime::Var) {
    let mut tape = Tape::new();
    let a = tape.param("a", t(&[R, C], c.a.clone())).expect("a");
    let b = tape.param("b", t(&[C], c.b.clone())).expect("b");
    let p = tape.call1("builtin/mul", &[a, b], &[]).expect("mul broadcasts");
    let f = tape.call1("builtin/flatten", &[p], &[]).expect("flatten");
    let q = tape.call1("builtin/square", &[f], &[]).expect("square");
    let loss = tape.call1("builtin/sum", &[q], &[]).expect("sum");
    (tape, a, b, loss)
}

fn close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!((*g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()), "{what}: {got:?} vs {want:?}");
    }
}

#[test]
fn forward_mode_and_hvp_through_a_broadcast_operand_match_the_hand_derivation() {
    for seed in 0..8 {
        let c = case(seed);
        let (tape, a, b, loss) = tape(&c);
        let vb: Vec<f32> = (0..C).map(|j| 0.25 * (j as f32 + 1.0) - 0.5).collect();
        let a2 = |j: usize| (0..R).map(|i| (c.a[i * C + j] as f64).powi(2)).sum::<f64>();
        // df along (0, v_b) = sum_j 2 (sum_i a_ij^2) b_j v_j.
        let want: f64 = (0..C).map(|j| 2.0 * a2(j) * c.b[j] as f64 * vb[j] as f64).sum();
        let mut run = tape.run(&[]).expect("runs");
        let tan = tape.jvp(&mut run, &[(b, &t(&[C], vb.clone()))]).unwrap_or_else(|e| panic!("jvp: {e}"));
        close(tan.get(loss).expect("the loss's tangent").as_slice::<f32>().unwrap(), &[want], "jvp");
        // H v along b only: d/db_j of 2 (sum_i a_ij^2) b_j is 2 (sum_i a_ij^2) v_j.
        let h = tape.hvp(&mut run, loss, &[(b, &t(&[C], vb.clone()))]).unwrap_or_else(|e| panic!("hvp: {e}"));
        let want_g: Vec<f64> = (0..C).map(|j| 2.0 * a2(j) * c.b[j] as f64).collect();
        let want_h: Vec<f64> = (0..C).map(|j| 2.0 * a2(j) * vb[j] as f64).collect();
        close(h.grad(b).expect("grad").as_slice::<f32>().unwrap(), &want_g, "grad b");
        close(h.hvp(b).expect("H v").as_slice::<f32>().unwrap(), &want_h, "H v");
        let _ = a;
    }
}

/// Recording the gradient as values would need the broadcast operand's gradient summed over the
/// rows on the tape, which no built-in records yet: a typed error naming the op, not a gradient
/// of the wrong shape.
#[test]
fn recording_the_gradient_of_a_broadcast_operand_is_a_typed_error() {
    let (mut tape, a, b, loss) = tape(&case(1));
    match tape.record_grad(loss, &[a, b]) {
        Err(e @ op_runtime::train::TapeError::NoSecondOrder { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("builtin/mul@1") && msg.contains("broadcast shape [3, 4]"), "{msg}");
        }
        other => panic!("expected NoSecondOrder, got {other:?}"),
    }
    // Without broadcasting (b as wide as a) the same loss records, and its gradient is 2 a^2 b.
    let c = case(1);
    let mut tape = Tape::new();
    let av = tape.param("a", t(&[R, C], c.a.clone())).expect("a");
    let bfull: Vec<f32> = (0..R * C).map(|i| c.b[i % C]).collect();
    let bv = tape.param("b", t(&[R, C], bfull.clone())).expect("b");
    let p = tape.call1("builtin/mul", &[av, bv], &[]).expect("mul");
    let f = tape.call1("builtin/flatten", &[p], &[]).expect("flatten");
    let q = tape.call1("builtin/square", &[f], &[]).expect("square");
    let loss = tape.call1("builtin/sum", &[q], &[]).expect("sum");
    let g = tape.record_grad(loss, &[bv]).expect("records");
    let run = tape.run(&[]).expect("runs");
    let got = run.value(g[0]).expect("the recorded gradient").as_slice::<f32>().unwrap().to_vec();
    let want: Vec<f64> = (0..R * C).map(|i| 2.0 * (c.a[i] as f64).powi(2) * bfull[i] as f64).collect();
    close(&got, &want, "recorded gradient");
}
