//! The kink check of ops with kinks (category `selection`, or any op that declares a
//! `subgradient`): points placed exactly on a kink, where the ordinary probes skip, and the
//! declared backward checked there against one-sided differences. Owns constructing those
//! points and the convention they are held to; it must not judge the ordinary probes.
//!
//! Three kinds of kinks are built from the drawn values:
//! - **ties**: an element set equal to the input element an output selected (for the median:
//!   the window's median), so two equal elements meet at the selected position. The engine's
//!   ordering convention for `selection` ops (IEEE total order, ties between equal elements
//!   kept in index order: the earlier one counts as the smaller) names the subgradient there:
//!   the derivative of the earlier element from below and of the later one from above (the
//!   limit from the side where the tie is already broken that way). Moving both together stays
//!   on the kink, so along `e_i + e_j` the backward must match the (two-sided) difference too.
//!   The partner's former value lies below the tied value on every other tie and above it on
//!   the others (each case gets both), never the same pair twice: which of the pair an order
//!   statistic selects depends on that side, and a rule that routes every tie to the later (or
//!   the earlier) element agrees with the convention on one side only.
//! - **zeros**: an element set to 0 (where its domain holds 0), the kink of `relu` and `abs`.
//!   The backward's value must lie between the two one-sided derivatives (ends included: the
//!   subgradients of a kink in one variable; relu's 0 and abs's 0 both qualify).
//! - **bounds**: an element set to a value the op clips or selects at: a float parameter's value
//!   (a clip's `lo` and `hi`, a threshold), or the value an output of the input's size holds at
//!   the element's position where it differs from the element (a clipped element's bound, the
//!   other operand of a `max`). The backward's value must lie between the two one-sided
//!   derivatives, as at a zero; where the value makes no kink (an `exp`'s output), the point
//!   does not count.
//!
//! One-sided derivatives are second-order differences, `(4 s(h) - s(2h)) / 2h` and its mirror,
//! exact on the linear pieces of a selection op; their slack is the ordinary probes' bound plus
//! the difference to the first-order quotient (a truncation estimate). A point counts as a kink
//! only where the one-sided derivatives of one of its elements differ by more than twice that
//! slack.

use super::case::keep_in;
use super::locate::Locator;
use super::probe::{samples, Checker, Dir};
use super::GradcheckError;
use op_contract::sample::Rng;
use op_core::tensor::Tensor;
use std::collections::HashMap;

/// Kinks of each kind (ties, zeros) a gradcheck probes where it can find them. A convention can
/// agree with a wrong one at some kinks (a rule routing a tie's cotangent to the later element
/// matches the convention wherever the tied pair sorts below the selected position), so a few
/// found kinks are not enough: the check keeps placing points until it has this many of a kind.
pub const KINKS_WANTED: usize = 8;
/// Most points placed per gradcheck (ties and zeros in turn, a kind skipped once it has
/// [`KINKS_WANTED`]), so an op with no kinks of a kind costs a bounded number of tries.
pub const KINK_TRIES: usize = 48;
/// Most points placed on bounds per gradcheck, after the ties and zeros.
pub const BOUND_TRIES: usize = 24;

/// What the kink check found.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Kinks {
    /// Points where a tie made a kink.
    pub ties: usize,
    /// Points where a zero made a kink.
    pub zeros: usize,
    /// Points where an element set to a parameter's or an output's value made a kink.
    pub bounds: usize,
}

/// One-sided derivatives of `<u, f>` along `dir` at the current point, and their slack.
#[derive(Debug)]
struct OneSided {
    right: f64,
    left: f64,
    slack: f64,
}

impl OneSided {
    // Written `!(diff <= slack)` so that a NaN counts as a kink.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    fn kink(&self) -> bool {
        !((self.right - self.left).abs() <= 2.0 * self.slack)
    }
    fn near(&self, a: f64, b: f64) -> bool {
        (a - b).abs() <= self.slack + ((a.abs().max(b.abs())) * 1e-12)
    }
    /// Whether `a` lies between the one-sided derivatives (within the slack): a subgradient of
    /// a kink in one variable.
    fn between(&self, a: f64) -> bool {
        a >= self.left.min(self.right) - self.slack && a <= self.left.max(self.right) + self.slack
    }
}

fn one_sided(ck: &Checker, dir: &Dir, u: &[Option<Vec<f64>>], base: &[Tensor]) -> Result<Option<OneSided>, GradcheckError> {
    let Some((d, s, r)) = samples(ck, dir, u, base)? else { return Ok(None) };
    // Indices 4, 5 are +1, +2 steps; 2, 1 are -1, -2; s[3] = 0.
    let right = (4.0 * s[4] - s[5]) / (d[5] - d[3]);
    let left = (4.0 * s[2] - s[1]) / (d[1] - d[3]);
    let trunc = (right - s[4] / d[4]).abs() + (left - s[2] / d[2]).abs();
    let round = ck.round(r, dir.step, right.abs().max(left.abs()));
    let slack = ck.atol + ck.rel * right.abs().max(left.abs()) + trunc + 2.0 * round;
    // Another kink within three steps on either side would corrupt the estimate: the slopes
    // over the second and third step must agree (exactly, on a linear piece), else the point
    // is not probed.
    let slope = |a: usize, b: usize| (s[b] - s[a]) / (d[b] - d[a]);
    if (slope(4, 5) - slope(5, 6)).abs() > 2.0 * slack || (slope(2, 1) - slope(1, 0)).abs() > 2.0 * slack {
        return Ok(None);
    }
    Ok(Some(OneSided { right, left, slack }))
}

/// Where a kink point sits, for reports.
fn name(ck: &Checker, k: usize, j: usize) -> String {
    let t = ck.op.contract.signature.inputs().nth(ck.diff[k]).map(|t| t.name.as_str()).unwrap_or("?");
    format!("`{t}`[{j}]")
}

/// The rejection at a kink of element `j` of differentiable input `k`.
struct Violation<'a> {
    loc: &'a Locator,
    k: usize,
    j: usize,
}

impl Violation<'_> {
    fn error(&self, ck: &Checker, at: String, analytic: f64, o: &OneSided, expected: &str) -> GradcheckError {
        GradcheckError::KinkConvention {
            op: ck.op.id.clone(),
            at,
            analytic,
            left: o.left,
            right: o.right,
            expected: expected.to_string(),
            locus: Box::new(self.loc.at(self.k, self.j)),
        }
    }
}

/// An element of differentiable input `k` equal to some output's value, and a partner to tie
/// with it (only where the value occurs once, so no three-way tie results), never a pair in
/// `seen`. The partner's value lies below the tied value where `below`, above it otherwise
/// (the nearest such element; the nearest of any value where none is): overwriting a smaller
/// element with `v` puts the tied pair just below the rank `v` held (a median or other order
/// statistic then selects the later of the pair), a larger one just above it (it selects the
/// earlier). A rule routing every tie to one of the pair agrees with the convention in one of
/// the two orientations only, so the kink check alternates them rather than leaving the
/// orientation to the draw. Nearest first: a near partner shares most windows with `s`.
fn tie_partner(ck: &Checker, k: usize, base: &[Tensor], below: bool, seen: &[(usize, usize)], rng: &mut Rng) -> Option<(usize, usize)> {
    let x = ck.inputs[ck.diff[k]].as_slice::<f64>()?;
    let outs: Vec<f64> = base.iter().filter_map(|o| o.as_slice::<f64>()).flatten().copied().collect();
    if x.len() < 2 || outs.is_empty() {
        return None;
    }
    for _ in 0..8 {
        let v = outs[rng.index(outs.len())];
        if v == 0.0 {
            continue; // zeros are probed as zeros
        }
        let found: Vec<usize> = (0..x.len()).filter(|&i| x[i].to_bits() == v.to_bits()).collect();
        let [s] = found.as_slice() else { continue };
        let s = *s;
        // Every other element, nearest first (either side of `s` first, at random).
        let first_lo = rng.chance(0.5);
        let mut others: Vec<usize> = (0..x.len()).filter(|&t| t != s && !seen.contains(&(s, t))).collect();
        others.sort_by_key(|&t| (t.abs_diff(s), (t < s) != first_lo));
        let side = |t: &usize| if below { x[*t] < v } else { x[*t] > v };
        let Some(&t) = others.iter().find(|t| side(t)).or(others.first()) else { continue };
        return Some((s, t));
    }
    None
}

/// The step for probing a tie at value `v` between elements `s` and `t` of differentiable input
/// `k`: small enough that three steps either way cross no other element's value (a near-tie
/// with a third element is a second kink the one-sided differences would straddle), or `None`
/// where that step would be lost in rounding.
fn tie_step(ck: &Checker, k: usize, s: usize, t: usize, v: f64) -> Option<f64> {
    ck.inputs[ck.diff[k]].as_slice::<f64>()?;
    clear_step(ck, k..k + 1, &[(k, s), (k, t)], v, ck.step(k, v))
}

/// `step` for a point at value `v`, shrunk so that three steps either way cross no value held
/// by an element of the differentiable inputs `inputs` outside `skip` (a near-tie with a third
/// element is a second kink the one-sided differences would straddle); `None` where that step
/// would be lost in rounding.
fn clear_step(ck: &Checker, inputs: std::ops::Range<usize>, skip: &[(usize, usize)], v: f64, step: f64) -> Option<f64> {
    let values = |q: usize| ck.inputs[ck.diff[q]].as_slice::<f64>().unwrap_or(&[]);
    let gap = inputs
        .flat_map(|q| values(q).iter().enumerate().filter(move |(i, _)| !skip.contains(&(q, *i))).map(|(_, y)| (y - v).abs()))
        .fold(f64::INFINITY, f64::min);
    let step = step.min(gap / 8.0);
    (step > v.abs() * 1e-9).then_some(step)
}

/// Probes one tie: `x[t] = x[s]` in differentiable input `k`. Where moving both together
/// crosses no kink (the tie is the kink), the convention names the one-sided derivative of each;
/// where it does (the common value sits on a kink of its own), each value must lie between its
/// one-sided derivatives, as at a zero.
fn tie(ck: &mut Checker, k: usize, (s, t): (usize, usize), sizes: &[usize], loc: &Locator, rng: &mut Rng) -> Result<bool, GradcheckError> {
    let v = ck.value(k, s).unwrap_or_default();
    if let Some(x) = ck.inputs[ck.diff[k]].as_mut_slice::<f64>() {
        x[t] = v;
    }
    let Some(step) = tie_step(ck, k, s, t, v) else { return Ok(false) };
    let base = ck.forward(&ck.inputs)?;
    let u = ck.cotangent(&ck.out_shapes()?, rng);
    let (i, j) = (s.min(t), s.max(t));
    let g = if ck.has_vjp { Some(ck.vjp(&u)?) } else { None };
    let along = |ck: &Checker, dir: &Dir| -> Result<f64, GradcheckError> {
        match &g {
            Some(g) => Ok(dir.dot(g)),
            None => ck.rule_along(dir, &u),
        }
    };
    let mut pair = Dir::coordinate(sizes, k, i, step);
    pair.v[k][j] = 1.0;
    pair.coord = None;
    let Some(both) = one_sided(ck, &pair, &u, &base)? else { return Ok(false) };
    let mut kink = false;
    for (c, other) in [(i, j), (j, i)] {
        let dir = Dir::coordinate(sizes, k, c, step);
        let Some(o) = one_sided(ck, &dir, &u, &base)? else { continue };
        let a = along(ck, &dir)?;
        let at = format!("{} tied with {}", name(ck, k, c), name(ck, k, other));
        let v = Violation { loc, k, j: c };
        if !o.kink() {
            if !o.near(a, (o.left + o.right) / 2.0) {
                return Err(v.error(ck, at + " (no kink there)", a, &o, "the derivative"));
            }
            continue;
        }
        kink = true;
        let ok = if both.kink() {
            o.between(a)
        } else if c == i {
            o.near(a, o.left)
        } else {
            o.near(a, o.right)
        };
        if !ok {
            let expected = match (both.kink(), c == i) {
                (true, _) => "a value between the one-sided derivatives",
                (false, true) => "the derivative from below (the earlier of equal elements counts as the smaller)",
                (false, false) => "the derivative from above (the later of equal elements counts as the larger)",
            };
            return Err(v.error(ck, at, a, &o, expected));
        }
    }
    // Both tied elements together: the tie holds, so the difference is two-sided there.
    let a = along(ck, &pair)?;
    if kink && !both.kink() && !both.near(a, (both.left + both.right) / 2.0) {
        let at = format!("{} and {} moved together", name(ck, k, i), name(ck, k, j));
        let v = Violation { loc, k, j: i };
        return Err(v.error(ck, at, a, &both, "the derivative along both tied elements (the tie holds there)"));
    }
    Ok(kink)
}

/// Probes one zero: `x[j] = 0` in differentiable input `k`, where its domain holds 0 and no
/// magnitude range is declared for it.
fn zero(ck: &mut Checker, k: usize, j: usize, sizes: &[usize], loc: &Locator, rng: &mut Rng) -> Result<bool, GradcheckError> {
    let t = ck.op.contract.signature.inputs().nth(ck.diff[k]).map(|t| t.name.clone()).unwrap_or_default();
    let domain = ck.op.contract.domain_of(&t).cloned();
    // Not where 0 lies outside the domain, nor outside a declared magnitude range.
    if keep_in(0.0, domain.as_ref(), rng) != 0.0 || ck.op.contract.magnitude_of(&t).is_some() {
        return Ok(false);
    }
    let mut j = j;
    if let Some(x) = ck.inputs[ck.diff[k]].as_mut_slice::<f64>() {
        // One zero per input (the drawn values may hold one already: probe that one).
        match x.iter().position(|v| *v == 0.0) {
            Some(z) => j = z,
            None => x[j] = 0.0,
        }
    }
    let base = ck.forward(&ck.inputs)?;
    let u = ck.cotangent(&ck.out_shapes()?, rng);
    let dir = Dir::coordinate(sizes, k, j, ck.step(k, 0.0));
    let Some(o) = one_sided(ck, &dir, &u, &base)? else { return Ok(false) };
    if !o.kink() {
        return Ok(false);
    }
    let a = ck.rule_along(&dir, &u)?;
    if !o.between(a) {
        let v = Violation { loc, k, j };
        return Err(v.error(ck, format!("{} = 0", name(ck, k, j)), a, &o, "a value between the one-sided derivatives"));
    }
    Ok(true)
}

/// Places points on kinks (ties and zeros in turn, until [`KINKS_WANTED`] of each kind are found
/// or [`KINK_TRIES`] points were placed) from the drawn value cases and checks the backward
/// there; `Err` on the first violation. The checker's inputs are left at the last point (the
/// caller resets them).
pub fn probe(ck: &mut Checker, cases: &[Vec<Tensor>], loc: &Locator, rng: &mut Rng) -> Result<Kinks, GradcheckError> {
    let sizes: Vec<usize> = ck.diff.iter().map(|&p| ck.inputs[p].numel()).collect();
    let mut found = Kinks::default();
    let mut tried: Vec<(usize, usize, (usize, usize))> = Vec::new();
    if cases.is_empty() {
        return Ok(found);
    }
    for p in 0..KINK_TRIES {
        let tie_turn = p % 2 == 0;
        if found.ties >= KINKS_WANTED && found.zeros >= KINKS_WANTED {
            break;
        }
        if (tie_turn && found.ties >= KINKS_WANTED) || (!tie_turn && found.zeros >= KINKS_WANTED) {
            continue;
        }
        // Ties and zeros each go through the cases in turn.
        let (turn, n) = (p / 2, cases.len());
        let case = turn % n;
        ck.inputs = cases[case].clone();
        let Some(k) = (0..sizes.len()).filter(|k| sizes[*k] > 0).nth(rng.index(sizes.iter().filter(|n| **n > 0).count())) else {
            continue;
        };
        if tie_turn {
            let base = ck.forward(&ck.inputs)?;
            // Both orientations of a tie in turn (see `tie_partner`), every case getting both
            // (with an even number of cases, the turn's parity alone would tie an orientation
            // to a case), never the same pair of the same case twice.
            let below = if n % 2 == 0 { (turn + turn / n) % 2 == 0 } else { turn % 2 == 0 };
            let seen: Vec<(usize, usize)> = tried.iter().filter(|(c, q, _)| *c == case && *q == k).map(|(_, _, st)| *st).collect();
            if let Some((s, t)) = tie_partner(ck, k, &base, below, &seen, rng) {
                tried.push((case, k, (s, t)));
                found.ties += tie(ck, k, (s, t), &sizes, loc, rng)? as usize;
            }
        } else {
            let j = rng.index(sizes[k]);
            found.zeros += zero(ck, k, j, &sizes, loc, rng)? as usize;
        }
    }
    // Bounds last, so that the ties and zeros placed do not depend on them.
    for p in 0..BOUND_TRIES {
        if found.bounds >= KINKS_WANTED {
            break;
        }
        ck.inputs = cases[p % cases.len()].clone();
        let Some(k) = (0..sizes.len()).filter(|k| sizes[*k] > 0).nth(rng.index(sizes.iter().filter(|n| **n > 0).count())) else {
            continue;
        };
        let base = ck.forward(&ck.inputs)?;
        let candidates = bound_values(ck, k, &base, rng);
        if candidates.is_empty() {
            continue;
        }
        let (j, v, from) = candidates[rng.index(candidates.len())].clone();
        found.bounds += bound(ck, k, j, (v, &from), &sizes, loc, rng)? as usize;
    }
    Ok(found)
}

/// Values element `j` of differentiable input `k` may be set to so that it sits on a bound:
/// `(j, value, where the value comes from)`. A float parameter's value at a random element, and
/// every element whose value an output of the input's size does not keep at its position
/// (clipped, or replaced by another operand's), set to that output's value. Only values inside
/// the input's domain and declared magnitudes, nonzero (zeros are probed as zeros), and held by
/// no two elements already (no three-way tie results).
fn bound_values(ck: &Checker, k: usize, base: &[Tensor], rng: &mut Rng) -> Vec<(usize, f64, String)> {
    let Some(x) = ck.inputs[ck.diff[k]].as_slice::<f64>() else { return Vec::new() };
    if x.is_empty() {
        return Vec::new();
    }
    let sig = &ck.op.contract.signature;
    let name = sig.inputs().nth(ck.diff[k]).map(|t| t.name.clone()).unwrap_or_default();
    let domain = ck.op.contract.domain_of(&name);
    let magnitude = ck.op.contract.magnitude_of(&name);
    let mut held: HashMap<u64, usize> = HashMap::new();
    for v in x {
        *held.entry((v + 0.0).to_bits()).or_default() += 1;
    }
    let admitted = |v: f64| {
        v != 0.0
            && v.is_finite()
            && domain.is_none_or(|d| d.contains(v))
            && magnitude.is_none_or(|m| v.abs() >= m.lo && v.abs() <= m.hi)
            && held.get(&v.to_bits()).copied().unwrap_or(0) < 2
    };
    let mut out = Vec::new();
    for (p, v) in sig.params().zip(&ck.params) {
        let Some(v) = v.as_f64().filter(|_| p.dtype.is_float()) else { continue };
        let j = rng.index(x.len());
        if admitted(v) && x[j] != v {
            out.push((j, v, format!("parameter `{}`", p.name)));
        }
    }
    for (o, t) in base.iter().zip(&sig.outputs) {
        let Some(y) = o.as_slice::<f64>().filter(|y| y.len() == x.len()) else { continue };
        for (j, (xv, yv)) in x.iter().zip(y).enumerate() {
            if xv != yv && admitted(*yv) {
                out.push((j, *yv, format!("output `{}`[{j}]", t.name)));
            }
        }
    }
    out
}

/// Probes one bound: element `j` of differentiable input `k` set to `v` (see
/// [`bound_values`]), with a step that crosses no other element's value within three steps.
/// Where that makes a kink along the element, the backward must lie between its one-sided
/// derivatives.
fn bound(
    ck: &mut Checker,
    k: usize,
    j: usize,
    (v, from): (f64, &str),
    sizes: &[usize],
    loc: &Locator,
    rng: &mut Rng,
) -> Result<bool, GradcheckError> {
    let Some(x) = ck.inputs[ck.diff[k]].as_mut_slice::<f64>() else { return Ok(false) };
    x[j] = v;
    let Some(step) = clear_step(ck, k..k + 1, &[(k, j)], v, ck.step(k, v)) else { return Ok(false) };
    let base = ck.forward(&ck.inputs)?;
    let u = ck.cotangent(&ck.out_shapes()?, rng);
    let dir = Dir::coordinate(sizes, k, j, step);
    let Some(o) = one_sided(ck, &dir, &u, &base)? else { return Ok(false) };
    if !o.kink() {
        return Ok(false);
    }
    let a = ck.rule_along(&dir, &u)?;
    if !o.between(a) {
        let at = format!("{} = {v:e}, the value of {from}", name(ck, k, j));
        return Err(Violation { loc, k, j }.error(ck, at, a, &o, "a value between the one-sided derivatives"));
    }
    joint(ck, (k, j), v, step, sizes, (&u, &base), loc)?;
    Ok(true)
}

/// Where element `j` of differentiable input `k`, set to `v`, now ties with exactly one other
/// element of any differentiable input (the other operand of a `max`, say): moving both together
/// keeps the tie, so where that direction crosses no kink, the backward along it must match its
/// (two-sided) difference. Each coordinate alone only bounds the backward between one-sided
/// derivatives: a rule giving the whole cotangent to both operands of a tie (or to neither)
/// passes there and is caught here. The step crosses no third element's value within three
/// steps.
fn joint(
    ck: &Checker,
    (k, j): (usize, usize),
    v: f64,
    step: f64,
    sizes: &[usize],
    (u, base): (&[Option<Vec<f64>>], &[Tensor]),
    loc: &Locator,
) -> Result<(), GradcheckError> {
    let values = |q: usize| ck.inputs[ck.diff[q]].as_slice::<f64>().unwrap_or(&[]);
    let partners: Vec<(usize, usize)> = (0..sizes.len())
        .flat_map(|q| values(q).iter().enumerate().filter(move |&(i, y)| *y == v && (q, i) != (k, j)).map(move |(i, _)| (q, i)))
        .collect();
    let [(q, i)] = partners[..] else { return Ok(()) };
    let Some(step) = clear_step(ck, 0..sizes.len(), &[(k, j), (q, i)], v, step) else { return Ok(()) };
    let mut pair = Dir::coordinate(sizes, k, j, step);
    pair.v[q][i] = 1.0;
    pair.coord = None;
    let Some(both) = one_sided(ck, &pair, u, base)? else { return Ok(()) };
    let a = ck.rule_along(&pair, u)?;
    if !both.kink() && !both.near(a, (both.left + both.right) / 2.0) {
        let at = format!("{} and {} moved together (tied at {v:e})", name(ck, k, j), name(ck, q, i));
        let expected = "the derivative along both tied elements (the tie holds there)";
        return Err(Violation { loc, k, j }.error(ck, at, a, &both, expected));
    }
    Ok(())
}
