//! The `accum` scale of a case: the reference in f64 and the error scale every output element
//! is bounded by, and the reduction length that enters the bound. Owns how the scale is
//! derived from the reference; it must not compare outputs (that is `compare`) or run kernels.

use super::{run_shim, AccumScale, Case};
use op_contract::contract::DType;
use op_contract::sample::Rng;
use op_core::op::RegisteredOp;
use op_core::tensor::{Scalar, Tensor};

/// Symbols of input dims that the outputs `which` admits do not mention: the ones they
/// contract (`matmul`'s `k`; for its VJP's `d_a[m, k]` alone, `n`).
pub(super) fn contracted(op: &RegisteredOp, which: impl Fn(usize) -> bool) -> Vec<usize> {
    let sig = &op.contract.signature;
    let mut in_out: Vec<&str> = Vec::new();
    for (_, o) in sig.outputs.iter().enumerate().filter(|(i, _)| which(*i)) {
        o.dims.iter().for_each(|d| d.symbols(&mut in_out));
    }
    sig.dim_symbols().iter().filter(|s| !in_out.contains(&s.as_str())).filter_map(|s| op.plan.syms.iter().position(|x| x == s)).collect()
}

/// The reduction length given the contracted symbols `k` (see [`output_reduction_len`]).
fn length(op: &RegisteredOp, case: &Case, k: &[usize]) -> usize {
    let largest = case.inputs.iter().map(Tensor::numel).max().unwrap_or(1).max(1);
    if k.is_empty() {
        let shaped = op.contract.signature.inputs().zip(&case.inputs).filter(|(sig, _)| {
            let mut syms: Vec<&str> = Vec::new();
            sig.dims.iter().for_each(|d| d.symbols(&mut syms));
            !syms.is_empty()
        });
        return shaped.map(|(_, t)| t.numel()).min().unwrap_or(largest).max(1);
    }
    let prod = k.iter().map(|&i| case.shape.syms.get(i).copied().unwrap_or(1).max(1) as usize).fold(1usize, usize::saturating_mul);
    prod.min(largest).max(1)
}

/// Reduction length of output `out` of a case for `accum` (only `ceil(log2 len)` enters the
/// bound, so an estimate off by a small factor changes the bound little): the larger of
/// - the product of the dims that output contracts (input dim symbols its dims do not
///   mention: `matmul`'s `k`, `sum`'s `n`, the `n` of `matmul`'s VJP output `d_a[m, k]`),
///   capped by the largest input. Each output has its own: a VJP's cotangents contract
///   different dims, and before, one length (the dims no output mentions, none for a VJP)
///   served every output, so `d_a` of a 1x2 by 2x30 product was bounded as a sum of 2 terms
///   where it sums 30;
/// - the case's own length, that one: the product of the dims no output mentions, or where
///   every symbol also shapes an output (`conv1d`'s `n - m + 1`, a scan, a VJP), the smallest
///   input whose shape mentions a symbol: an output element of such an op combines at most a
///   window of each input, and the window is no longer than the shortest of them (`conv1d`: `m`
///   terms; a scan over one input: `n`). Inputs of fixed shape (`f32[3]` coefficients, rank-0
///   scalars) are left out: they are parameters of the terms, not the terms. It stays a floor
///   because an output may reduce over a dim it mentions (a layer norm VJP's `d_gamma[n]`
///   normalises each row of `x[m, n]` over `n` before it sums over `m`).
pub fn output_reduction_len(op: &RegisteredOp, case: &Case, out: usize) -> usize {
    length(op, case, &contracted(op, |o| o == out)).max(length(op, case, &contracted(op, |_| true)))
}

/// Reduction length of a case: the longest of its outputs' ([`output_reduction_len`]).
pub fn reduction_len(op: &RegisteredOp, case: &Case) -> usize {
    (0..op.contract.signature.outputs.len().max(1)).map(|o| output_reduction_len(op, case, o)).max().unwrap_or(1)
}

/// How the f64 reference's inputs are fed (float elements and float parameters; integers
/// pass unchanged).
enum Feed {
    /// As they are.
    Plain,
    /// Float inputs as their absolute values (parameters as they are).
    Abs,
    /// One group of values perturbed relatively (see [`Perturb`]).
    Perturbed(Perturb),
    /// Some float values scaled by `by` (2 or 1/2: exact in binary floating point but where a
    /// value overflows or leaves the subnormals; see [`carries`]).
    Scaled { by: f64, which: Scaling },
}

impl Feed {
    /// Element `j` (value `x`) of input `k`.
    fn input(&mut self, k: usize, j: usize, x: f64) -> f64 {
        match self {
            Feed::Plain => x,
            Feed::Abs => x.abs(),
            Feed::Perturbed(p) if p.group == Group::Input(k) => p.apply(j, x),
            Feed::Perturbed(_) => x,
            Feed::Scaled { by, which } if which.input(k) => *by * x,
            Feed::Scaled { .. } => x,
        }
    }

    /// Float parameter `j` (value `x`).
    fn param(&mut self, j: usize, x: f64) -> f64 {
        match self {
            Feed::Perturbed(p) if p.group == Group::Params => p.apply(j, x),
            Feed::Scaled { by, which } if !matches!(which, Scaling::Only(_)) => *by * x,
            _ => x,
        }
    }
}

/// Which float values a [`Feed::Scaled`] run scales.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scaling {
    /// Input `k` alone.
    Only(usize),
    /// Every float input and the float parameters.
    All,
    /// Every float input but `k`, and the float parameters.
    AllBut(usize),
    /// The float parameters alone.
    Params,
}

impl Scaling {
    /// Whether float input `k` is scaled.
    fn input(self, k: usize) -> bool {
        match self {
            Scaling::Only(i) => i == k,
            Scaling::All => true,
            Scaling::AllBut(i) => i != k,
            Scaling::Params => false,
        }
    }

    /// The scaling of one group of [`sensitivity`]'s.
    fn of(group: Group) -> Scaling {
        match group {
            Group::Input(k) => Scaling::Only(k),
            Group::Params => Scaling::Params,
        }
    }
}

/// Relative size `δ` of the perturbations that measure the reference's sensitivity: 2^-20,
/// far above the f64 reference's own rounding (about 1e-16, so the change measured is the
/// op's, not noise) and far below the curvature of ordinary ops (so it is their first-order
/// response).
const DELTA: f64 = 1.0 / (1u64 << 20) as f64;
/// Groups of at most this many float values are measured one value at a time (see
/// [`sensitivity`]); larger ones by sign patterns.
const EXACT_MAX: usize = 256;
/// Random sign patterns per large group (besides all-up and the index-bit patterns).
const RANDOM_PATTERNS: u64 = 2;
/// Mixed into the case's seed for the random sign patterns.
const SALT: u64 = 0x7365_6e73_6974_6976;

/// One group's measured sensitivity of every element of every output ([`sensitivity`]).
type GroupScale = (Group, Vec<Vec<f64>>);

/// What one perturbation moves: one float input, or the float parameters together.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Group {
    Input(usize),
    Params,
}

/// Which values of a group one perturbation moves, and with which signs `s_j`.
#[derive(Clone, Copy, Debug)]
enum Which {
    /// Value `j` alone, `s_j = +1`.
    One(usize),
    /// Every value, `s_j = +1`.
    AllUp,
    /// Every value, `s_j = -1` where bit `b` of `j` is set: any two values differ in some bit,
    /// so for every pair some pattern moves them in opposite directions.
    Bit(u32),
    /// Every value, `s_j` drawn from the case's seed and this pattern number.
    Random(u64),
    /// The values `j` of this parity (`j % 2`), `s_j = +1`.
    Parity(usize),
}

/// One perturbation of a case: value `j` of its group is moved by `sign * s_j * δ * m_j` where
/// [`Which`] moves it, `m_j` its own magnitude `|x_j|` (a relative perturbation), or `by[j]`
/// where given (the running values of [`carry_sensitivity`]). Zeros and non-finite values stay
/// as they are under a relative perturbation (it keeps every sign, so a domain such as `x > 0`
/// still holds).
struct Perturb {
    group: Group,
    which: Which,
    seed: u64,
    sign: f64,
    by: Option<Vec<f64>>,
}

impl Perturb {
    /// A relative perturbation.
    fn new(group: Group, which: Which, seed: u64, sign: f64) -> Perturb {
        Perturb { group, which, seed, sign, by: None }
    }

    /// `s_j`, or `None` where value `j` is not moved.
    fn direction(&self, j: usize) -> Option<f64> {
        let down = match self.which {
            Which::One(i) if i != j => return None,
            Which::Parity(p) if j % 2 != p => return None,
            Which::One(_) | Which::AllUp | Which::Parity(_) => false,
            Which::Bit(b) => (j >> b) & 1 == 1,
            Which::Random(p) => {
                Rng::new(self.seed ^ SALT.wrapping_mul(p + 1) ^ (j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64() & 1 == 1
            }
        };
        Some(if down { -1.0 } else { 1.0 })
    }

    fn apply(&mut self, j: usize, x: f64) -> f64 {
        let m = match &self.by {
            Some(by) => by.get(j).copied().unwrap_or(0.0),
            None => x.abs(),
        };
        match self.direction(j) {
            Some(s) if x.is_finite() && m.is_finite() => x + self.sign * s * DELTA * m,
            _ => x,
        }
    }
}

fn to_f64_tensor(k: usize, t: &Tensor, feed: &mut Feed) -> Result<Tensor, String> {
    let v: Vec<f64> =
        t.data().to_f64_vec().ok_or("a float input has no f64 view")?.into_iter().enumerate().map(|(j, x)| feed.input(k, j, x)).collect();
    Tensor::new(t.shape().to_vec(), op_core::tensor::Data::F64(v)).map_err(|e| e.to_string())
}

/// The op's reference in f64 on `inputs` (floats widened and fed as `feed` says), each output
/// as f64 values.
fn reference_f64(op: &RegisteredOp, inputs: &[Tensor], params: &[Scalar], feed: &mut Feed) -> Result<Vec<Vec<f64>>, String> {
    let shim = op.decl.reference_f64.ok_or("`accum` needs the reference in f64, and the reference is not float-generic (`<T: Real>`)")?;
    let widened = inputs
        .iter()
        .enumerate()
        .map(|(k, t)| if t.dtype().is_float() { to_f64_tensor(k, t, feed) } else { Ok(t.clone()) })
        .collect::<Result<Vec<Tensor>, String>>()?;
    let params: Vec<Scalar> = params
        .iter()
        .enumerate()
        .map(|(j, p)| match p {
            Scalar::F32(v) => Scalar::F64(feed.param(j, *v as f64)),
            Scalar::F64(v) => Scalar::F64(feed.param(j, *v)),
            other => *other,
        })
        .collect();
    let on = if matches!(feed, Feed::Abs) { " on the absolute values" } else { "" };
    let out = run_shim(op, shim, &widened, &params, Some(DType::f64)).map_err(|e| format!("the f64 reference failed{on}: {e}"))?;
    out.iter().map(|t| t.data().to_f64_vec().ok_or_else(|| "the f64 reference returned a non-numeric output".to_string())).collect()
}

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
/// Returns that largest, and each group's own (what [`terms_of`] reads).
fn sensitivity(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>]) -> (Vec<Vec<f64>>, Vec<GroupScale>) {
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

/// The degree of homogeneity of every element under `which` scaled by 2 and by 1/2: `Some(d)`
/// where the element's f64 value is multiplied by exactly `2^d` and `2^-d` (within 1e-9
/// relative, `|d| <= 8`; one factor alone where the other leaves a domain), `None` where it is
/// not, or is zero or not finite. Both factors: one alone is fooled by coincidence (`2x - y`
/// at `x = 1.5, y = 1.4` is 16 times `x - y`).
fn degrees(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>], which: Scaling) -> Vec<Vec<Option<i32>>> {
    // Per element: no run yet, a degree, or not homogeneous.
    let mut seen: Vec<Vec<Option<Option<i32>>>> = filled_like(plain, None);
    for by in [2.0f64, 0.5] {
        let Ok(scaled) = reference_f64(op, &case.inputs, &case.params, &mut Feed::Scaled { by, which }) else { continue };
        for ((o, p), d) in seen.iter_mut().zip(plain).zip(&scaled).filter(|((_, p), d)| p.len() == d.len()) {
            for ((o, p), d) in o.iter_mut().zip(p).zip(d) {
                let r = d / p;
                let k = (r.abs().log2() / by.log2()).round();
                let here =
                    (p.is_finite() && *p != 0.0 && r > 0.0 && k.abs() <= 8.0 && (r - by.powf(k)).abs() <= 1e-9 * r).then_some(k as i32);
                *o = Some(match *o {
                    None => here,
                    Some(before) => before.filter(|b| here == Some(*b)),
                });
            }
        }
    }
    seen.into_iter().map(|o| o.into_iter().map(Option::flatten).collect()).collect()
}

/// The sum of each element's terms' magnitudes, `T` (see [`AccumScale::terms`]), from
/// `|r64|` and the op on `|x|` (`base`) and what the groups' measured sensitivities show by
/// Euler's rule for homogeneous functions: where the element is homogeneous of degree `d >= 1`
/// in one group (a term's factors from it raised to `d` in all: a sum, a product's factor, a
/// square), that group's sensitivity is `d` times the magnitudes of the terms it enters;
/// where no group is homogeneous alone (a sum of one-group terms: `sum(x) - sum(y)`,
/// `x^2 - y^2`, a scan clipped to bounds that are parameters) but every group together is, of
/// degree `D >= 1`, the groups' sensitivities sum to `D` times the terms' magnitudes. A group
/// of degree 0 or below (a normalisation's input, a divisor) tells nothing of the terms: its
/// sensitivity holds magnitudes that cancel inside (a layer norm of 2000 +- 1), so the
/// element then keeps `base`.
fn terms_of(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>], base: Vec<Vec<f64>>, each: &[GroupScale]) -> Vec<Vec<f64>> {
    let joint = degrees(op, case, plain, Scaling::All);
    let per: Vec<Vec<Vec<Option<i32>>>> = each.iter().map(|(g, _)| degrees(op, case, plain, Scaling::of(*g))).collect();
    let mut out = base;
    for (o, t) in out.iter_mut().enumerate() {
        for (i, t) in t.iter_mut().enumerate() {
            let at = |g: usize| (each[g].1[o][i], per[g][o][i]);
            let moved: Vec<(f64, Option<i32>)> = (0..each.len()).map(at).filter(|(s, _)| *s > 0.0).collect();
            if moved.iter().any(|(_, d)| d.is_some_and(|d| d <= 0)) {
                continue;
            }
            let own = moved.iter().filter_map(|(s, d)| d.map(|d| s / d as f64)).fold(0.0, f64::max);
            let summed = match joint[o][i] {
                Some(d) if d >= 1 && moved.iter().all(|(_, d)| d.is_none()) => moved.iter().map(|(s, _)| s).sum::<f64>() / d as f64,
                _ => 0.0,
            };
            *t = t.max(own).max(summed);
        }
    }
    out
}

/// A zero for every element of every output of `plain`.
fn zeros_like(plain: &[Vec<f64>]) -> Vec<Vec<f64>> {
    filled_like(plain, 0.0)
}

/// `v` for every element of every output of `plain`.
fn filled_like<T: Clone>(plain: &[Vec<f64>], v: T) -> Vec<Vec<T>> {
    plain.iter().map(|p| vec![v.clone(); p.len()]).collect()
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
/// [`Scaling::All`]), one pass for every `x`.
fn carry_sensitivity(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>], expected: &[Tensor], all: &[Vec<bool>]) -> Vec<Vec<f64>> {
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
/// `all` is [`doubles_with`] under [`Scaling::All`] (the same for every `k`).
fn carries(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>], k: usize, all: &[Vec<bool>]) -> Vec<Vec<bool>> {
    let others = case.inputs.iter().enumerate().any(|(i, t)| i != k && t.dtype().is_float())
        || case.params.iter().any(|p| matches!(p, Scalar::F32(_) | Scalar::F64(_)));
    let alone = doubles_with(op, case, plain, Scaling::Only(k), false);
    let with_others = if others { doubles_with(op, case, plain, Scaling::AllBut(k), true) } else { filled_like(plain, false) };
    let out = alone.into_iter().zip(all).zip(with_others);
    out.map(|((a, b), o)| a.into_iter().zip(b).zip(o).map(|((a, b), o)| (a || *b) && !o).collect()).collect()
}

/// Which elements of each output double (halve) when the values `which` names are doubled
/// (halved), within 1e-9 relative, by either factor (see [`carries`]); a zero element counts
/// only where not `nonzero`.
fn doubles_with(op: &RegisteredOp, case: &Case, plain: &[Vec<f64>], which: Scaling, nonzero: bool) -> Vec<Vec<bool>> {
    let mut out = filled_like(plain, false);
    for by in [2.0, 0.5] {
        let Ok(scaled) = reference_f64(op, &case.inputs, &case.params, &mut Feed::Scaled { by, which }) else { continue };
        for ((o, p), d) in out.iter_mut().zip(plain).zip(&scaled).filter(|((_, p), d)| p.len() == d.len()) {
            for ((o, p), d) in o.iter_mut().zip(p).zip(d) {
                *o |= p.is_finite() && !(nonzero && *p == 0.0) && (d - by * p).abs() <= 1e-9 * (by * p).abs();
            }
        }
    }
    out
}

/// The `accum` scale of every output: `r64` (the reference in f64) and `S`, each one value per
/// element of the reference's output. `S` is the largest of what the computation itself shows
/// about the size of its rounding errors:
/// - `|r64|`: a result is rounded at its own magnitude;
/// - the reference in f64 on the absolute values of the inputs: the sum of |terms| for sums
///   and products (`sum |a_ip b_pj|` for matmul), exactly their condition number;
/// - the measured sensitivity (`sensitivity`): how far the f64 reference moves per unit of
///   relative perturbation of an input or of the float parameters. A backward-stable kernel (one
///   whose result is the exact one of inputs moved by a few eps, relatively: every pairwise or
///   sequential sum, `exp(x - max)`, a running value clipped each step) is off by at most a
///   few eps times this. It is what the first two miss where the computation cancels or is
///   clipped: a running value clipped to `[lo, hi]` after large terms of both signs, a
///   softmax of large inputs, `sum(x) - sum(y)`; there the op on `|x|` is far smaller than the
///   magnitudes inside the computation.
///
/// With the measurement, also `C`, the running-value scale of an output shaped like an input
/// (`carry_sensitivity`; the carry allowance of `compare`), and the terms' magnitudes `T` that
/// `compare`'s overflow rule splits (`terms_of`; see [`AccumScale::terms`]).
///
/// `flushed` are the inputs with subnormals flushed, if the case has any (their f64 result
/// anchors the flushed-input allowance). A failure is an error (a typed
/// [`ConformanceFailure::Scale`](super::ConformanceFailure::Scale)), never a default. Integer
/// outputs need no scale (they compare bit for bit).
pub fn accum_scales(op: &RegisteredOp, case: &Case, expected: &[Tensor], flushed: Option<&[Tensor]>) -> Result<Vec<AccumScale>, String> {
    scales(op, case, expected, flushed, true)
}

/// [`accum_scales`] without the measured sensitivity: `S` from `|r64|` and the op on `|x|`
/// only, which is never larger. A case that conforms under it conforms under the full scale,
/// so conformance measures the sensitivity only for a case that fails under this one (the
/// measurement runs the f64 reference four more times per float input).
pub(super) fn accum_scales_unmeasured(
    op: &RegisteredOp,
    case: &Case,
    expected: &[Tensor],
    flushed: Option<&[Tensor]>,
) -> Result<Vec<AccumScale>, String> {
    scales(op, case, expected, flushed, false)
}

fn scales(
    op: &RegisteredOp,
    case: &Case,
    expected: &[Tensor],
    flushed: Option<&[Tensor]>,
    measure: bool,
) -> Result<Vec<AccumScale>, String> {
    let len = |i: usize| output_reduction_len(op, case, i);
    if !expected.iter().any(|e| e.dtype().is_float()) {
        return Ok(expected.iter().enumerate().map(|(i, _)| AccumScale { len: len(i), ..AccumScale::default() }).collect());
    }
    let abs = reference_f64(op, &case.inputs, &case.params, &mut Feed::Abs)?;
    let plain = reference_f64(op, &case.inputs, &case.params, &mut Feed::Plain)?;
    // The flushed-input allowance is optional: without its anchor, it is not granted.
    let flushed = flushed.and_then(|f| reference_f64(op, f, &case.params, &mut Feed::Plain).ok());
    if abs.len() != expected.len() || plain.len() != expected.len() {
        return Err(format!("the f64 reference returned {} and {} output(s), the reference {}", abs.len(), plain.len(), expected.len()));
    }
    let (sens, each) = if measure { sensitivity(op, case, &plain) } else { (zeros_like(&plain), Vec::new()) };
    let carry = if measure {
        carry_sensitivity(op, case, &plain, expected, &doubles_with(op, case, &plain, Scaling::All, false))
    } else {
        zeros_like(&plain)
    };
    let base: Vec<Vec<f64>> = abs.iter().zip(&plain).map(|(a, p)| a.iter().zip(p).map(|(x, y)| x.abs().max(y.abs())).collect()).collect();
    let terms = if measure { terms_of(op, case, &plain, base, &each) } else { base };
    expected
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (a, p, m) = (&abs[i], &plain[i], &sens[i]);
            if a.len() != e.numel() || p.len() != e.numel() {
                return Err(format!(
                    "output {i}: the f64 reference returned {} and {} element(s), the reference {}",
                    a.len(),
                    p.len(),
                    e.numel()
                ));
            }
            let flushed_exact = flushed.as_ref().and_then(|f| f.get(i)).filter(|f| f.len() == e.numel()).cloned().unwrap_or_default();
            let magnitude = a.iter().zip(p).zip(m).map(|((x, y), z)| x.abs().max(y.abs()).max(*z)).collect();
            Ok(AccumScale { len: len(i), magnitude, terms: terms[i].clone(), exact: p.clone(), flushed_exact, carry: carry[i].clone() })
        })
        .collect()
}
