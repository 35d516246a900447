//! The measured sensitivity of the f64 reference: how far each output element moves per unit
//! of relative perturbation of one group of values (`S`'s measured part), and the running-value
//! scale `C` of an output shaped like an input. Owns the perturbation runs and what is read
//! from them; it must not compare outputs.

use super::super::Case;
use super::feed::{reference_f64, Feed, Group, Perturb, Scaling, Which, DELTA};
use super::homogeneity::doubles_with;
use super::{filled_like, zeros_like};
use op_core::op::RegisteredOp;
use op_core::tensor::{Scalar, Tensor};

/// Groups of at most this many float values are measured one value at a time (see
/// [`sensitivity`]); larger ones by sign patterns.
const EXACT_MAX: usize = 256;
/// Random sign patterns per large group (besides all-up and the index-bit patterns).
const RANDOM_PATTERNS: u64 = 2;
/// One group's measured sensitivity of every element of every output ([`sensitivity`]).
pub(super) type GroupScale = (Group, Vec<Vec<f64>>);

/// The groups of a case that a relative perturbation moves: each float input, and the float
/// parameters, holding a finite value other than zero.
fn groups(case: &Case) -> Vec<(Group, usize)> {
    let moves = |v: f64| v.is_finite() && v != 0.0;
    let inputs = case.inputs.iter().enumerate().filter(|(_, t)| t.dtype().is_float());
    let mut out: Vec<(Group, usize)> = inputs
        .filter(|(_, t)| t.data().to_f64_vec().is_some_and(|v| v.into_iter().any(moves)))
        .map(|(k, t)| (Group::Input(k), t.numel()))
        .collect();
    let param = |p: &Scalar| match p {
        Scalar::F32(v) => moves(*v as f64),
        Scalar::F64(v) => moves(*v),
        _ => false,
    };
    if case.params.iter().any(param) {
        out.push((Group::Params, case.params.len()));
    }
    out
}

/// The measured sensitivity of every output element (one vector per output of `plain`, the f64
/// reference on the case): how far `r64` moves per unit of relative perturbation of one group
/// ([`Group`]: a float input, or the float parameters), the largest over the groups. Groups are
/// moved one at a time, as a backward error analysis puts the error of a product on one
/// factor: for a matmul each gives `sum_p |a_ip b_pj|`, not twice it.
///
/// A group of at most [`EXACT_MAX`] values is moved one value at a time, at `+δ` and at `-δ`
/// (so that a kink with one flat side is still seen): the sum over its values of the larger
/// move is exactly `sum_j |d r64 / d x_j| |x_j|`, the componentwise condition number, which
/// bounds any backward-stable kernel. A larger group is moved all at once by sign patterns
/// (all up; one per bit of the index, so that any two values move apart in some pattern; and
/// [`RANDOM_PATTERNS`] random ones), each at `±δ`, the largest move counting: exact for an op
/// that grows with every value (a sum, a scan), an estimate of the order of magnitude for the
/// others, where terms of opposite sign can cancel in one pattern (a softmax: `x_i` and the
/// row's max of equal magnitude moved up together leave `x_i - max` unmoved) but not in all.
/// A perturbed run that fails (it leaves a declared domain, or breaks `lo <= hi` where
/// `lo == hi`) tells nothing, and a change that is not finite (an overflow, a NaN) is left out:
/// the scale stays finite.
///
/// Returns that largest, and each group's own (what `terms::terms_of` reads).
pub(super) fn sensitivity(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>]) -> (Vec<Vec<f64>>, Vec<GroupScale>) {
    let zeros = || zeros_like(plain);
    let (mut out, mut each) = (zeros(), Vec::new());
    for (group, n) in groups(case) {
        let moved = |which: Which| [1.0, -1.0].into_iter().map(move |sign| Feed::Perturbed(Perturb::new(group, which, case.seed, sign)));
        let mut this = zeros();
        if n <= EXACT_MAX {
            for j in 0..n {
                let mut one = zeros();
                largest_moves(op, case, plain, moved(Which::One(j)), (|_| true, |_| 1.0), &mut one);
                add_to(&mut this, &one);
            }
        } else {
            let bits = usize::BITS - (n - 1).leading_zeros();
            let patterns = std::iter::once(Which::AllUp).chain((0..bits).map(Which::Bit)).chain((0..RANDOM_PATTERNS).map(Which::Random));
            largest_moves(op, case, plain, patterns.flat_map(moved), (|_| true, |_| 1.0), &mut this);
        }
        for (o, t) in out.iter_mut().zip(&this) {
            o.iter_mut().zip(t).for_each(|(o, t)| *o = o.max(*t));
        }
        each.push((group, this));
    }
    (out, each)
}

/// `sum += more`, element by element.
fn add_to(sum: &mut [Vec<f64>], more: &[Vec<f64>]) {
    for (s, m) in sum.iter_mut().zip(more) {
        s.iter_mut().zip(m).for_each(|(s, m)| *s += m);
    }
}

/// The largest `|r64(x') - r64(x)| / δ` of every element `i` of the outputs `which` admits
/// over the runs `feeds` (each a perturbation of the case), as [`sensitivity`] measures it,
/// times `weight(i)` (an element's measurement is left out where that is 0).
fn largest_moves(
    op: &RegisteredOp,
    case: &Case,
    plain: &[Vec<f64>],
    feeds: impl Iterator<Item = Feed>,
    (which, weight): (impl Fn(usize) -> bool, impl Fn(usize) -> f64),
    out: &mut [Vec<f64>],
) {
    for mut feed in feeds {
        let Ok(moved) = reference_f64(op, &case.inputs, &case.params, &mut feed) else { continue };
        let outputs = out.iter_mut().zip(plain).zip(&moved).enumerate();
        for (_, ((o, p), m)) in outputs.filter(|(j, ((_, p), m))| which(*j) && p.len() == m.len()) {
            for (i, ((o, p), m)) in o.iter_mut().zip(p).zip(m).enumerate() {
                let r = weight(i) * (m - p).abs() / DELTA;
                if r.is_finite() {
                    *o = o.max(r);
                }
            }
        }
    }
}

/// The running-value scale `C` of every output element (see the module doc of `compare`).
/// For each float input with more than one element and each float output of the same shape (a
/// scan's `x` and `y`, whose element `t` is the running value after `x_t`), the input's
/// elements of one parity are moved by `±δ |r64_t|`, the output's own f64 values. A
/// sequential carry rounds at step `t` by at most `eps/2 |y_t|`, which is such a move of
/// `x_t`, so for an op that grows with every `x_t` (a prefix sum, clipped or not: a clip cuts
/// the steps before it off) the move of `y_i` is `sum_t |d y_i / d x_t| |y_t|` over the `t` of
/// that parity. Element `i` takes twice the move from the other parity: the steps before it,
/// not its own (one rounding of its own value, which the pairwise bound covers), so that an op
/// without a carry (elementwise, `y_i` from `x_i` alone) gets none, whatever its gain. Zero
/// where no input is shaped like an output. The moves are read on that output `y` alone, the
/// one whose values weight them: before, every output took them, so a VJP's `d_b = a^T g`
/// took `a`'s moves weighted by `|d_a|` (`d_a` is shaped like `a`, but no running value of
/// it), a "carry" as large as `|g| |d_a|`, and its bound reached `sqrt(eps) * S`: a `d_b` off
/// by 8 eps over 2 terms was accepted.
///
/// Only elements in `x`'s units take it ([`carries`]): the move of `x_t` by `δ |y_t|` stands
/// for a rounding of the running value only where `y` is a sum of `x`'s terms; elsewhere its
/// size depends on the units chosen. Before, `x / sum(x)` on inputs near 1e-6 took a "carry"
/// 1e4 times its value and a kernel off by 1e-4 relative was accepted (rejected at 1 and
/// 1e-3); a running sum of `a_t b_t` took one `|b|` times too large.
///
/// `all`: which elements double with every float input and parameter ([`doubles_with`] under
/// `Scaling::All`), one pass for every `x`.
pub(super) fn carry_sensitivity(
    op: &RegisteredOp,
    case: &Case,
    plain: &[Vec<f64>],
    expected: &[Tensor],
    all: &[Vec<bool>],
) -> Vec<Vec<f64>> {
    let mut out = zeros_like(plain);
    for (k, x) in case.inputs.iter().enumerate().filter(|(_, t)| t.dtype().is_float() && t.numel() > 1) {
        let shaped = expected.iter().zip(plain).enumerate();
        let shaped: Vec<_> = shaped.filter(|(_, (e, p))| e.dtype().is_float() && e.shape() == x.shape() && p.len() == x.numel()).collect();
        let units = if shaped.is_empty() { Vec::new() } else { carries(op, case, plain, k, all) };
        for (y, (_, running)) in shaped {
            let running: Vec<f64> = running.iter().map(|v| v.abs()).collect();
            for parity in 0..2 {
                let feeds = [1.0, -1.0].into_iter().map(|sign| {
                    let by = Some(running.clone());
                    Feed::Perturbed(Perturb { by, ..Perturb::new(Group::Input(k), Which::Parity(parity), case.seed, sign) })
                });
                let other = |i: usize| if i % 2 == parity || !units[y].get(i).copied().unwrap_or(false) { 0.0 } else { 2.0 };
                largest_moves(op, case, plain, feeds, (|j| j == y, other), &mut out);
            }
        }
    }
    out
}

/// Which elements of each output are in the units of float input `k`, as a running value of
/// its terms (a sum of them) is: the element scales with `x_k` alone, or with every float
/// input and parameter together (a clip bound or a starting value in `x`'s units), and not with
/// the other inputs and parameters without `x_k` (those would put their units into it).
/// Scaling is by 2 or by 1/2 (either will do: one may leave an input's domain), exact in binary
/// floating point, and compared within 1e-9 relative. A prefix sum, clipped, decaying by a
/// coefficient, started from a value or netting two inputs, is; `x / sum(x)` and `x * sum(x)`
/// (unchanged and four times), `total * x / sum(x)` (scales with `total`) and a running sum of
/// products `a_t b_t` (scales with `b`) are not. A zero element scales with anything, so it is
/// not taken for scaling with the other inputs.
/// `all` is [`doubles_with`] under `Scaling::All` (the same for every `k`).
fn carries(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>], k: usize, all: &[Vec<bool>]) -> Vec<Vec<bool>> {
    let others = case.inputs.iter().enumerate().any(|(i, t)| i != k && t.dtype().is_float())
        || case.params.iter().any(|p| matches!(p, Scalar::F32(_) | Scalar::F64(_)));
    let alone = doubles_with(op, case, plain, Scaling::Only(k), false);
    let with_others = if others { doubles_with(op, case, plain, Scaling::AllBut(k), true) } else { filled_like(plain, false) };
    let out = alone.into_iter().zip(all).zip(with_others);
    out.map(|((a, b), o)| a.into_iter().zip(b).zip(o).map(|((a, b), o)| (a || *b) && !o).collect()).collect()
}
