//! Forward mode and second order through the tape, on the pipeline (conv1d -> the
//! user's windowed median -> tanh -> mse_loss) in f64: forward-mode `u . (J v)` equals
//! `(J^T u) . v` from reverse mode to 1e-12 across many draws, and a wrong JVP rule or a wrong
//! VJP op makes them differ on every draw; Hessian-vector products equal central differences
//! of gradients, and a wrong second derivative is caught by that comparison and by gradcheck of
//! the VJP op; an op whose VJP op is not differentiable is a typed error naming it.

use crate::median;
use crate::median_vjp;

use op_contract::sample::Rng;
use op_runtime::graph::{Graph, GraphError};
use op_runtime::testing::assert_gradcheck_rejected;
use op_runtime::train::{Tape, TapeError, Var};
use op_runtime::{op, DType, Real, Registry, Scalar, Tensor};

const N: usize = 40;
const W: u32 = 3;
const SEEDS: u64 = 48;

/// Cube `x^3`: a VJP, and a differentiable VJP op (below).
#[op(name = "test/autodiff/cube", version = 1, signature(x: f64[n]) -> f64[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp))]
pub fn cube<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v * *v).collect()
}
/// `3 x^2 g`.
pub fn cube_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| T::from_f64(3.0) * *x * *x * *g).collect()
}

/// Cube's VJP as an op, with its second derivative.
#[op(name = "test/autodiff/cube_vjp", version = 1, signature(x: f64[n], d_out: f64[n]) -> d_x: f64[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp_vjp))]
pub fn cube_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    cube_vjp(x, d_out)
}
/// `(6 x g c, 3 x^2 c)`.
pub fn cube_vjp_vjp<T: Real>(x: &[T], g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let dx = (0..x.len()).map(|i| T::from_f64(6.0) * x[i] * g[i] * c[i]).collect();
    (dx, cube_vjp(x, c))
}

/// Cube's VJP with a second derivative twice too large (its JVP part is right).
#[op(name = "test/autodiff/cube_vjp_bad_hessian", version = 1, signature(x: f64[n], d_out: f64[n]) -> d_x: f64[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp_vjp_doubled), generated_tests = false)]
pub fn cube_vjp_bad_hessian<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    cube_vjp(x, d_out)
}
/// Wrong on purpose: `12 x g c`.
pub fn cube_vjp_vjp_doubled<T: Real>(x: &[T], g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let (dx, dg) = cube_vjp_vjp(x, g, c);
    (dx.into_iter().map(|v| v * T::from_f64(2.0)).collect(), dg)
}

/// Cube's VJP whose derivative along the cotangent (the JVP it gives) is `2 x^2 c`.
#[op(name = "test/autodiff/cube_vjp_bad_jvp", version = 1, signature(x: f64[n], d_out: f64[n]) -> d_x: f64[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp_vjp_bad_jvp), generated_tests = false)]
pub fn cube_vjp_bad_jvp<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    cube_vjp(x, d_out)
}
/// Wrong on purpose.
pub fn cube_vjp_vjp_bad_jvp<T: Real>(x: &[T], g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let (dx, _) = cube_vjp_vjp(x, g, c);
    (dx, x.iter().zip(c).map(|(x, c)| T::from_f64(2.0) * *x * *x * *c).collect())
}

/// Cube with both a VJP and a JVP rule.
#[op(name = "test/autodiff/cube_jvp", version = 1, signature(x: f64[n]) -> f64[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp) + jvp(cube_jvp_rule))]
pub fn cube_with_jvp<T: Real>(x: &[T]) -> Vec<T> {
    cube(x)
}
/// `3 x^2 t`.
pub fn cube_jvp_rule<T: Real>(x: &[T], t: &[T]) -> Vec<T> {
    cube_vjp(x, t)
}

/// Cube with a right VJP and a JVP rule twice too large: gradcheck's VJP/JVP consistency
/// catches it on its own; here forward mode against reverse mode must too.
#[op(name = "test/autodiff/cube_jvp_bad", version = 1, signature(x: f64[n]) -> f64[n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp) + jvp(cube_jvp_doubled), generated_tests = false)]
pub fn cube_with_bad_jvp<T: Real>(x: &[T]) -> Vec<T> {
    cube(x)
}
/// Wrong on purpose.
pub fn cube_jvp_doubled<T: Real>(x: &[T], t: &[T]) -> Vec<T> {
    cube_vjp(x, t).into_iter().map(|v| v * T::from_f64(2.0)).collect()
}

/// Smoothed absolute value `x tanh(4 x)`, differentiated through its graph of built-ins.
#[op(name = "test/autodiff/smooth_abs", version = 1, signature(x: f64[n]) -> f64[n],
     category = transcendental, tolerance = ulp(16), backward = composite(smooth_abs_graph))]
pub fn smooth_abs<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * (*v * T::from_f64(4.0)).tanh()).collect()
}
/// The graph: `mul(x, tanh(scale(x, 4)))`.
pub fn smooth_abs_graph(t: &mut dyn Graph, x: &[Var], _p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
    let kx = t.call1("builtin/scale", &[x[0]], &[Scalar::F64(4.0)])?;
    let th = t.call1("builtin/tanh", &[kx], &[])?;
    Ok(vec![t.call1("builtin/mul", &[x[0], th], &[])?])
}

/// A registry with the built-ins, the median and its differentiable VJP op, and the composite.
fn registry() -> Registry {
    let r = Registry::with_builtins();
    r.register(&median::windowed_median::DECL).expect("the median registers");
    r.register_vjp_op("user/example/windowed_median", &median_vjp::windowed_median_vjp_op::DECL).expect("its VJP op fits");
    r.register(&smooth_abs::DECL).expect("the composite registers");
    r
}

/// The pipeline, with `mid` (an op name, or the median) between conv1d and tanh, and a
/// scalar `s = sum(u * y)` beside the loss for the vector check.
struct Pipe {
    tape: Tape,
    x: Var,
    k: Var,
    u: Var,
    zeros: Var,
    conv: Var,
    y: Var,
    s: Var,
    loss: Var,
}

fn pipeline(r: &Registry, mid: &str) -> Pipe {
    let mut tape = Tape::with_registry(r);
    let x = tape.input("x", DType::f64, [N]);
    let k = tape.input("k", DType::f64, [3]);
    let conv = tape.call1("builtin/conv1d", &[x, k], &[]).expect("conv1d");
    let m = match mid {
        "median" => tape.call1("user/example/windowed_median", &[conv], &[Scalar::U32(W)]).expect("median"),
        op => tape.call1(op, &[conv], &[]).expect("mid op"),
    };
    let len = tape.shape(m).expect("a value")[0];
    let y = tape.call1("builtin/tanh", &[m], &[]).expect("tanh");
    let u = tape.input("u", DType::f64, [len]);
    let zeros = tape.input("zeros", DType::f64, [len]);
    let uy = tape.call1("builtin/mul", &[u, y], &[]).expect("mul");
    let s = tape.call1("builtin/sum", &[uy], &[]).expect("sum");
    let loss = tape.call1("builtin/mse_loss", &[y, zeros], &[]).expect("mse_loss");
    Pipe { tape, x, k, u, zeros, conv, y, s, loss }
}

fn vec_of(rng: &mut Rng, n: usize, scale: f64) -> Tensor {
    Tensor::vector((0..n).map(|_| rng.uniform(-scale, scale)).collect::<Vec<f64>>())
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_host().expect("host").data().to_f64_vec().expect("float")
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// One draw: the point, directions and cotangent.
struct Draw {
    x: Tensor,
    k: Tensor,
    vx: Tensor,
    vk: Tensor,
    u: Tensor,
    zeros: Tensor,
}

fn draw(p: &Pipe, seed: u64) -> Draw {
    let mut rng = Rng::new(seed);
    let len = p.tape.shape(p.u).expect("u")[0];
    Draw {
        x: vec_of(&mut rng, N, 1.0),
        k: vec_of(&mut rng, 3, 0.5),
        vx: vec_of(&mut rng, N, 1.0),
        vk: vec_of(&mut rng, 3, 0.5),
        u: vec_of(&mut rng, len, 1.0),
        zeros: Tensor::vector(vec![0.0f64; len]),
    }
}

/// Forward-mode `u . (J v)` and reverse-mode `(J^T u) . v` for the vector output, and the
/// same pair for the loss: their largest relative gap.
fn forward_reverse_gap(p: &Pipe, d: &Draw) -> Result<f64, TapeError> {
    let feeds = [(p.x, &d.x), (p.k, &d.k), (p.u, &d.u), (p.zeros, &d.zeros)];
    let mut run = p.tape.run(&feeds)?;
    let tan = p.tape.jvp(&mut run, &[(p.x, &d.vx), (p.k, &d.vk)])?;
    let jv = f64s(tan.get(p.y).expect("y has a tangent"));
    let forward_s = dot(&f64s(&d.u), &jv);
    let forward_loss = f64s(tan.get(p.loss).expect("the loss has a tangent"))[0];
    let (vx, vk) = (f64s(&d.vx), f64s(&d.vk));
    let along = |g: &op_runtime::train::Grads| dot(&f64s(g.get(p.x).expect("d/dx")), &vx) + dot(&f64s(g.get(p.k).expect("d/dk")), &vk);
    let reverse_s = along(&p.tape.grad(&mut run, p.s, &[p.x, p.k])?);
    let reverse_loss = along(&p.tape.grad(&mut run, p.loss, &[p.x, p.k])?);
    let rel = |a: f64, b: f64| (a - b).abs() / a.abs().max(b.abs()).max(1e-300);
    Ok(rel(forward_s, reverse_s).max(rel(forward_loss, reverse_loss)))
}

#[test]
fn forward_mode_equals_reverse_mode_through_builtins_and_the_users_median() {
    let r = registry();
    for mid in ["median", "test/autodiff/cube", "test/autodiff/cube_jvp", "test/autodiff/smooth_abs"] {
        if mid.starts_with("test/autodiff/cube") {
            r.register(if mid.ends_with("jvp") { &cube_with_jvp::DECL } else { &cube::DECL }).expect("registers");
        }
        if mid == "test/autodiff/cube" {
            r.register_vjp_op(mid, &cube_vjp_op::DECL).expect("fits");
        }
        let p = pipeline(&r, mid);
        let worst = (0..SEEDS).map(|s| forward_reverse_gap(&p, &draw(&p, s)).expect("both modes run")).fold(0.0, f64::max);
        eprintln!("{mid}: worst relative gap between forward and reverse over {SEEDS} draws: {worst:.2e}");
        assert!(worst <= 1e-12, "{mid}: forward and reverse differ by {worst:e}");
    }
}

/// The rejecting twins: a JVP rule twice too large, and a VJP op whose derivative along the
/// cotangent is wrong, each make forward differ from reverse on every draw.
#[test]
fn a_wrong_jvp_rule_or_vjp_op_makes_forward_differ_from_reverse_on_every_draw() {
    let r = registry();
    r.register(&cube_with_bad_jvp::DECL).expect("registers");
    r.register(&cube::DECL).expect("registers");
    r.register_vjp_op("test/autodiff/cube", &cube_vjp_bad_jvp::DECL).expect("fits: only its numbers are wrong");
    for mid in ["test/autodiff/cube_jvp_bad", "test/autodiff/cube"] {
        let p = pipeline(&r, mid);
        let best = (0..SEEDS).map(|s| forward_reverse_gap(&p, &draw(&p, s)).expect("both modes run")).fold(f64::INFINITY, f64::min);
        eprintln!("{mid}: smallest relative gap over {SEEDS} draws: {best:.2e}");
        assert!(best > 1e-3, "{mid}: a wrong rule went unnoticed (gap {best:e})");
    }
}

/// `H v` against central differences of gradients, on draws where no order crossing of the
/// median lies within the differences' reach (those are counted and skipped, never averaged).
fn hvp_vs_differences(p: &Pipe, d: &Draw) -> Result<Option<f64>, TapeError> {
    let h = 1e-5;
    let feeds = |x: &Tensor| [(p.x, x.clone()), (p.k, d.k.clone()), (p.u, d.u.clone()), (p.zeros, d.zeros.clone())];
    let run_at = |x: &Tensor| -> Result<(op_runtime::train::Run, Vec<f64>, Vec<usize>), TapeError> {
        let f = feeds(x);
        let refs: Vec<(Var, &Tensor)> = f.iter().map(|(v, t)| (*v, t)).collect();
        let mut run = p.tape.run(&refs)?;
        let g = f64s(p.tape.grad(&mut run, p.loss, &[p.x])?.get(p.x).expect("d/dx"));
        let order = median::argmedian(&f64s(run.value(p.conv).expect("conv")), W);
        Ok((run, g, order))
    };
    let (x, vx) = (f64s(&d.x), f64s(&d.vx));
    let shifted = |s: f64| Tensor::vector(x.iter().zip(&vx).map(|(a, b)| a + s * h * b).collect::<Vec<f64>>());
    let (mut run, _, order) = run_at(&d.x)?;
    let (_, gp, op) = run_at(&shifted(1.0))?;
    let (_, gm, om) = run_at(&shifted(-1.0))?;
    if op != order || om != order {
        return Ok(None);
    }
    let hv = p.tape.hvp(&mut run, p.loss, &[(p.x, &d.vx)])?;
    let hv = f64s(hv.hvp(p.x).expect("H v"));
    let fd: Vec<f64> = gp.iter().zip(&gm).map(|(a, b)| (a - b) / (2.0 * h)).collect();
    let scale = fd.iter().chain(&hv).fold(0.0f64, |m, v| m.max(v.abs()));
    Ok(Some(hv.iter().zip(&fd).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale))
}

#[test]
fn hessian_vector_products_equal_differences_of_gradients() {
    let r = registry();
    r.register(&cube::DECL).expect("registers");
    r.register_vjp_op("test/autodiff/cube", &cube_vjp_op::DECL).expect("fits");
    for mid in ["median", "test/autodiff/cube", "test/autodiff/smooth_abs"] {
        let p = pipeline(&r, mid);
        let gaps: Vec<f64> = (0..SEEDS).filter_map(|s| hvp_vs_differences(&p, &draw(&p, s)).expect("runs")).collect();
        let worst = gaps.iter().copied().fold(0.0, f64::max);
        eprintln!(
            "{mid}: H v vs differences of gradients: worst {worst:.2e} over {} draws ({} skipped)",
            gaps.len(),
            SEEDS as usize - gaps.len()
        );
        assert!(gaps.len() as u64 >= SEEDS * 3 / 4, "{mid}: too many draws skipped");
        assert!(worst < 1e-6, "{mid}: H v differs from differences of gradients by {worst:e}");
    }
}

/// The rejecting twin: a second derivative twice too large is caught by the differences (on
/// every draw) and by gradcheck of the VJP op itself.
#[test]
fn a_wrong_second_derivative_is_caught_by_differences_and_by_gradcheck_of_the_vjp_op() {
    let r = registry();
    r.register(&cube::DECL).expect("registers");
    r.register_vjp_op("test/autodiff/cube", &cube_vjp_bad_hessian::DECL).expect("fits");
    let p = pipeline(&r, "test/autodiff/cube");
    let gaps: Vec<f64> = (0..SEEDS).filter_map(|s| hvp_vs_differences(&p, &draw(&p, s)).expect("runs")).collect();
    let best = gaps.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(gaps.len() as u64 >= SEEDS * 3 / 4 && best > 1e-3, "the wrong second derivative went unnoticed ({best:e})");
    assert_gradcheck_rejected(&cube_vjp_bad_hessian::DECL);
    assert_gradcheck_rejected(&cube_vjp_bad_jvp::DECL);
    op_runtime::gradcheck(&cube_vjp_op::DECL).expect("the right twin passes");
}

/// Gradcheck on the VJP ops themselves: every built-in's, and the median's.
#[test]
fn every_builtin_vjp_op_and_the_medians_pass_gradcheck() {
    let r = op_runtime::registry();
    for (name, decl) in op_runtime::builtins::vjp_decls() {
        let linked = r.lookup(name).expect("a built-in").differentiable_vjp_op().expect("linked at registration");
        assert_eq!(linked.op().hash(), op_runtime::RegisteredOp::load(decl).expect("loads").hash(), "{name}");
        let report = op_runtime::gradcheck(decl).unwrap_or_else(|e| panic!("{name}'s VJP op: {e}"));
        assert!(report.negative_control_rejected(), "{name}");
    }
    op_runtime::gradcheck(&median_vjp::windowed_median_vjp_op::DECL).expect("the median's VJP op");
}

/// Every built-in that declares a VJP has a differentiable VJP op.
#[test]
fn every_differentiable_builtin_has_a_differentiable_vjp_op() {
    let r = op_runtime::registry();
    for d in op_runtime::builtins::decls() {
        let h = r.lookup(op_runtime::RegisteredOp::load(d).expect("loads").id()).expect("registered");
        if h.op().contract().backward.is_differentiable() {
            assert!(h.differentiable_vjp_op().is_some(), "built-in `{}` has no differentiable VJP op", h.id());
        }
    }
}

/// An op with only a VJP whose VJP op is not differentiable (the median's kernel VJP op, when
/// no differentiable one is registered): forward mode and second order are typed errors
/// naming it; plain reverse mode still runs.
#[test]
fn forward_mode_through_an_op_without_a_differentiable_vjp_op_is_a_typed_error_naming_it() {
    let r = Registry::with_builtins();
    r.register(&median::windowed_median::DECL).expect("registers");
    let p = pipeline(&r, "median");
    let d = draw(&p, 1);
    let mut run = p.tape.run(&[(p.x, &d.x), (p.k, &d.k), (p.u, &d.u), (p.zeros, &d.zeros)]).expect("runs");
    p.tape.grad(&mut run, p.loss, &[p.x]).expect("reverse mode runs");
    match p.tape.jvp(&mut run, &[(p.x, &d.vx)]) {
        Err(e @ TapeError::NoForwardRule { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("user/example/windowed_median@1"), "{msg}");
            assert!(msg.contains("`user/example/windowed_median/vjp@1` is not differentiable"), "{msg}");
            assert!(msg.contains("register_vjp_op"), "{msg}");
        }
        other => panic!("expected NoForwardRule, got {other:?}"),
    }
    let e = p.tape.hvp(&mut run, p.loss, &[(p.x, &d.vx)]).unwrap_err();
    assert!(
        matches!(&e, TapeError::NoSecondOrder { op, .. } | TapeError::NoForwardRule { op, .. } if op == "user/example/windowed_median@1"),
        "{e}"
    );
    // A direction that does not reach the median needs no rule of its own.
    let tan = p.tape.jvp(&mut run, &[(p.u, &d.u)]).expect("u only meets built-ins");
    assert!(tan.get(p.s).is_some() && tan.get(p.loss).is_none());
}

/// A declaration that does not have the VJP op's signature is refused naming both ops.
#[test]
fn a_vjp_op_of_the_wrong_signature_is_refused_naming_both() {
    let r = registry();
    r.register(&cube::DECL).expect("registers");
    let e = r.register_vjp_op("test/autodiff/cube", &cube::DECL).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("`test/autodiff/cube@1` cannot be the VJP op of `test/autodiff/cube@1`"), "{msg}");
    assert!(msg.contains("takes 1 argument(s); the VJP op takes 2"), "{msg}");
    let e = r.register_vjp_op("builtin/tanh", &cube_vjp_op::DECL).unwrap_err();
    assert!(e.to_string().contains("argument 0 (`x`) should be a tensor `T[n]`"), "{e}");
    let e = r.register_vjp_op("test/autodiff/nothing", &cube_vjp_op::DECL).unwrap_err();
    assert!(e.to_string().contains("no op named `test/autodiff/nothing`"), "{e}");
}

/// Seeds are checked: a direction of the wrong shape, or for a value that is not an input.
#[test]
fn bad_directions_are_typed_errors() {
    let r = registry();
    let p = pipeline(&r, "median");
    let d = draw(&p, 2);
    let mut run = p.tape.run(&[(p.x, &d.x), (p.k, &d.k), (p.u, &d.u), (p.zeros, &d.zeros)]).expect("runs");
    let e = p.tape.jvp(&mut run, &[(p.x, &d.k)]).unwrap_err();
    assert!(e.to_string().contains("input `x` (%0) is f64[40], given a direction of f64[3]"), "{e}");
    let e = p.tape.jvp(&mut run, &[(p.y, &d.u)]).unwrap_err();
    assert!(e.to_string().contains("is not a float input or parameter"), "{e}");
    let e = p.tape.hvp(&mut run, p.y, &[(p.x, &d.vx)]).unwrap_err();
    assert!(matches!(e, TapeError::NotScalarLoss { .. }), "{e}");
}

/// The example's case (`examples/autodiff`) through the tape against an independent derivation
/// in plain loops: with `z = median(conv(x))` (locally a selection `S` of `C x`) and
/// `L = mean(tanh(z)^2)`, `dL/dz = 2 t (1 - t^2) / m` and `d2L/dz2 = 2 (1 - t^2)(1 - 3 t^2) / m`,
/// so `jvp = <dL/dz, S C v>`, `grad = C^T S^T dL/dz` and `H v = C^T S^T (d2L/dz2 * S C v)`.
#[test]
fn the_examples_case_matches_an_independent_derivation() {
    const N: usize = 64;
    let k = [0.25f64, 0.5, 0.25];
    let conv = |x: &[f64]| (0..N - 2).map(|i| (0..3).map(|j| x[i + j] * k[j]).sum::<f64>()).collect::<Vec<f64>>();
    let conv_t = |g: &[f64]| {
        let mut out = vec![0.0; N];
        for (i, gi) in g.iter().enumerate() {
            for j in 0..3 {
                out[i + j] += gi * k[j];
            }
        }
        out
    };
    // (loss, jvp, grad, H v) at x along v, by hand.
    let by_hand = |x: &[f64], v: &[f64]| {
        let c = conv(x);
        let sel = median::argmedian(&c, W);
        let m = sel.len() as f64;
        let t: Vec<f64> = sel.iter().map(|&s| c[s].tanh()).collect();
        let a: Vec<f64> = t.iter().map(|t| 2.0 * t * (1.0 - t * t) / m).collect();
        let b: Vec<f64> = t.iter().map(|t| 2.0 * (1.0 - t * t) * (1.0 - 3.0 * t * t) / m).collect();
        let cv = conv(v);
        let sv: Vec<f64> = sel.iter().map(|&s| cv[s]).collect();
        let scatter = |z: &[f64]| {
            let mut out = vec![0.0; N - 2];
            for (zi, &s) in z.iter().zip(&sel) {
                out[s] += zi;
            }
            conv_t(&out)
        };
        let loss = t.iter().map(|t| t * t).sum::<f64>() / m;
        let hz: Vec<f64> = b.iter().zip(&sv).map(|(b, s)| b * s).collect();
        (loss, dot(&a, &sv), scatter(&a), scatter(&hz))
    };
    let r = op_runtime::registry();
    r.register(&median::windowed_median::DECL).expect("registers");
    r.register_vjp_op("user/example/windowed_median", &median_vjp::windowed_median_vjp_op::DECL).expect("fits");
    let mut tape = Tape::with_registry(r);
    let x = tape.input("x", DType::f64, [N]);
    let kp = tape.param("k", Tensor::vector(k.to_vec())).expect("param");
    let c = tape.call1("builtin/conv1d", &[x, kp], &[]).expect("conv1d");
    let med = tape.call1("user/example/windowed_median", &[c], &[Scalar::U32(W)]).expect("median");
    let y = tape.call1("builtin/tanh", &[med], &[]).expect("tanh");
    let zeros = tape.input("zeros", DType::f64, [N - 4]);
    let loss = tape.call1("builtin/mse_loss", &[y, zeros], &[]).expect("mse");
    let close = |a: &[f64], b: &[f64], what: &str| {
        let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let worst = a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
        assert!(a.len() == b.len() && worst <= 1e-12 * scale, "{what}: {worst:e} against {scale:e}");
    };
    let xs: Vec<f64> = (0..N).map(|i| (0.37 * i as f64).sin() + 0.1 * i as f64 / 64.0).collect();
    let v: Vec<f64> = (0..N).map(|i| (0.11 * i as f64).cos()).collect();
    let z = Tensor::vector(vec![0.0f64; N - 4]);
    for b in 0..4 {
        let xb: Vec<f64> = xs.iter().map(|x| x * (1.0 + 0.1 * b as f64)).collect();
        let (l, jvp, grad, hv) = by_hand(&xb, &v);
        let mut run = tape.run(&[(x, &Tensor::vector(xb.clone())), (zeros, &z)]).expect("runs");
        close(&[run.scalar(loss).expect("loss")], &[l], "loss");
        let tan = tape.jvp(&mut run, &[(x, &Tensor::vector(v.clone()))]).expect("jvp");
        close(&f64s(tan.get(loss).expect("tangent")), &[jvp], "jvp");
        let h = tape.hvp(&mut run, loss, &[(x, &Tensor::vector(v.clone()))]).expect("hvp");
        close(&f64s(h.grad(x).expect("grad")), &grad, "grad");
        close(&f64s(h.hvp(x).expect("H v")), &hv, "H v");
        assert!(hv.iter().filter(|v| v.abs() > 1e-6).count() > 20, "a nontrivial H v");
    }
}

/// The backward of a gradient: the gradient recorded as values of the tape (`record_grad`),
/// `s = <grad, v>` recorded after it, and reverse mode of `s` is `H v`; it equals the
/// forward-over-reverse `hvp` (another route through the same second derivatives) and the
/// recorded gradient equals reverse mode's, on every draw.
#[test]
fn the_backward_of_a_recorded_gradient_is_the_hessian_vector_product() {
    let r = registry();
    r.register(&cube::DECL).expect("registers");
    r.register_vjp_op("test/autodiff/cube", &cube_vjp_op::DECL).expect("fits");
    for mid in ["median", "test/autodiff/cube", "test/autodiff/smooth_abs"] {
        let mut p = pipeline(&r, mid);
        let g = p.tape.record_grad(p.loss, &[p.x, p.k]).expect("every op on the path has a VJP op");
        let vx = p.tape.input("vx", DType::f64, [N]);
        let vk = p.tape.input("vk", DType::f64, [3]);
        let gv = |t: &mut Tape, g: Var, v: Var| {
            let m = t.call1("builtin/mul", &[g, v], &[]).expect("mul");
            t.call1("builtin/sum", &[m], &[]).expect("sum")
        };
        let (a, b) = (gv(&mut p.tape, g[0], vx), gv(&mut p.tape, g[1], vk));
        let mut worst: f64 = 0.0;
        for seed in 0..16 {
            let d = draw(&p, seed);
            let feeds = [(p.x, &d.x), (p.k, &d.k), (p.u, &d.u), (p.zeros, &d.zeros), (vx, &d.vx), (vk, &d.vk)];
            let mut run = p.tape.run(&feeds).expect("runs");
            let reverse = p.tape.grad(&mut run, p.loss, &[p.x, p.k]).expect("grad");
            for (w, gw) in [(p.x, g[0]), (p.k, g[1])] {
                let (recorded, direct) = (f64s(run.value(gw).expect("a value")), f64s(reverse.get(w).expect("a gradient")));
                worst = worst.max(recorded.iter().zip(&direct).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max));
            }
            // H v = d<g, v>/d(x, k), the two halves of <g, v> differentiated apart and summed.
            let twice_a = p.tape.grad(&mut run, a, &[p.x, p.k]).expect("the backward of a gradient");
            let twice_b = p.tape.grad(&mut run, b, &[p.x, p.k]).expect("the backward of a gradient");
            let hvp = p.tape.hvp(&mut run, p.loss, &[(p.x, &d.vx), (p.k, &d.vk)]).expect("hvp");
            for w in [p.x, p.k] {
                let twice: Vec<f64> =
                    f64s(twice_a.get(w).expect("H v")).iter().zip(f64s(twice_b.get(w).expect("H v"))).map(|(p, q)| p + q).collect();
                let (a, b) = (twice, f64s(hvp.hvp(w).expect("H v")));
                let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let gap = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
                assert!(gap <= 1e-12 * scale && scale > 0.0, "{mid}, draw {seed}: {gap:e} against {scale:e}");
            }
        }
        assert!(worst <= 1e-15, "{mid}: the recorded gradient differs from reverse mode's by {worst:e}");
    }
}

/// Through the median's kernel VJP op (not differentiable) a gradient still records and runs,
/// and its backward is a typed error naming that VJP op; an op whose VJP is a rule only cannot
/// be recorded, and the error names it.
#[test]
fn recording_a_gradient_names_the_op_that_stops_it() {
    let r = Registry::with_builtins();
    r.register(&median::windowed_median::DECL).expect("registers");
    r.register(&cube::DECL).expect("registers");
    let mut p = pipeline(&r, "median");
    let g = p.tape.record_grad(p.loss, &[p.x]).expect("the kernel VJP op records")[0];
    let gs = p.tape.call1("builtin/sum", &[g], &[]).expect("sum");
    let d = draw(&p, 3);
    let mut run = p.tape.run(&[(p.x, &d.x), (p.k, &d.k), (p.u, &d.u), (p.zeros, &d.zeros)]).expect("runs");
    let direct = p.tape.grad(&mut run, p.loss, &[p.x]).expect("grad");
    // Reverse mode dispatches the built-ins' VJP ops to their f64 `cpu` kernels (each within its
    // declared tolerance of its rule); the recorded gradient runs the differentiable VJP ops,
    // the rules themselves: equal to rounding.
    let (recorded, direct) = (f64s(run.value(g).expect("a value")), f64s(direct.get(p.x).expect("d/dx")));
    let scale = direct.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let gap = recorded.iter().zip(&direct).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(recorded.len() == direct.len() && scale > 0.0 && gap <= 1e-14 * scale, "{gap:e} against {scale:e}");
    let e = p.tape.grad(&mut run, gs, &[p.x]).unwrap_err();
    assert_eq!(e, TapeError::NotDifferentiable { op: "user/example/windowed_median/vjp@1".into() });
    let mut p = pipeline(&r, "test/autodiff/cube");
    match p.tape.record_grad(p.loss, &[p.x]) {
        Err(TapeError::NoSecondOrder { op, reason }) => {
            assert_eq!(op, "test/autodiff/cube@1");
            assert!(reason.contains("its VJP is a rule only"), "{reason}");
        }
        other => panic!("expected NoSecondOrder, got {other:?}"),
    }
}
