//! Engine-generated gradcheck inputs, drawn with the sampling module conformance uses too
//! (`op_contract::sample`): an admissible binding of the signature's dims and parameters
//! (distinct values for distinct symbols unless the constraints tie them), and tensors whose
//! values are log-uniform across a magnitude range (both signs; which range is `draw`'s choice)
//! inside each input's declared domain, with a few exact repeats and zeros (so ties, zeros and
//! order crossings occur, and the kink handling is exercised). Seeded from the op's content
//! hash: the author picks nothing, and the same content always gets the same case.

use super::steps::drawn_bits;
use op_contract::contract::{DType, Domain};
use op_contract::sample::{fits, in_domain, Caps, Draw, Magnitudes, Rng, Space};
use op_core::op::RegisteredOp;
use op_core::tensor::{Scalar, Tensor};
use op_train::tape::planner;
use std::collections::{BTreeMap, HashMap};

/// Draws of a binding tried before giving up (a third over small dims, a third over wider ones,
/// a third over small dims with parameters no larger than the constraints' literals).
pub const BINDING_TRIES: usize = 6000;

/// Size limits of a gradcheck binding: small draws, but a pinned dim may be large.
const CAPS: Caps = Caps { max_dim: 1 << 40, max_numel: 1 << 28, max_work: None };

/// Float values for the inputs: magnitudes log-uniform over `mags`, both signs, inside each
/// input's domain, rounded to [`DRAWN_BITS`](super::steps::DRAWN_BITS) significant bits (so dense probe steps are exact),
/// with ties and, where `zeros`, an exact zero generated on purpose (order crossings and kinks
/// must be met and skipped, or probed by the kink check), but only in pairs: a value occurs at
/// most twice. Where three or more inputs tie, one-sided differences can agree while no
/// derivative exists (the middle of three equal lines), which is exactly what the kink test
/// cannot see.
pub fn fill(n: usize, domain: Option<&Domain>, mags: Magnitudes, zeros: bool, rng: &mut Rng) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::with_capacity(n);
    // How often each value occurs so far, by bits (zeros under +0: no -0 is ever drawn).
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let zero_ok = zeros && domain.is_none_or(|d| d.contains(0.0));
    let draw = |rng: &mut Rng| {
        let v = mags.value(rng, domain);
        let r = drawn_bits(v);
        if domain.is_none_or(|d| d.contains(r)) {
            r
        } else {
            v
        }
    };
    for _ in 0..n {
        let r = rng.unit();
        let count = |seen: &HashMap<u64, usize>, v: f64| seen.get(&v.to_bits()).copied().unwrap_or(0);
        let v = if r < 0.04 && !out.is_empty() {
            let c = out[rng.index(out.len())];
            (count(&seen, c) < 2).then_some(c)
        } else if r < 0.07 && zero_ok && count(&seen, 0.0) == 0 {
            Some(0.0)
        } else {
            None
        };
        let v = v.unwrap_or_else(|| draw(rng));
        *seen.entry(v.to_bits()).or_default() += 1;
        out.push(v);
    }
    both_signs(&mut out, domain, &seen, rng);
    span_magnitudes(&mut out, domain, mags, rng);
    out
}

/// Where a draw of three or more values left the top or the bottom third of its magnitude range
/// (on a log scale) unvisited, one of its nonzero values that is not the only one in the other
/// end redrawn inside the missing end, its sign kept and every copy of it replaced (a tie stays
/// a tie): every such draw with two distinct nonzero values then reaches both ends, so a
/// backward wrong only at large (or only at small) magnitudes is met by every draw, not by luck
/// (three log-uniform values miss the top third about 30% of the time). A redraw the domain
/// refuses is left out.
fn span_magnitudes(out: &mut [f64], domain: Option<&Domain>, mags: Magnitudes, rng: &mut Rng) {
    if out.len() < 3 || !(mags.lo > 0.0 && mags.hi > mags.lo && mags.hi.is_finite()) {
        return;
    }
    let third = (mags.hi.ln() - mags.lo.ln()) / 3.0;
    let ends = [Magnitudes { lo: mags.lo, hi: (mags.lo.ln() + third).exp() }, Magnitudes { lo: (mags.hi.ln() - third).exp(), hi: mags.hi }];
    let inside = |x: f64, e: &Magnitudes| x != 0.0 && x.abs() >= e.lo && x.abs() <= e.hi;
    for k in 0..2 {
        if out.iter().any(|x| inside(*x, &ends[k])) {
            continue;
        }
        // Distinct nonzero values, leaving out the only value inside the other end.
        let other: Vec<f64> = out.iter().copied().filter(|x| inside(*x, &ends[1 - k])).collect();
        let sole_other = other.first().filter(|f| other.iter().all(|x| x == *f)).copied();
        let mut values: Vec<f64> = out.iter().copied().filter(|x| *x != 0.0 && Some(*x) != sole_other).collect();
        values.sort_by(f64::total_cmp);
        values.dedup();
        if values.is_empty() {
            continue;
        }
        let old = values[rng.index(values.len())];
        let v = drawn_bits(old.signum() * rng.log_uniform(ends[k].lo, ends[k].hi));
        if domain.is_none_or(|d| d.contains(v)) && !out.contains(&v) {
            out.iter_mut().filter(|x| **x == old).for_each(|x| *x = v);
        }
    }
}

/// Where two or more nonzero values share one sign and the domain holds the other, one of them
/// that occurs once (a tie stays a tie) negated: every draw then has both signs, so a backward wrong only
/// for negative (or only for positive) values cannot pass because a small input drew one sign.
fn both_signs(out: &mut [f64], domain: Option<&Domain>, seen: &HashMap<u64, usize>, rng: &mut Rng) {
    let (neg, pos) = (out.iter().filter(|x| **x < 0.0).count(), out.iter().filter(|x| **x > 0.0).count());
    if (neg > 0 && pos > 0) || neg + pos < 2 {
        return;
    }
    let single: Vec<usize> = (0..out.len()).filter(|&i| out[i] != 0.0 && seen.get(&out[i].to_bits()) == Some(&1)).collect();
    if single.is_empty() {
        return;
    }
    let i = single[rng.index(single.len())];
    if domain.is_none_or(|d| d.contains(-out[i])) {
        out[i] = -out[i];
    }
}

/// An admissible binding of dims and parameters.
#[derive(Clone, Debug)]
pub struct Binding {
    /// Every dim symbol and integer parameter with its value.
    pub env: BTreeMap<String, i128>,
    /// Parameter values in signature order (floats as f64).
    pub params: Vec<Scalar>,
    /// Shapes of the tensor inputs.
    pub shapes: Vec<Vec<usize>>,
}

/// An admissible binding in the interior of the parameter space: among up to 16 admissible
/// samples, the first whose integer parameters all lie strictly between the smallest and the
/// largest admissible value seen (degenerate boundary values, e.g. a window of 1 where a median
/// is the identity, are conformance's concern, not gradcheck's).
/// Names in `pin` (dim symbols or integer parameters) take the given value instead of a draw.
pub fn binding(op: &RegisteredOp, pin: &[(String, i128)], rng: &mut Rng) -> Option<Binding> {
    let space = Space::new(&op.contract.signature);
    let pin: Vec<(usize, i128)> = pin.iter().filter_map(|(n, v)| space.slot(n).map(|k| (k, *v))).collect();
    let ints: Vec<usize> = space.int_params().iter().map(|(k, _)| *k).collect();
    let mut found: Vec<Vec<i128>> = Vec::new();
    for _ in 0..16 {
        match sample(op, &space, &pin, rng) {
            Some(b) => found.push(b),
            None => break,
        }
        if ints.is_empty() {
            break;
        }
    }
    let interior = |v: &Vec<i128>| {
        ints.iter().all(|&k| {
            let lo = found.iter().map(|f| f[k]).min().unwrap_or(v[k]);
            let hi = found.iter().map(|f| f[k]).max().unwrap_or(v[k]);
            lo < v[k] && v[k] < hi
        })
    };
    let pick = found.iter().position(interior).unwrap_or(0);
    let values = found.into_iter().nth(pick)?;
    let shapes = space.input_shapes(&values)?;
    Some(Binding { env: space.env(&values), params: params(op, &space, &values, rng)?, shapes })
}

/// Size limits of a reach binding ([`reach`]): dims up to 64, tensors of at most 2048
/// elements (a matmul's operands of about 45 x 45). No bound on the product of the symbols: a
/// parameter at 64 would leave the dims no room.
const REACH_CAPS: Caps = Caps { max_dim: 64, max_numel: 2048, max_work: None };
/// Dims of a reach binding, log-uniform (the largest of [`REACH_DRAWS`] draws is kept).
const REACH_DIMS: (i128, i128) = (2, 64);
/// Largest integer parameter value a reach binding tries (a window, an order of a difference).
const REACH_PARAM: i128 = 256;

/// An admissible binding at the reach of the parameter space, where [`binding`]'s interior
/// draws do not go: each integer parameter at the largest value admitted among the constraints'
/// literals and one either side and 8, 16, 32, 48, 64 (at most [`REACH_PARAM`]; in signature
/// order, each with those before it fixed), dims the largest of [`REACH_DRAWS`] draws over
/// 2..=64 within [`REACH_CAPS`]. A rule wrong only for a window above 17 or beyond 40 elements
/// is met here. Names in `pin` keep their value. `None` where nothing is admissible.
pub fn reach(op: &RegisteredOp, pin: &[(String, i128)], rng: &mut Rng) -> Option<Binding> {
    let space = Space::new(&op.contract.signature);
    let mut fixed: Vec<(usize, i128)> = pin.iter().filter_map(|(n, v)| space.slot(n).map(|k| (k, *v))).collect();
    let (lo, top) = param_range(&space);
    let how = Draw { dims: REACH_DIMS, params: (lo, top.min(REACH_PARAM)) };
    let draw = |fixed: &[(usize, i128)], rng: &mut Rng| space.sample(rng, how, REACH_CAPS, 100, fixed).filter(|v| admitted(op, &space, v));
    for &(k, dt) in space.int_params() {
        if fixed.iter().any(|(s, _)| *s == k) {
            continue;
        }
        let mut tries: Vec<i128> = space.literals().iter().flat_map(|l| [l + 1, *l, l - 1]).chain([64, 48, 32, 16, 8]).collect();
        tries.retain(|v| v.abs() <= REACH_PARAM && fits(*v, dt));
        tries.sort_unstable_by(|a, b| b.cmp(a));
        tries.dedup();
        let best = tries.into_iter().find(|v| draw(&[fixed.as_slice(), &[(k, *v)]].concat(), rng).is_some());
        fixed.extend(best.map(|v| (k, v)));
    }
    // The largest of many draws (by the inputs' elements): a single log-uniform draw over
    // 2..=64 stays at or under 40 six times in seven, 64 of them about once in 10^4.
    let numel = |v: &Vec<i128>| space.sizes(v).map_or(0, |s| s.inputs.iter().sum::<usize>());
    let values = (0..REACH_DRAWS).filter_map(|_| draw(&fixed, rng)).max_by_key(numel)?;
    let shapes = space.input_shapes(&values)?;
    Some(Binding { env: space.env(&values), params: params(op, &space, &values, rng)?, shapes })
}

/// Admissible draws a reach binding picks the largest of.
const REACH_DRAWS: usize = 64;

/// One admissible binding, distinct symbols with distinct values where the constraints allow:
/// dims log-uniform over 2..=24 first, then over 1..=64 with wider parameters; checked by the
/// oracle, then by the planner's shape-only validation, so nothing large is ever built.
///
/// Integer parameters that the constraints confine jointly to a small set (a permutation's
/// axes `p0..p3`, each below 4 and pairwise distinct: one draw in some 50,000 from `0..=32`)
/// are rarely drawn together from those ranges; where both found nothing, a last round draws
/// the parameters no larger than the constraints' largest literal. Reached only after the first
/// two found nothing, so it moves no binding they find.
fn sample(op: &RegisteredOp, space: &Space<'_>, pin: &[(usize, i128)], rng: &mut Rng) -> Option<Vec<i128>> {
    let (lo, top) = param_range(space);
    for how in
        [Draw { dims: (2, 24), params: (lo, 32) }, Draw { dims: (1, 64), params: (lo, 256) }, Draw { dims: (2, 24), params: (lo, top) }]
    {
        for _ in 0..BINDING_TRIES / 3 / 200 {
            let Some(values) = space.sample(rng, how, CAPS, 200, pin) else { continue };
            if admitted(op, space, &values) {
                return Some(values);
            }
        }
    }
    None
}

/// The range integer parameters are drawn from up to the constraints' largest literal: from -8
/// where any is signed, else from 0, to that literal (at least one above the start).
fn param_range(space: &Space<'_>) -> (i128, i128) {
    let signed = space.int_params().iter().any(|(_, dt)| matches!(dt, DType::i8 | DType::i16 | DType::i32 | DType::i64));
    let lo = if signed { -8 } else { 0 };
    (lo, space.literals().iter().copied().max().unwrap_or(0).max(lo + 1))
}

/// Whether the planner admits the shapes of a binding (in f64), with placeholder parameters.
fn admitted(op: &RegisteredOp, space: &Space<'_>, values: &[i128]) -> bool {
    let Some(shapes) = space.input_shapes(values) else { return false };
    let Some(params) = params(op, space, values, &mut Rng::new(0)) else { return false };
    let typed: Vec<(DType, &[usize])> =
        op.contract.signature.inputs().zip(&shapes).map(|(t, s)| (planner::run_dtype(t.dtype, Some(DType::f64)), s.as_slice())).collect();
    planner::infer(op, &typed, &params, Some(DType::f64)).is_ok()
}

/// The parameters of a binding in signature order: integers from `values`, floats log-uniform
/// across magnitudes with a random sign, booleans at random, redrawn until the float
/// constraints hold ([`Space::admitted_params`]); `None` (no binding) when no draw does.
fn params(op: &RegisteredOp, space: &Space<'_>, values: &[i128], rng: &mut Rng) -> Option<Vec<Scalar>> {
    let sig = &op.contract.signature;
    let draw = |rng: &mut Rng| -> Option<Vec<Scalar>> {
        sig.params()
            .map(|p| {
                if p.dtype.is_float() {
                    Some(Scalar::F64(Magnitudes::ORDINARY.value(rng, None)))
                } else if p.dtype == DType::bool {
                    Some(Scalar::Bool(rng.chance(0.5)))
                } else {
                    Scalar::from_int(p.dtype, values[space.slot(&p.name)?])
                }
            })
            .collect()
    };
    space.admitted_params(rng, draw, |drawn, n| sig.params().position(|p| p.name == n).and_then(|i| drawn.get(i)).and_then(Scalar::as_f64))
}

/// Builds the input tensors of a binding: f64 for float inputs (values from [`fill`] over
/// `mags[i]` for tensor input `i`, inside each input's domain), small integers otherwise.
pub fn tensors(op: &RegisteredOp, b: &Binding, mags: &[Magnitudes], zeros: bool, rng: &mut Rng) -> Option<Vec<Tensor>> {
    let mut out = Vec::new();
    for ((t, shape), mags) in op.contract.signature.inputs().zip(&b.shapes).zip(mags) {
        let n = op_core::tensor::checked_numel(shape)?;
        let tensor = if t.dtype.is_float() {
            // A declared magnitude range bounds |x| away from zero: no zero is drawn there.
            let zeros = zeros && op.contract.magnitude_of(&t.name).is_none();
            Tensor::from_vec(shape.clone(), fill(n, op.contract.domain_of(&t.name), *mags, zeros, rng))
        } else {
            let ints: Vec<i64> = (0..n).map(|_| rng.int_in(0, 7) as i64).collect();
            let bytes: Vec<u8> = match t.dtype {
                DType::bool => ints.iter().map(|v| (*v % 2) as u8).collect(),
                d => ints.iter().flat_map(|v| v.to_le_bytes()[..d.size()].to_vec()).collect(),
            };
            Tensor::from_bytes(t.dtype.name(), shape.clone(), &bytes)
        };
        out.push(tensor.ok()?);
    }
    Some(out)
}

/// `v` moved into `domain` if it left it (a kink construction setting an element to zero, say).
pub fn keep_in(v: f64, domain: Option<&Domain>, rng: &mut Rng) -> f64 {
    domain.map_or(v, |d| in_domain(v, d, Magnitudes::ORDINARY, rng))
}

#[cfg(test)]
mod tests {
    use super::*;
    use op_core::registry::Registry;

    /// Every draw of three or more values reaches both ends of its magnitude range, across
    /// many seeds, domains and ranges; signs and ties are kept.
    #[test]
    fn every_draw_of_three_or_more_reaches_both_ends_of_its_magnitudes() {
        let log = Registry::with_builtins().lookup("builtin/log").expect("built-in").op();
        let positive = log.contract.domain_of("x").expect("log declares its domain").clone();
        for (mags, domain) in
            [(Magnitudes::ORDINARY, None), (Magnitudes { lo: 1e-2, hi: 10.0 }, None), (Magnitudes::ORDINARY, Some(&positive))]
        {
            let third = (mags.hi.ln() - mags.lo.ln()) / 3.0;
            let (top, bottom) = ((mags.hi.ln() - third).exp(), (mags.lo.ln() + third).exp());
            for seed in 0..2000u64 {
                let mut rng = Rng::new(seed);
                let n = 3 + (seed % 5) as usize;
                let v = fill(n, domain, mags, false, &mut rng);
                let mut distinct = v.clone();
                distinct.sort_by(f64::total_cmp);
                distinct.dedup();
                if distinct.len() < 2 {
                    continue;
                }
                assert!(v.iter().any(|x| x.abs() >= top * (1.0 - 1e-9)), "seed {seed}: no value at the top of {mags:?}: {v:?}");
                assert!(
                    v.iter().any(|x| x.abs() <= bottom * (1.0 + 1e-9) && *x != 0.0),
                    "seed {seed}: none at the bottom of {mags:?}: {v:?}"
                );
                assert!(domain.is_none_or(|d| v.iter().all(|x| d.contains(*x))), "seed {seed}: left the domain: {v:?}");
                for x in &v {
                    assert!(v.iter().filter(|y| *y == x).count() <= 2, "{x} occurs more than twice");
                }
            }
        }
    }

    #[test]
    fn values_cross_magnitudes_inside_the_domain_with_pairs_of_ties() {
        let mut rng = Rng::new(9);
        let v = fill(4000, None, Magnitudes::ORDINARY, true, &mut rng);
        assert!(v.iter().filter(|x| x.abs() > 10.0).count() > 1000, "a third beyond 10 in magnitude");
        assert!(v.iter().filter(|x| x.abs() < 1e-2 && **x != 0.0).count() > 400, "a sixth below 1e-2");
        assert!(v.iter().any(|x| *x < 0.0) && v.contains(&0.0));
        for x in &v {
            assert!(v.iter().filter(|y| *y == x).count() <= 2, "{x} occurs more than twice");
        }
        let log = Registry::with_builtins().lookup("builtin/log").expect("built-in").op();
        let d = log.contract.domain_of("x").expect("log declares its domain");
        assert!(fill(2000, Some(d), Magnitudes::ORDINARY, true, &mut rng).iter().all(|x| *x > 0.0));
        // At most forty significant bits, and no zero where none is asked for.
        assert!(v.iter().all(|x| drawn_bits(*x) == *x));
        assert!(!fill(4000, None, Magnitudes::ORDINARY, false, &mut rng).contains(&0.0));
        // Both signs in every draw of two or more values, where the domain holds both.
        for _ in 0..200 {
            let v = fill(2, None, Magnitudes::ORDINARY, false, &mut rng);
            assert!(v[0] == v[1] || (v.iter().any(|x| *x < 0.0) && v.iter().any(|x| *x > 0.0)), "{v:?}");
        }
    }

    #[test]
    fn bindings_give_distinct_symbols_distinct_values() {
        let mm = Registry::with_builtins().lookup("builtin/matmul").expect("built-in").op();
        for salt in 0..32 {
            let b = binding(&mm, &[], &mut Rng::new(salt)).expect("admissible");
            let (m, k, n) = (b.env["m"], b.env["k"], b.env["n"]);
            assert!(m != k && k != n && m != n, "salt {salt}: {:?}", b.env);
        }
    }
}
