//! The built-ins' differentiable VJP ops: each built-in's VJP declared as an op of its own (its
//! reference the built-in's VJP rule; its arguments the built-in's followed by one cotangent per
//! output; its outputs one gradient per float input) with a declared VJP rule of its own, the
//! built-in's second derivative contracted with a cotangent. Linked to their built-ins at
//! registration (`Registry::register_vjp_op`), they give the tape forward mode (the VJP of a
//! VJP is the JVP) and Hessian-vector products; gradcheck checks each second-order rule against
//! central differences of the first-order rule, like any backward. Host-only (no kernels): on a
//! device tape the rules run on the host, their transfers counted.
//!
//! A broadcasting built-in's VJP op broadcasts too (`broadcast = numpy`): the tape hands it the
//! operands, the cotangent and the second-order cotangents expanded to the broadcast shape and
//! sums each gradient back to its operand's shape.
//!
//! Each rule below takes the VJP op's arguments `(inputs.., g)` and the cotangents `c_*` of its
//! outputs (one per gradient), and returns one gradient per float argument: first those of
//! the built-in's inputs (the second-derivative term), then that of `g` (the built-in's JVP
//! along `c`).

use super::{
    add_vjp, conv1d_vjp, div_vjp, exp_vjp, log_vjp, matmul, matmul_vjp, mean_vjp, mse_loss_vjp, mul_vjp, neg_vjp, relu_vjp, scale_vjp,
    sub_vjp, sum_vjp, tanh_vjp,
};
use crate::{op, Real};
use op_core::decl::OpDecl;

/// Every built-in with a differentiable VJP op: (the built-in's name, its VJP op); the op
/// library's (`vjp_ops_lib`) after the first fifteen.
pub fn vjp_decls() -> Vec<(&'static str, &'static OpDecl)> {
    let first: [(&'static str, &'static OpDecl); 15] = [
        ("builtin/add", &add_vjp_op::DECL),
        ("builtin/sub", &sub_vjp_op::DECL),
        ("builtin/mul", &mul_vjp_op::DECL),
        ("builtin/div", &div_vjp_op::DECL),
        ("builtin/neg", &neg_vjp_op::DECL),
        ("builtin/scale", &scale_vjp_op::DECL),
        ("builtin/exp", &exp_vjp_op::DECL),
        ("builtin/log", &log_vjp_op::DECL),
        ("builtin/tanh", &tanh_vjp_op::DECL),
        ("builtin/relu", &relu_vjp_op::DECL),
        ("builtin/sum", &sum_vjp_op::DECL),
        ("builtin/mean", &mean_vjp_op::DECL),
        ("builtin/matmul", &matmul_vjp_op::DECL),
        ("builtin/conv1d", &conv1d_vjp_op::DECL),
        ("builtin/mse_loss", &mse_loss_vjp_op::DECL),
    ];
    first.into_iter().chain(super::vjp_ops_lib::lib_vjp_decls()).collect()
}

fn zeros<T: Real>(n: usize) -> Vec<T> {
    vec![T::zero(); n]
}

/// `builtin/add`'s VJP as an op: `(g, g)`.
#[op(name = "builtin/add_vjp", version = 1, signature<T: f32 | f64>(a: T[n], b: T[n], d_out: T[n]) -> (d_a: T[n], d_b: T[n]), broadcast = numpy,
     category = elementwise, tolerance = ulp(1), backward = vjp(add_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn add_vjp_op<T: Real>(a: &[T], b: &[T], d_out: &[T]) -> (Vec<T>, Vec<T>) {
    add_vjp(a, b, d_out)
}
/// Second order of `add`: linear, so only `g` has a gradient, `c_a + c_b`.
pub fn add_vjp_vjp<T: Real>(a: &[T], b: &[T], _g: &[T], ca: &[T], cb: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    (zeros(a.len()), zeros(b.len()), ca.iter().zip(cb).map(|(x, y)| *x + *y).collect())
}

/// `builtin/sub`'s VJP as an op: `(g, -g)`.
#[op(name = "builtin/sub_vjp", version = 1, signature<T: f32 | f64>(a: T[n], b: T[n], d_out: T[n]) -> (d_a: T[n], d_b: T[n]), broadcast = numpy,
     category = elementwise, tolerance = ulp(1), backward = vjp(sub_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn sub_vjp_op<T: Real>(a: &[T], b: &[T], d_out: &[T]) -> (Vec<T>, Vec<T>) {
    sub_vjp(a, b, d_out)
}
/// Second order of `sub`: `c_a - c_b` for `g`.
pub fn sub_vjp_vjp<T: Real>(a: &[T], b: &[T], _g: &[T], ca: &[T], cb: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    (zeros(a.len()), zeros(b.len()), ca.iter().zip(cb).map(|(x, y)| *x - *y).collect())
}

/// `builtin/mul`'s VJP as an op: `(g b, g a)`.
#[op(name = "builtin/mul_vjp", version = 1, signature<T: f32 | f64>(a: T[n], b: T[n], d_out: T[n]) -> (d_a: T[n], d_b: T[n]), broadcast = numpy,
     category = elementwise, tolerance = ulp(1), backward = vjp(mul_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn mul_vjp_op<T: Real>(a: &[T], b: &[T], d_out: &[T]) -> (Vec<T>, Vec<T>) {
    mul_vjp(a, b, d_out)
}
/// Second order of `mul`: `g c_b`, `g c_a`, and `c_a b + c_b a` for `g`.
pub fn mul_vjp_vjp<T: Real>(a: &[T], b: &[T], g: &[T], ca: &[T], cb: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let da = g.iter().zip(cb).map(|(g, c)| *g * *c).collect();
    let db = g.iter().zip(ca).map(|(g, c)| *g * *c).collect();
    let dg = (0..g.len()).map(|i| ca[i] * b[i] + cb[i] * a[i]).collect();
    (da, db, dg)
}

/// `builtin/div`'s VJP as an op: `(g / b, -g a / b^2)`.
#[op(name = "builtin/div_vjp", version = 1, signature<T: f32 | f64>(a: T[n], b: T[n], d_out: T[n]) -> (d_a: T[n], d_b: T[n]), broadcast = numpy,
     category = elementwise, tolerance = ulp(4), backward = vjp(div_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn div_vjp_op<T: Real>(a: &[T], b: &[T], d_out: &[T]) -> (Vec<T>, Vec<T>) {
    div_vjp(a, b, d_out)
}
/// Second order of `div`: `-c_b g / b^2`; `(2 c_b a / b - c_a) g / b^2`; `(c_a - c_b a / b) / b`.
pub fn div_vjp_vjp<T: Real>(a: &[T], b: &[T], g: &[T], ca: &[T], cb: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let two = T::from_f64(2.0);
    let (mut da, mut db, mut dg) = (Vec::with_capacity(a.len()), Vec::with_capacity(a.len()), Vec::with_capacity(a.len()));
    for i in 0..a.len() {
        let q = a[i] / b[i];
        let gb2 = g[i] / b[i] / b[i];
        da.push(-(cb[i] * gb2));
        db.push((two * cb[i] * q - ca[i]) * gb2);
        dg.push((ca[i] - cb[i] * q) / b[i]);
    }
    (da, db, dg)
}

/// `builtin/neg`'s VJP as an op: `-g`.
#[op(name = "builtin/neg_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[n]) -> d_x: T[n],
     category = elementwise, tolerance = ulp(0), backward = vjp(neg_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn neg_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    neg_vjp(x, d_out)
}
/// Second order of `neg`: `-c` for `g`.
pub fn neg_vjp_vjp<T: Real>(x: &[T], _g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), c.iter().map(|v| -*v).collect())
}

/// `builtin/scale`'s VJP as an op: `s g` (the factor `s` a parameter, as in `scale`).
#[op(name = "builtin/scale_vjp", version = 1, signature<T: f32 | f64>(x: T[n], s: T, d_out: T[n]) -> d_x: T[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(scale_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn scale_vjp_op<T: Real>(x: &[T], s: T, d_out: &[T]) -> Vec<T> {
    scale_vjp(x, s, d_out)
}
/// Second order of `scale`: `s c` for `g`.
pub fn scale_vjp_vjp<T: Real>(x: &[T], s: T, _g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), c.iter().map(|v| *v * s).collect())
}

/// `builtin/exp`'s VJP as an op: `e^x g`.
#[op(name = "builtin/exp_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[n]) -> d_x: T[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(exp_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn exp_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    exp_vjp(x, d_out)
}
/// Second order of `exp`: `c g e^x`, and `c e^x` for `g`, each formed as `exp_vjp` forms
/// `e^x g` (a zero `c g` is a zero product where `e^x` alone overflows).
pub fn exp_vjp_vjp<T: Real>(x: &[T], g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let cg: Vec<T> = c.iter().zip(g).map(|(c, g)| T::from_f64(c.to_f64() * g.to_f64())).collect();
    (exp_vjp(x, &cg), exp_vjp(x, c))
}

/// `builtin/log`'s VJP as an op: `g / x`, on `x > 0` (the domain of `log`).
#[op(name = "builtin/log_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[n]) -> d_x: T[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(log_vjp_vjp), domain(x > 0), license = "MIT OR Apache-2.0")]
pub fn log_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    log_vjp(x, d_out)
}
/// Second order of `log`: `-c g / x^2`, and `c / x` for `g`.
pub fn log_vjp_vjp<T: Real>(x: &[T], g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let dx = (0..x.len()).map(|i| -(c[i] * g[i] / x[i] / x[i])).collect();
    let dg = (0..x.len()).map(|i| c[i] / x[i]).collect();
    (dx, dg)
}

/// `builtin/tanh`'s VJP as an op: `g sech^2 x`.
#[op(name = "builtin/tanh_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[n]) -> d_x: T[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(tanh_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn tanh_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    tanh_vjp(x, d_out)
}
/// Second order of `tanh`: `-2 c g sech^2 x tanh x`, and `c sech^2 x` for `g` (`sech x` in the
/// cancellation-free form `tanh_vjp` uses).
pub fn tanh_vjp_vjp<T: Real>(x: &[T], g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let (one, two) = (T::one(), T::from_f64(2.0));
    let sech2 = |x: T| {
        let h = (T::zero() - x.abs()).exp();
        let q = two * h / (one + h * h);
        q * q
    };
    let dx = (0..x.len()).map(|i| -(two * c[i] * g[i] * sech2(x[i]) * x[i].tanh())).collect();
    let dg = (0..x.len()).map(|i| c[i] * sech2(x[i])).collect();
    (dx, dg)
}

/// `builtin/relu`'s VJP as an op: `g` where `x > 0`, else 0.
#[op(name = "builtin/relu_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[n]) -> d_x: T[n],
     category = selection, tolerance = exact, backward = vjp(relu_vjp_vjp),
     subgradient = "zero in x (piecewise constant); along g the cotangent passes where x > 0, as in relu",
     license = "MIT OR Apache-2.0")]
pub fn relu_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    relu_vjp(x, d_out)
}
/// Second order of `relu`: zero in `x`; `c` where `x > 0` for `g`.
pub fn relu_vjp_vjp<T: Real>(x: &[T], _g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), relu_vjp(x, c))
}

/// `builtin/sum`'s VJP as an op: `g` broadcast to the input's length.
#[op(name = "builtin/sum_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[]) -> d_x: T[n],
     category = elementwise, tolerance = ulp(0), backward = vjp(sum_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn sum_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    sum_vjp(x, d_out)
}
/// Second order of `sum`: the sum of `c` for `g`.
pub fn sum_vjp_vjp<T: Real>(x: &[T], _g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let mut s = T::zero();
    for v in c {
        s += *v;
    }
    (zeros(x.len()), vec![s])
}

/// `builtin/mean`'s VJP as an op: `g / n` broadcast.
#[op(name = "builtin/mean_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[] where n >= 1) -> d_x: T[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(mean_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn mean_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    mean_vjp(x, d_out)
}
/// Second order of `mean`: the mean of `c` for `g`.
pub fn mean_vjp_vjp<T: Real>(x: &[T], _g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let mut s = T::zero();
    for v in c {
        s += *v;
    }
    (zeros(x.len()), vec![s / T::from_f64(x.len() as f64)])
}

/// `builtin/matmul`'s VJP as an op: `(g b^T, a^T g)`.
#[op(name = "builtin/matmul_vjp", version = 1,
     signature<T: f32 | f64>(a: T[m, k], b: T[k, n], d_out: T[m, n]) -> (d_a: T[m, k], d_b: T[k, n]),
     category = contraction, tolerance = accum(2), backward = vjp(matmul_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn matmul_vjp_op<T: Real>(a: &[T], b: &[T], d_out: &[T], m: usize, k: usize, n: usize) -> (Vec<T>, Vec<T>) {
    matmul_vjp(a, b, m, k, n, d_out)
}
/// Second order of `matmul`: `g c_b^T`, `c_a^T g`, and `c_a b + a c_b` for `g` (the first two
/// are `matmul`'s own VJP with the cotangents in the other factor's place).
#[allow(clippy::too_many_arguments)]
pub fn matmul_vjp_vjp<T: Real>(a: &[T], b: &[T], g: &[T], m: usize, k: usize, n: usize, ca: &[T], cb: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (da, _) = matmul_vjp(a, cb, m, k, n, g);
    let (_, db) = matmul_vjp(ca, b, m, k, n, g);
    let dg = matmul(ca, b, m, k, n).into_iter().zip(matmul(a, cb, m, k, n)).map(|(x, y)| x + y).collect();
    (da, db, dg)
}

/// `builtin/conv1d`'s VJP as an op: the gradients of `x` and of the kernel `w`.
#[op(name = "builtin/conv1d_vjp", version = 1,
     signature<T: f32 | f64>(x: T[n], w: T[m], d_out: T[n - m + 1] where 1 <= m, m <= n) -> (d_x: T[n], d_w: T[m]),
     category = contraction, tolerance = accum(2), backward = vjp(conv1d_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn conv1d_vjp_op<T: Real>(x: &[T], w: &[T], d_out: &[T]) -> (Vec<T>, Vec<T>) {
    conv1d_vjp(x, w, d_out)
}
/// Second order of `conv1d`: `d_x[i + j] += g[i] c_w[j]`, `d_w[j] += g[i] c_x[i + j]`, and
/// `conv1d(c_x, w) + conv1d(x, c_w)` for `g`.
pub fn conv1d_vjp_vjp<T: Real>(x: &[T], w: &[T], g: &[T], cx: &[T], cw: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let (mut dx, mut dw, mut dg) = (zeros(x.len()), zeros(w.len()), zeros(g.len()));
    for (i, gi) in g.iter().enumerate() {
        for j in 0..w.len() {
            dx[i + j] += *gi * cw[j];
            dw[j] += *gi * cx[i + j];
            dg[i] += cx[i + j] * w[j] + x[i + j] * cw[j];
        }
    }
    (dx, dw, dg)
}

/// `builtin/mse_loss`'s VJP as an op: `(2 (a - b) g / n, -2 (a - b) g / n)`.
#[op(name = "builtin/mse_loss_vjp", version = 1,
     signature<T: f32 | f64>(a: T[n], b: T[n], d_out: T[] where n >= 1) -> (d_a: T[n], d_b: T[n]),
     category = elementwise, tolerance = ulp(4), backward = vjp(mse_loss_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn mse_loss_vjp_op<T: Real>(a: &[T], b: &[T], d_out: &[T]) -> (Vec<T>, Vec<T>) {
    mse_loss_vjp(a, b, d_out)
}
/// Second order of `mse_loss`: with `k = 2 g / n` and `e = c_a - c_b`: `k e`, `-k e`, and
/// `2 <a - b, e> / n` for `g`.
pub fn mse_loss_vjp_vjp<T: Real>(a: &[T], b: &[T], g: &[T], ca: &[T], cb: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    let two_n = T::from_f64(2.0 / a.len() as f64);
    let k = two_n * g[0];
    let e: Vec<T> = ca.iter().zip(cb).map(|(x, y)| *x - *y).collect();
    let da: Vec<T> = e.iter().map(|v| *v * k).collect();
    let db = da.iter().map(|v| -*v).collect();
    let mut s = T::zero();
    for i in 0..a.len() {
        s += (a[i] - b[i]) * e[i];
    }
    (da, db, vec![s * two_n])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_second_order_is_zero_where_c_g_is_zero_and_e_x_overflows() {
        let (dx, dg) = exp_vjp_vjp(&[800.0f64, 1.0], &[0.0, 2.0], &[1.0, 3.0]);
        assert_eq!(dx, vec![0.0, 6.0 * 1f64.exp()]);
        assert_eq!(dg[0], f64::INFINITY);
        assert!((dg[1] - 3.0 * 1f64.exp()).abs() <= 1e-15 * dg[1]);
    }
}
