//! The op library's differentiable VJP ops (`builtins::vjp_ops` holds the first fifteen
//! built-ins' and the pattern): each built-in's VJP declared as an op of its own, its reference
//! the built-in's VJP rule, with a declared VJP rule of its own (the second derivative
//! contracted with a cotangent). Host-only, linked at registration.
//!
//! Most of the library is linear in its float inputs (copies, sums, selections by a mask) or
//! piecewise linear (orderings, selections by value): its VJP is `J(x)^T g` with `J` constant
//! where it is differentiable, so the second-derivative term is zero and the gradient along `g`
//! is `J c`, the built-in's JVP along `c` (for a copy, the built-in applied to `c`; for a
//! selection, `c` taken at the positions the forward selected). `sqrt`, `square` and
//! `sigmoid` have second derivatives of their own.
//!
//! A parameter that is also a bare dim of the cotangent (`unfold`'s `w`, `reshape`'s `c`,
//! `broadcast_to`'s `m`) is renamed here (a declaration cannot name a parameter like a dim
//! symbol; a derived VJP op can) and held equal to that dim by a constraint: the link compares
//! parameters by type and dims by expression, so the signature still fits the built-in's.
//!
//! `maximum`, `minimum` and `where` broadcast, and so do their VJP ops (`broadcast = numpy`):
//! the tape hands them operands and cotangents expanded to the broadcast shape.
//!
//! Each rule takes the VJP op's arguments `(inputs.., g)`, the dims it names, and the
//! cotangents `c_*` of its outputs, and returns one gradient per float argument: first those of
//! the built-in's float inputs, then that of `g`.

use super::{
    abs_vjp, broadcast_to, broadcast_to_vjp, concat, concat_vjp, flatten_vjp, gather, gather_vjp, max_rows_vjp, maximum_vjp, mean_rows,
    mean_rows_vjp, median_rows_vjp, min_rows_vjp, minimum_vjp, permute3, permute3_vjp, permute4, permute4_vjp, reshape_vjp, sigmoid_vjp,
    slice, slice_vjp, sort_rows_vjp, sqrt_vjp, square_vjp, sum_rows, sum_rows_vjp, take_along, take_along_vjp, transpose, transpose_vjp,
    unfold, unfold_vjp, where_, where_vjp,
};
use super::{reduce_rows::selected, rows::order};
use crate::{op, Element, Real};
use op_core::decl::OpDecl;
use std::cmp::Ordering;

/// The op library's built-ins with a differentiable VJP op: (the built-in's name, its VJP op).
pub(super) fn lib_vjp_decls() -> [(&'static str, &'static OpDecl); 24] {
    [
        ("builtin/unfold", &unfold_vjp_op::DECL),
        ("builtin/sort_rows", &sort_rows_vjp_op::DECL),
        ("builtin/median_rows", &median_rows_vjp_op::DECL),
        ("builtin/abs", &abs_vjp_op::DECL),
        ("builtin/sqrt", &sqrt_vjp_op::DECL),
        ("builtin/square", &square_vjp_op::DECL),
        ("builtin/sigmoid", &sigmoid_vjp_op::DECL),
        ("builtin/maximum", &maximum_vjp_op::DECL),
        ("builtin/minimum", &minimum_vjp_op::DECL),
        ("builtin/where", &where_vjp_op::DECL),
        ("builtin/sum_rows", &sum_rows_vjp_op::DECL),
        ("builtin/mean_rows", &mean_rows_vjp_op::DECL),
        ("builtin/max_rows", &max_rows_vjp_op::DECL),
        ("builtin/min_rows", &min_rows_vjp_op::DECL),
        ("builtin/reshape", &reshape_vjp_op::DECL),
        ("builtin/flatten", &flatten_vjp_op::DECL),
        ("builtin/transpose", &transpose_vjp_op::DECL),
        ("builtin/slice", &slice_vjp_op::DECL),
        ("builtin/concat", &concat_vjp_op::DECL),
        ("builtin/gather", &gather_vjp_op::DECL),
        ("builtin/broadcast_to", &broadcast_to_vjp_op::DECL),
        ("builtin/take_along", &take_along_vjp_op::DECL),
        ("builtin/permute3", &permute3_vjp_op::DECL),
        ("builtin/permute4", &permute4_vjp_op::DECL),
    ]
}

fn zeros<T: Real>(n: usize) -> Vec<T> {
    vec![T::zero(); n]
}

/// `builtin/unfold`'s VJP as an op: each window element's cotangent added to the element it copies.
/// `width` is the window width `w` (the cotangent's row length), `s` the step between windows.
#[op(name = "builtin/unfold_vjp", version = 1,
     signature<T: f32 | f64>(x: T[n], width: u32, s: u32, d_out: T[(n - w) / s + 1, w] where 1 <= w, w <= n, s >= 1, width == w) -> d_x: T[n],
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(unfold_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `x`", license = "MIT OR Apache-2.0")]
pub fn unfold_vjp_op<T: Real>(x: &[T], width: u32, s: u32, d_out: &[T]) -> Vec<T> {
    unfold_vjp(x, width, s, d_out)
}
/// Second order of `unfold`: zero in `x`; `unfold(c)` for `g`.
pub fn unfold_vjp_vjp<T: Real>(x: &[T], width: u32, s: u32, _g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), unfold(c, width, s))
}

/// `builtin/sort_rows`'s VJP as an op: each sorted position's cotangent to the element sorted there.
#[op(name = "builtin/sort_rows_vjp", version = 1,
     signature<T: f32 | f64>(x: T[r, c], d_out: T[r, c] where c <= 1024) -> d_x: T[r, c],
     category = selection, tolerance = exact, backward = vjp(sort_rows_vjp_vjp),
     subgradient = "zero in `x` (piecewise constant); along `g`, `c` permuted as `x` sorts (of equal elements the earlier first)",
     license = "MIT OR Apache-2.0")]
pub fn sort_rows_vjp_op<T: Real>(x: &[T], d_out: &[T], c: usize) -> Vec<T> {
    sort_rows_vjp(x, c, d_out)
}
/// Second order of `sort_rows`: zero in `x`; for `g`, each row of the cotangent taken in the
/// order that sorts `x`'s row.
pub fn sort_rows_vjp_vjp<T: Real>(x: &[T], _g: &[T], c: usize, ct: &[T]) -> (Vec<T>, Vec<T>) {
    let w = c.max(1);
    let mut dg = Vec::with_capacity(x.len());
    for (start, row) in (0..x.len()).step_by(w).zip(x.chunks(w)) {
        dg.extend(order(row).into_iter().map(|i| ct[start + i]));
    }
    (zeros(x.len()), dg)
}

/// `builtin/median_rows`'s VJP as an op: each row's cotangent to the element its median selected.
#[op(name = "builtin/median_rows_vjp", version = 1,
     signature<T: f32 | f64>(x: T[r, c], d_out: T[r] where 1 <= c, c <= 1024) -> d_x: T[r, c],
     category = selection, tolerance = exact, backward = vjp(median_rows_vjp_vjp),
     subgradient = "zero in `x` (piecewise constant); along `g`, `c` at the element each row's median selected",
     license = "MIT OR Apache-2.0")]
pub fn median_rows_vjp_op<T: Real>(x: &[T], d_out: &[T], c: usize) -> Vec<T> {
    median_rows_vjp(x, c, d_out)
}
/// Second order of `median_rows`: zero in `x`; for `g`, each row's cotangent at its median's element.
pub fn median_rows_vjp_vjp<T: Real>(x: &[T], _g: &[T], c: usize, ct: &[T]) -> (Vec<T>, Vec<T>) {
    let w = c.max(1);
    let dg = (0..x.len()).step_by(w).zip(x.chunks(w)).map(|(start, row)| ct[start + order(row)[(c - 1) / 2]]).collect();
    (zeros(x.len()), dg)
}

/// `builtin/abs`'s VJP as an op: `g` where `x > 0`, `-g` where `x < 0`, zero at 0.
#[op(name = "builtin/abs_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[n]) -> d_x: T[n],
     category = selection, tolerance = exact, backward = vjp(abs_vjp_vjp),
     subgradient = "zero in `x` (piecewise constant); along `g` the sign of `x` times `c`, as in abs",
     license = "MIT OR Apache-2.0")]
pub fn abs_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    abs_vjp(x, d_out)
}
/// Second order of `abs`: zero in `x`; `sign(x) c` for `g` (abs's VJP: its Jacobian is diagonal).
pub fn abs_vjp_vjp<T: Real>(x: &[T], _g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), abs_vjp(x, c))
}

/// `builtin/sqrt`'s VJP as an op: `g / (2 sqrt x)`, on `x > 0` (where it is finite).
#[op(name = "builtin/sqrt_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[n]) -> d_x: T[n],
     category = elementwise, tolerance = ulp(4), domain(x > 0), backward = vjp(sqrt_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn sqrt_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    sqrt_vjp(x, d_out)
}
/// Second order of `sqrt`: `-c g / (4 x sqrt x)` (formed as `-(c g / (2 sqrt x)) / (2 x)`),
/// and `c / (2 sqrt x)` for `g`.
pub fn sqrt_vjp_vjp<T: Real>(x: &[T], g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let two = T::from_f64(2.0);
    let cg: Vec<T> = c.iter().zip(g).map(|(c, g)| *c * *g).collect();
    let dx = sqrt_vjp(x, &cg).into_iter().zip(x).map(|(v, x)| -(v / (two * *x))).collect();
    (dx, sqrt_vjp(x, c))
}

/// `builtin/square`'s VJP as an op: `2 x g`.
#[op(name = "builtin/square_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[n]) -> d_x: T[n],
     category = elementwise, tolerance = ulp(1), backward = vjp(square_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn square_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    square_vjp(x, d_out)
}
/// Second order of `square`: `2 g c`, and `2 x c` for `g`.
pub fn square_vjp_vjp<T: Real>(x: &[T], g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let dx = g.iter().zip(c).map(|(g, c)| (*g + *g) * *c).collect();
    (dx, square_vjp(x, c))
}

/// `builtin/sigmoid`'s VJP as an op: `g s (1 - s)`.
#[op(name = "builtin/sigmoid_vjp", version = 1, signature<T: f32 | f64>(x: T[n], d_out: T[n]) -> d_x: T[n],
     category = transcendental, tolerance = ulp(16), backward = vjp(sigmoid_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn sigmoid_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    sigmoid_vjp(x, d_out)
}
/// Second order of `sigmoid`: `c g s (1 - s)(1 - 2 s)`, and `c s (1 - s)` for `g`. With
/// `h = e^-|x|`, `1 - 2 s = -sign(x) (1 - h) / (1 + h)`, free of cancellation; the factor
/// `s (1 - s)` is `sigmoid_vjp`'s, which keeps its tail out of the subnormals.
pub fn sigmoid_vjp_vjp<T: Real>(x: &[T], g: &[T], c: &[T]) -> (Vec<T>, Vec<T>) {
    let cg: Vec<T> = c.iter().zip(g).map(|(c, g)| *c * *g).collect();
    let dx = sigmoid_vjp(x, &cg)
        .into_iter()
        .zip(x)
        .map(|(v, x)| {
            let h = (-x.abs()).exp();
            let f = (T::one() - h) / (T::one() + h);
            if *x > T::zero() {
                -(v * f)
            } else {
                v * f
            }
        })
        .collect();
    (dx, sigmoid_vjp(x, c))
}

/// `builtin/maximum`'s VJP as an op: the cotangent to the selected operand.
#[op(name = "builtin/maximum_vjp", version = 1, signature<T: f32 | f64>(a: T[n], b: T[n], d_out: T[n]) -> (d_a: T[n], d_b: T[n]), broadcast = numpy,
     category = selection, tolerance = exact, backward = vjp(maximum_vjp_vjp),
     subgradient = "zero in `a` and `b` (piecewise constant); along `g` the cotangent of the selected operand",
     license = "MIT OR Apache-2.0")]
pub fn maximum_vjp_op<T: Real>(a: &[T], b: &[T], d_out: &[T]) -> (Vec<T>, Vec<T>) {
    maximum_vjp(a, b, d_out)
}
/// Second order of `maximum`: zero in `a` and `b`; `c_a` where `a` is selected, else `c_b`, for `g`.
pub fn maximum_vjp_vjp<T: Real>(a: &[T], b: &[T], _g: &[T], ca: &[T], cb: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    (zeros(a.len()), zeros(b.len()), pick(a, b, ca, cb, Ordering::Greater))
}

/// `builtin/minimum`'s VJP as an op: the cotangent to the selected operand.
#[op(name = "builtin/minimum_vjp", version = 1, signature<T: f32 | f64>(a: T[n], b: T[n], d_out: T[n]) -> (d_a: T[n], d_b: T[n]), broadcast = numpy,
     category = selection, tolerance = exact, backward = vjp(minimum_vjp_vjp),
     subgradient = "zero in `a` and `b` (piecewise constant); along `g` the cotangent of the selected operand",
     license = "MIT OR Apache-2.0")]
pub fn minimum_vjp_op<T: Real>(a: &[T], b: &[T], d_out: &[T]) -> (Vec<T>, Vec<T>) {
    minimum_vjp(a, b, d_out)
}
/// Second order of `minimum`: zero in `a` and `b`; `c_a` where `a` is selected, else `c_b`, for `g`.
pub fn minimum_vjp_vjp<T: Real>(a: &[T], b: &[T], _g: &[T], ca: &[T], cb: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    (zeros(a.len()), zeros(b.len()), pick(a, b, ca, cb, Ordering::Less))
}

/// `c_a` where `maximum` (`Greater`) or `minimum` (`Less`) selects `a`, else `c_b`: the rule
/// routes a cotangent of ones, which marks the operand it selects.
fn pick<T: Real>(a: &[T], b: &[T], ca: &[T], cb: &[T], side: Ordering) -> Vec<T> {
    let ones = vec![T::one(); a.len()];
    let (on_a, _) = if side == Ordering::Greater { maximum_vjp(a, b, &ones) } else { minimum_vjp(a, b, &ones) };
    (0..a.len()).map(|i| if on_a[i] == T::one() { ca[i] } else { cb[i] }).collect()
}

/// `builtin/where`'s VJP as an op: the cotangent to `a` where `cond` is non-zero, else to `b`.
/// The mask is `u32`, `bool` or `u8`, as `where`'s.
#[op(name = "builtin/where_vjp", version = 1,
     signature<T: f32 | f64, M: u32 | bool | u8>(cond: M[n], a: T[n], b: T[n], d_out: T[n]) -> (d_a: T[n], d_b: T[n]), broadcast = numpy,
     category = selection, tolerance = exact, backward = vjp(where_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `a` and `b`", license = "MIT OR Apache-2.0")]
pub fn where_vjp_op<T: Real, M: Element>(cond: &[M], a: &[T], b: &[T], d_out: &[T]) -> (Vec<T>, Vec<T>) {
    where_vjp(cond, a, b, d_out)
}
/// Second order of `where`: zero in `a` and `b`; `where(cond, c_a, c_b)` for `g`.
pub fn where_vjp_vjp<T: Real, M: Element>(cond: &[M], a: &[T], b: &[T], _g: &[T], ca: &[T], cb: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    (zeros(a.len()), zeros(b.len()), where_(cond, ca, cb))
}

/// `builtin/sum_rows`'s VJP as an op: each row's cotangent over the row.
#[op(name = "builtin/sum_rows_vjp", version = 1, signature<T: f32 | f64>(x: T[r, c], d_out: T[r]) -> d_x: T[r, c],
     category = elementwise, tolerance = ulp(0), backward = vjp(sum_rows_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn sum_rows_vjp_op<T: Real>(x: &[T], d_out: &[T], r: usize, c: usize) -> Vec<T> {
    sum_rows_vjp(x, r, c, d_out)
}
/// Second order of `sum_rows`: zero in `x`; `sum_rows(c)` for `g`.
pub fn sum_rows_vjp_vjp<T: Real>(x: &[T], _g: &[T], r: usize, c: usize, ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), sum_rows(ct, r, c))
}

/// `builtin/mean_rows`'s VJP as an op: each row's cotangent over `c`, over the row.
#[op(name = "builtin/mean_rows_vjp", version = 1, signature<T: f32 | f64>(x: T[r, c], d_out: T[r] where c >= 1) -> d_x: T[r, c],
     category = elementwise, tolerance = ulp(1), backward = vjp(mean_rows_vjp_vjp), license = "MIT OR Apache-2.0")]
pub fn mean_rows_vjp_op<T: Real>(x: &[T], d_out: &[T], r: usize, c: usize) -> Vec<T> {
    mean_rows_vjp(x, r, c, d_out)
}
/// Second order of `mean_rows`: zero in `x`; `mean_rows(c)` for `g`.
pub fn mean_rows_vjp_vjp<T: Real>(x: &[T], _g: &[T], r: usize, c: usize, ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), mean_rows(ct, r, c))
}

/// `builtin/max_rows`'s VJP as an op: each row's cotangent to the element selected.
#[op(name = "builtin/max_rows_vjp", version = 1, signature<T: f32 | f64>(x: T[r, c], d_out: T[r] where c >= 1) -> d_x: T[r, c],
     category = selection, tolerance = exact, backward = vjp(max_rows_vjp_vjp),
     subgradient = "zero in `x` (piecewise constant); along `g`, `c` at each row's selected element (of equal maxima the later)",
     license = "MIT OR Apache-2.0")]
pub fn max_rows_vjp_op<T: Real>(x: &[T], d_out: &[T], c: usize) -> Vec<T> {
    max_rows_vjp(x, c, d_out)
}
/// Second order of `max_rows`: zero in `x`; each row's cotangent at its selected element for `g`.
pub fn max_rows_vjp_vjp<T: Real>(x: &[T], _g: &[T], c: usize, ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), at_selected(x, c, ct, Ordering::Greater))
}

/// `builtin/min_rows`'s VJP as an op: each row's cotangent to the element selected.
#[op(name = "builtin/min_rows_vjp", version = 1, signature<T: f32 | f64>(x: T[r, c], d_out: T[r] where c >= 1) -> d_x: T[r, c],
     category = selection, tolerance = exact, backward = vjp(min_rows_vjp_vjp),
     subgradient = "zero in `x` (piecewise constant); along `g`, `c` at each row's selected element (of equal minima the earlier)",
     license = "MIT OR Apache-2.0")]
pub fn min_rows_vjp_op<T: Real>(x: &[T], d_out: &[T], c: usize) -> Vec<T> {
    min_rows_vjp(x, c, d_out)
}
/// Second order of `min_rows`: zero in `x`; each row's cotangent at its selected element for `g`.
pub fn min_rows_vjp_vjp<T: Real>(x: &[T], _g: &[T], c: usize, ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), at_selected(x, c, ct, Ordering::Less))
}

/// Each row's cotangent `ct` at the element `max_rows` (`Greater`) or `min_rows` (`Less`) selects.
fn at_selected<T: Real>(x: &[T], c: usize, ct: &[T], side: Ordering) -> Vec<T> {
    selected(x, c, side).into_iter().enumerate().map(|(i, j)| ct[i * c + j]).collect()
}

/// `builtin/reshape`'s VJP as an op: the cotangent, flat. `cols` is the reshaped row length `c`.
#[op(name = "builtin/reshape_vjp", version = 1,
     signature<T: f32 | f64>(x: T[n], cols: u32, d_out: T[n / c, c] where c >= 1, n % c == 0, cols == c) -> d_x: T[n],
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(reshape_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `x`", license = "MIT OR Apache-2.0")]
pub fn reshape_vjp_op<T: Real>(x: &[T], cols: u32, d_out: &[T]) -> Vec<T> {
    reshape_vjp(x, cols, d_out)
}
/// Second order of `reshape`: zero in `x`; `c` (reshaped) for `g`.
pub fn reshape_vjp_vjp<T: Real>(x: &[T], _cols: u32, _g: &[T], ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), ct.to_vec())
}

/// `builtin/flatten`'s VJP as an op: the cotangent, as rows.
#[op(name = "builtin/flatten_vjp", version = 1, signature<T: f32 | f64>(x: T[r, c], d_out: T[r * c]) -> d_x: T[r, c],
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(flatten_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `x`", license = "MIT OR Apache-2.0")]
pub fn flatten_vjp_op<T: Real>(x: &[T], d_out: &[T]) -> Vec<T> {
    flatten_vjp(x, d_out)
}
/// Second order of `flatten`: zero in `x`; `c` (flat) for `g`.
pub fn flatten_vjp_vjp<T: Real>(x: &[T], _g: &[T], ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), ct.to_vec())
}

/// `builtin/transpose`'s VJP as an op: the cotangent transposed back.
#[op(name = "builtin/transpose_vjp", version = 1, signature<T: f32 | f64>(x: T[r, c], d_out: T[c, r]) -> d_x: T[r, c],
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(transpose_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `x`", license = "MIT OR Apache-2.0")]
pub fn transpose_vjp_op<T: Real>(x: &[T], d_out: &[T], r: usize, c: usize) -> Vec<T> {
    transpose_vjp(x, r, c, d_out)
}
/// Second order of `transpose`: zero in `x`; `transpose(c)` for `g`.
pub fn transpose_vjp_vjp<T: Real>(x: &[T], _g: &[T], r: usize, c: usize, ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), transpose(ct, r, c))
}

/// `builtin/slice`'s VJP as an op: each cotangent to the element sliced, zero elsewhere; the
/// slice is the elements `start`, `start + step`, ... below `stop`.
#[op(name = "builtin/slice_vjp", version = 1,
     signature<T: f32 | f64>(x: T[n], start: u32, stop: u32, step: u32, d_out: T[(stop - start + step - 1) / step]
        where start <= stop, stop <= n, step >= 1) -> d_x: T[n],
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(slice_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `x`", license = "MIT OR Apache-2.0")]
pub fn slice_vjp_op<T: Real>(x: &[T], start: u32, stop: u32, step: u32, d_out: &[T]) -> Vec<T> {
    slice_vjp(x, start, stop, step, d_out)
}
/// Second order of `slice`: zero in `x`; `slice(c)` for `g`.
pub fn slice_vjp_vjp<T: Real>(x: &[T], start: u32, stop: u32, step: u32, _g: &[T], ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), slice(ct, start, stop, step))
}

/// `builtin/concat`'s VJP as an op: the cotangent split at `n`.
#[op(name = "builtin/concat_vjp", version = 1, signature<T: f32 | f64>(a: T[n], b: T[m], d_out: T[n + m]) -> (d_a: T[n], d_b: T[m]),
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(concat_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `a` and `b`", license = "MIT OR Apache-2.0")]
pub fn concat_vjp_op<T: Real>(a: &[T], b: &[T], d_out: &[T]) -> (Vec<T>, Vec<T>) {
    concat_vjp(a, b, d_out)
}
/// Second order of `concat`: zero in `a` and `b`; `concat(c_a, c_b)` for `g`.
pub fn concat_vjp_vjp<T: Real>(a: &[T], b: &[T], _g: &[T], ca: &[T], cb: &[T]) -> (Vec<T>, Vec<T>, Vec<T>) {
    (zeros(a.len()), zeros(b.len()), concat(ca, cb))
}

/// `builtin/gather`'s VJP as an op: each cotangent added to the element its output copies.
#[op(name = "builtin/gather_vjp", version = 1, signature<T: f32 | f64>(x: T[n], idx: u32[m], d_out: T[m] where n >= 1) -> d_x: T[n],
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(gather_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `x`", license = "MIT OR Apache-2.0")]
pub fn gather_vjp_op<T: Real>(x: &[T], idx: &[u32], d_out: &[T]) -> Vec<T> {
    gather_vjp(x, idx, d_out)
}
/// Second order of `gather`: zero in `x`; `gather(c, idx)` for `g`.
pub fn gather_vjp_vjp<T: Real>(x: &[T], idx: &[u32], _g: &[T], ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), gather(ct, idx))
}

/// `builtin/broadcast_to`'s VJP as an op: each element's `m` cotangents added in order. `copies`
/// is the number of copies `m` along the broadcast axis.
#[op(name = "builtin/broadcast_to_vjp", version = 1, signature<T: f32 | f64>(x: T[p, q], copies: u32, d_out: T[p, m, q] where copies == m) -> d_x: T[p, q],
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(broadcast_to_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `x`", license = "MIT OR Apache-2.0")]
pub fn broadcast_to_vjp_op<T: Real>(x: &[T], copies: u32, d_out: &[T], p: usize, q: usize) -> Vec<T> {
    broadcast_to_vjp(x, copies, p, q, d_out)
}
/// Second order of `broadcast_to`: zero in `x`; `broadcast_to(c)` for `g`.
pub fn broadcast_to_vjp_vjp<T: Real>(x: &[T], copies: u32, _g: &[T], p: usize, q: usize, ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), broadcast_to(ct, copies, p, q))
}

/// `builtin/take_along`'s VJP as an op: each cotangent added to the element of its row that its
/// output copies.
#[op(name = "builtin/take_along_vjp", version = 1,
     signature<T: f32 | f64>(x: T[r, c], idx: u32[r, k], d_out: T[r, k] where c >= 1) -> d_x: T[r, c],
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(take_along_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `x`", license = "MIT OR Apache-2.0")]
pub fn take_along_vjp_op<T: Real>(x: &[T], idx: &[u32], d_out: &[T], c: usize, k: usize) -> Vec<T> {
    take_along_vjp(x, idx, c, k, d_out)
}
/// Second order of `take_along`: zero in `x`; `take_along(c, idx)` for `g`.
pub fn take_along_vjp_vjp<T: Real>(x: &[T], idx: &[u32], _g: &[T], c: usize, k: usize, ct: &[T]) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), take_along(ct, idx, c, k))
}

/// `builtin/permute3`'s VJP as an op: the cotangent permuted back by the inverse of the
/// permutation `p0`, `p1`, `p2` (output axis `k` of the forward is input axis `pk`).
#[op(name = "builtin/permute3_vjp", version = 1,
     signature<T: f32 | f64>(x: T[d0, d1, d2], p0: u32, p1: u32, p2: u32,
        d_out: T[d0 + (d1 - d0) * min(p0, 1) + (d2 - d1) * (p0 / 2), d0 + (d1 - d0) * min(p1, 1) + (d2 - d1) * (p1 / 2), d0 + (d1 - d0) * min(p2, 1) + (d2 - d1) * (p2 / 2)]
        where p0 < 3, p1 < 3, p2 < 3, p0 != p1, p0 != p2, p1 != p2) -> d_x: T[d0, d1, d2],
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(permute3_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `x`", license = "MIT OR Apache-2.0")]
#[allow(clippy::too_many_arguments)]
pub fn permute3_vjp_op<T: Real>(x: &[T], p0: u32, p1: u32, p2: u32, d_out: &[T], d0: usize, d1: usize, d2: usize) -> Vec<T> {
    permute3_vjp(x, p0, p1, p2, d0, d1, d2, d_out)
}
/// Second order of `permute3`: zero in `x`; `permute3(c)` for `g`.
#[allow(clippy::too_many_arguments)]
pub fn permute3_vjp_vjp<T: Real>(
    x: &[T],
    p0: u32,
    p1: u32,
    p2: u32,
    _g: &[T],
    d0: usize,
    d1: usize,
    d2: usize,
    ct: &[T],
) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), permute3(ct, p0, p1, p2, d0, d1, d2))
}

/// `builtin/permute4`'s VJP as an op: the cotangent permuted back by the inverse of the
/// permutation `p0`, `p1`, `p2`, `p3` (output axis `k` of the forward is input axis `pk`).
#[op(name = "builtin/permute4_vjp", version = 1,
     signature<T: f32 | f64>(x: T[d0, d1, d2, d3], p0: u32, p1: u32, p2: u32, p3: u32,
        d_out: T[d0 + (d1 - d0) * min(p0, 1) + (d2 - d1) * (p0 / 2) + (d3 - d2) * (p0 / 3), d0 + (d1 - d0) * min(p1, 1) + (d2 - d1) * (p1 / 2) + (d3 - d2) * (p1 / 3),
                 d0 + (d1 - d0) * min(p2, 1) + (d2 - d1) * (p2 / 2) + (d3 - d2) * (p2 / 3), d0 + (d1 - d0) * min(p3, 1) + (d2 - d1) * (p3 / 2) + (d3 - d2) * (p3 / 3)]
        where p0 < 4, p1 < 4, p2 < 4, p3 < 4, p0 != p1, p0 != p2, p0 != p3, p1 != p2, p1 != p3, p2 != p3) -> d_x: T[d0, d1, d2, d3],
     category = selection, tolerance = exact, signed_zero = ignore, backward = vjp(permute4_vjp_vjp),
     subgradient = "none needed: linear in `g`, constant in `x`", license = "MIT OR Apache-2.0")]
#[allow(clippy::too_many_arguments)]
pub fn permute4_vjp_op<T: Real>(
    x: &[T],
    p0: u32,
    p1: u32,
    p2: u32,
    p3: u32,
    d_out: &[T],
    d0: usize,
    d1: usize,
    d2: usize,
    d3: usize,
) -> Vec<T> {
    permute4_vjp(x, p0, p1, p2, p3, d0, d1, d2, d3, d_out)
}
/// Second order of `permute4`: zero in `x`; `permute4(c)` for `g`.
#[allow(clippy::too_many_arguments)]
pub fn permute4_vjp_vjp<T: Real>(
    x: &[T],
    p0: u32,
    p1: u32,
    p2: u32,
    p3: u32,
    _g: &[T],
    d0: usize,
    d1: usize,
    d2: usize,
    d3: usize,
    ct: &[T],
) -> (Vec<T>, Vec<T>) {
    (zeros(x.len()), permute4(ct, p0, p1, p2, p3, d0, d1, d2, d3))
}
