//! Naming where a rejection happened: the element a failing random direction comes down to, and
//! the [`Locus`] (element, shape, dims, parameters, seed) every rejection carries. Owns the
//! narrowing; it must not decide a verdict (`verdict`, `kinks`) or draw values.
//!
//! A dense probe moves every element at once, so its failure says that the backward is wrong
//! somewhere. The narrowing re-measures the same direction, under the same cotangent at the
//! same point, restricted to halves of its elements, and follows the half whose disagreement is
//! larger relative to its bound (the error of the whole is the sum of the halves' errors, so
//! one half carries at least half of it), until [`ONE_HOT`] elements are left; those are then
//! probed one at a time along their own coordinates, and the worst one is the element named.

use super::error::Locus;
use super::probe::{measure, Dir, Measured, Probe};
use super::{GradcheckError, Setup};
use op_core::tensor::Tensor;

/// Elements left when the halving stops and each is probed alone.
pub const ONE_HOT: usize = 16;

/// The element a failing dense probe narrows down to, with its own coordinate probe where that
/// could be measured (not within h of a kink, finite, resolved).
pub struct Found {
    /// Differentiable input.
    pub k: usize,
    /// Element of it.
    pub j: usize,
    /// The element's coordinate probe under the dense probe's cotangent.
    pub probe: Option<Probe>,
    /// Whether that probe is within h of a kink (so the element alone cannot be judged).
    pub kink: bool,
}

/// The elements a direction moves, as `(differentiable input, element)`.
fn support(dir: &Dir) -> Vec<(usize, usize)> {
    dir.v.iter().enumerate().flat_map(|(k, v)| v.iter().enumerate().filter(|(_, x)| **x != 0.0).map(move |(j, _)| (k, j))).collect()
}

/// `dir` restricted to the elements of `part`.
fn restricted(dir: &Dir, part: &[(usize, usize)]) -> Dir {
    let mut v: Vec<Vec<f64>> = dir.v.iter().map(|x| vec![0.0; x.len()]).collect();
    for &(k, j) in part {
        v[k][j] = dir.v[k][j];
    }
    Dir { v, coord: None, step: dir.step }
}

/// How far a measured probe is beyond its bound (0 where it could not be judged: a skip).
fn score(m: &Measured) -> f64 {
    match m {
        Measured::Checked(p) => p.ratio(),
        _ => 0.0,
    }
}

/// Which half of a failing direction carries its error, from the two halves' probes: the one
/// that fails (the larger failure where both do); where neither fails, the one that could not be
/// judged (within h of a kink, say) rather than one that passes, since the error of the whole is
/// the sum of the halves'; else the one further beyond its bound. `true` for the second.
fn follow_second(a: &Measured, b: &Measured) -> bool {
    let fails = |m: &Measured| score(m) > 1.0;
    let passes = |m: &Measured| matches!(m, Measured::Checked(_)) && !fails(m);
    match (fails(a), fails(b)) {
        (true, true) => score(b) > score(a),
        (true, false) => false,
        (false, true) => true,
        (false, false) => passes(a) && !passes(b),
    }
}

/// Narrows the failing dense probe `p` of setup `s` down to one element (see the module docs);
/// `None` for a coordinate probe or a direction that moves nothing. The checker's inputs are
/// left at the probe's case.
pub fn narrow(s: &mut Setup, p: &Probe) -> Result<Option<Found>, GradcheckError> {
    let Some(dense) = p.dense.as_deref() else { return Ok(None) };
    let (dir, u) = dense;
    let Some(case) = s.cases.get(p.case) else { return Ok(None) };
    s.ck.inputs = case.clone();
    let ck = &s.ck;
    let base: Vec<Tensor> = ck.forward(&ck.inputs)?;
    let g = if ck.has_vjp { Some(ck.vjp(u)?) } else { None };
    let mut left = support(dir);
    while left.len() > ONE_HOT {
        let (a, b) = left.split_at(left.len() / 2);
        let ma = measure(ck, &restricted(dir, a), u, &base, g.as_deref())?;
        let mb = measure(ck, &restricted(dir, b), u, &base, g.as_deref())?;
        left = if follow_second(&ma, &mb) { b.to_vec() } else { a.to_vec() };
    }
    let sizes = ck.sizes();
    let mut best: Option<(f64, Found)> = None;
    for (k, j) in left {
        let step = ck.step(k, ck.value(k, j).unwrap_or(1.0));
        let m = measure(ck, &Dir::coordinate(&sizes, k, j, step), u, &base, g.as_deref())?;
        let sc = score(&m);
        if best.as_ref().is_none_or(|(b, _)| sc > *b) {
            let kink = matches!(m, Measured::Kink);
            let probe = match m {
                Measured::Checked(q) => Some(q),
                _ => None,
            };
            best = Some((sc, Found { k, j, probe, kink }));
        }
    }
    Ok(best.map(|(_, f)| f))
}

/// Narrows a dense probe whose VJP and JVP disagree down to one element: halves of its
/// direction compared the same way (`<u, J v>` against `<J^T u, v>`, no differences needed),
/// following the half that disagrees more, down to a single element. `None` for a coordinate
/// probe, or where no VJP is declared.
pub fn narrow_inconsistent(s: &mut Setup, p: &Probe) -> Result<Option<(usize, usize)>, GradcheckError> {
    let Some((dir, u)) = p.dense.as_deref() else { return Ok(None) };
    let Some(case) = s.cases.get(p.case) else { return Ok(None) };
    s.ck.inputs = case.clone();
    let ck = &s.ck;
    if !ck.has_vjp {
        return Ok(None);
    }
    let g = ck.vjp(u)?;
    let gap = |part: &[(usize, usize)]| -> Result<f64, GradcheckError> {
        let d = restricted(dir, part);
        Ok((ck.jvp(&d, u)? - d.dot(&g)).abs())
    };
    let mut left = support(dir);
    while left.len() > 1 {
        let (a, b) = left.split_at(left.len() / 2);
        left = if gap(b)? > gap(a)? { b.to_vec() } else { a.to_vec() };
    }
    Ok(left.first().copied())
}

/// What a [`Locus`] says besides the element, taken from a setup before its checker is lent
/// out (the kink check holds it mutably).
pub struct Locator {
    /// Per differentiable input: its name and shape.
    inputs: Vec<(String, Vec<usize>)>,
    bindings: Vec<(String, String)>,
    content_hash: String,
    salt: u64,
}

impl Locator {
    /// The binding's dims and parameters, the content hash and the salt of setup `s`.
    pub fn of(s: &Setup) -> Locator {
        let sig = &s.contract.signature;
        let names: Vec<String> = sig.inputs().map(|t| t.name.clone()).collect();
        let inputs =
            s.ck.diff
                .iter()
                .map(|&p| (names.get(p).cloned().unwrap_or_default(), s.binding.shapes.get(p).cloned().unwrap_or_default()))
                .collect();
        let mut bindings: Vec<(String, String)> =
            sig.dim_symbols().into_iter().filter_map(|d| s.binding.env.get(&d).map(|v| (d, v.to_string()))).collect();
        bindings.extend(sig.params().zip(&s.ck.params).map(|(p, v)| (p.name.clone(), v.to_string())));
        Locator { inputs, bindings, content_hash: s.ck.op.hash_hex(), salt: s.salt }
    }

    /// The [`Locus`] of element `j` of differentiable input `k`.
    pub fn at(&self, k: usize, j: usize) -> Locus {
        let (input, shape) = self.inputs.get(k).cloned().unwrap_or_default();
        Locus { input, index: j, shape, bindings: self.bindings.clone(), content_hash: self.content_hash.clone(), salt: self.salt }
    }
}

/// The [`Locus`] of element `j` of differentiable input `k` in setup `s`.
pub fn locus(s: &Setup, k: usize, j: usize) -> Locus {
    Locator::of(s).at(k, j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restricted_direction_keeps_only_its_part() {
        let d = Dir { v: vec![vec![1.0, 0.0, 3.0], vec![4.0]], coord: None, step: 1.0 };
        assert_eq!(support(&d), vec![(0, 0), (0, 2), (1, 0)]);
        let r = restricted(&d, &[(0, 2), (1, 0)]);
        assert_eq!(r.v, vec![vec![0.0, 0.0, 3.0], vec![4.0]]);
        assert!(r.coord.is_none());
    }

    #[test]
    fn a_locus_names_the_element_its_shape_bindings_and_seed() {
        let l = Locus {
            input: "x".into(),
            index: 17,
            shape: vec![4, 6],
            bindings: vec![("m".into(), "4".into()), ("n".into(), "6".into())],
            content_hash: "ab12".into(),
            salt: 5,
        };
        assert_eq!(l.element(), "`x`[2, 5]");
        let text = l.to_string();
        assert!(text.starts_with("element `x`[2, 5] (flat index 17) of `x` with shape [4, 6], at m = 4, n = 6"), "{text}");
        assert!(text.contains("seed: content hash ab12 with salt 5 (`GradcheckOptions { salt: 5, .. }` reproduces it)"), "{text}");
        let v = Locus { shape: vec![24], index: 17, bindings: vec![], ..l.clone() };
        assert_eq!(v.element(), "`x`[17]");
        assert!(v.to_string().starts_with("element `x`[17] of `x` with shape [24]; seed"), "{v}");
        assert_eq!(Locus { shape: vec![], index: 0, ..l }.element(), "`x`");
    }
}
