//! Integer reasoning over a signature's constraints, shared by the constraint rules: each
//! symbol's full range (dims `0..=2^63-1`, integer parameters their type's), interval
//! arithmetic bounding every defined value of an expression, propagation of difference bounds
//! (`n < m`, `m < n`) and intervals to a fixpoint, refutation, and a bounded search for
//! admissible witnesses. Refutation is sound (a refuted set has no solution); a search that
//! finds nothing proves nothing, so the rules report only what it finds. No spans here.

use crate::contract::{BinOp, CmpOp, Constraint, DType, Expr};
use std::collections::BTreeMap;

/// A closed interval of integers.
pub(super) type Iv = (i128, i128);

/// The symbols (input dims, then integer parameters) and their full ranges.
#[derive(Clone, Debug)]
pub(super) struct Space {
    /// Symbol names.
    pub syms: Vec<String>,
    /// Each symbol's full range.
    pub full: Vec<Iv>,
}

/// The full range of an integer parameter's dtype (dims are `0..=i64::MAX`).
pub(super) fn dtype_range(d: DType) -> Iv {
    match d {
        DType::u8 => (0, u8::MAX as i128),
        DType::i8 => (i8::MIN as i128, i8::MAX as i128),
        DType::u16 => (0, u16::MAX as i128),
        DType::i16 => (i16::MIN as i128, i16::MAX as i128),
        DType::u32 => (0, u32::MAX as i128),
        DType::i32 => (i32::MIN as i128, i32::MAX as i128),
        DType::u64 => (0, u64::MAX as i128),
        _ => (i64::MIN as i128, i64::MAX as i128),
    }
}

/// The range of a dim.
pub(super) const DIM_RANGE: Iv = (0, i64::MAX as i128);

impl Space {
    fn index(&self, s: &str) -> Option<usize> {
        self.syms.iter().position(|x| x == s)
    }
}

/// Bounds on every defined value of `e` (evaluation in `i128`, where overflow and division by
/// zero are undefined, as in `Expr::eval`) when each symbol lies in its interval; `None` when
/// `e` has no defined value at all.
pub(super) fn interval(e: &Expr, iv: &dyn Fn(&str) -> Option<Iv>) -> Option<Iv> {
    Some(match e {
        Expr::Sym(s) => iv(s)?,
        Expr::Lit(v) => (*v as i128, *v as i128),
        Expr::Neg(a) => {
            let (lo, hi) = interval(a, iv)?;
            (hi.saturating_neg(), lo.saturating_neg())
        }
        Expr::Min(a, b) => {
            let (a, b) = (interval(a, iv)?, interval(b, iv)?);
            (a.0.min(b.0), a.1.min(b.1))
        }
        Expr::Max(a, b) => {
            let (a, b) = (interval(a, iv)?, interval(b, iv)?);
            (a.0.max(b.0), a.1.max(b.1))
        }
        Expr::Bin(op, a, b) => bin_interval(*op, interval(a, iv)?, interval(b, iv)?)?,
    })
}

fn hull(values: impl IntoIterator<Item = i128>) -> Option<Iv> {
    values.into_iter().fold(None, |acc, v| Some(acc.map_or((v, v), |(lo, hi): Iv| (lo.min(v), hi.max(v)))))
}

/// The parts of a divisor interval without zero: negative and positive.
fn nonzero_parts(b: Iv) -> Vec<Iv> {
    let mut parts = Vec::new();
    if b.0 <= -1 {
        parts.push((b.0, b.1.min(-1)));
    }
    if b.1 >= 1 {
        parts.push((b.0.max(1), b.1));
    }
    parts
}

fn bin_interval(op: BinOp, a: Iv, b: Iv) -> Option<Iv> {
    match op {
        BinOp::Add => Some((a.0.saturating_add(b.0), a.1.saturating_add(b.1))),
        BinOp::Sub => Some((a.0.saturating_sub(b.1), a.1.saturating_sub(b.0))),
        BinOp::Mul => hull([a.0.saturating_mul(b.0), a.0.saturating_mul(b.1), a.1.saturating_mul(b.0), a.1.saturating_mul(b.1)]),
        // Truncating division is monotone in each argument on each sign of the divisor, so
        // the corners of each nonzero part bound it.
        BinOp::Div => hull(
            nonzero_parts(b)
                .into_iter()
                .flat_map(|(p, q)| [a.0.checked_div(p), a.0.checked_div(q), a.1.checked_div(p), a.1.checked_div(q)].into_iter().flatten()),
        ),
        BinOp::Rem => {
            let parts = nonzero_parts(b);
            let m = parts.iter().map(|(p, q)| p.unsigned_abs().max(q.unsigned_abs())).max()?;
            let m = i128::try_from(m).unwrap_or(i128::MAX);
            let min_abs = parts.iter().map(|(p, q)| if *p > 0 { *p } else { -*q }).min()?;
            if a.0 >= 0 && a.1 < min_abs {
                return Some(a); // a % b == a
            }
            if b.0 == b.1 && a.1.saturating_sub(a.0) < m && m > 0 {
                // One divisor and a short range: the remainders are exact.
                return hull((a.0..=a.1).filter_map(|x| x.checked_rem(b.0)));
            }
            let lo = if a.0 < 0 { a.0.max(-(m - 1)) } else { 0 };
            let hi = if a.1 > 0 { a.1.min(m - 1) } else { 0 };
            Some((lo, hi))
        }
    }
}

/// Whether some `x` in `a` and `y` in `b` satisfy `x op y`.
pub(super) fn possible(op: CmpOp, a: Iv, b: Iv) -> bool {
    match op {
        CmpOp::Lt => a.0 < b.1,
        CmpOp::Le => a.0 <= b.1,
        CmpOp::Gt => a.1 > b.0,
        CmpOp::Ge => a.1 >= b.0,
        CmpOp::Eq => a.0 <= b.1 && b.0 <= a.1,
        CmpOp::Ne => !(a.0 == a.1 && b.0 == b.1 && a.0 == b.0),
    }
}

/// `sum coef * sym + k`.
#[derive(Clone, Debug, Default, PartialEq)]
struct Lin {
    coef: BTreeMap<String, i128>,
    k: i128,
}

impl Lin {
    fn scale(mut self, c: i128) -> Option<Lin> {
        for v in self.coef.values_mut() {
            *v = v.checked_mul(c)?;
        }
        self.k = self.k.checked_mul(c)?;
        self.coef.retain(|_, v| *v != 0);
        Some(self)
    }
    fn add(mut self, other: Lin) -> Option<Lin> {
        for (s, c) in other.coef {
            let e = self.coef.entry(s).or_insert(0);
            *e = e.checked_add(c)?;
        }
        self.k = self.k.checked_add(other.k)?;
        self.coef.retain(|_, v| *v != 0);
        Some(self)
    }
}

/// The linear form of `e`, if it is linear (sums, differences and products with a literal).
fn linear(e: &Expr) -> Option<Lin> {
    match e {
        Expr::Sym(s) => Some(Lin { coef: BTreeMap::from([(s.clone(), 1)]), k: 0 }),
        Expr::Lit(v) => Some(Lin { coef: BTreeMap::new(), k: *v as i128 }),
        Expr::Neg(a) => linear(a)?.scale(-1),
        Expr::Bin(BinOp::Add, a, b) => linear(a)?.add(linear(b)?),
        Expr::Bin(BinOp::Sub, a, b) => linear(a)?.add(linear(b)?.scale(-1)?),
        Expr::Bin(BinOp::Mul, a, b) => {
            let (a, b) = (linear(a)?, linear(b)?);
            match (a.coef.is_empty(), b.coef.is_empty()) {
                (true, _) => b.scale(a.k),
                (_, true) => a.scale(b.k),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Why a set of constraints has no solution.
#[derive(Clone, Debug)]
pub(super) enum Reason {
    /// Two compared terms can never stand in the relation: their values lie in these ranges.
    Ranges { a: String, a_iv: Iv, op: CmpOp, b: String, b_iv: Iv },
    /// A compared term is never defined (always divides by zero or overflows).
    Undefined(String),
    /// The two sides always differ by `k` (left minus right), and `k op 0` is false.
    Constant { k: i128, op: CmpOp },
    /// A symbol's range became empty, or difference bounds form a negative cycle.
    Empty,
}

/// The outcome of propagation.
#[derive(Clone, Debug)]
pub(super) enum Outcome {
    /// No assignment satisfies the constraints.
    Refuted(Reason),
    /// Every solution lies in these ranges (one per symbol of the space).
    Ranges(Vec<Iv>),
}

/// Closed difference bounds: `d[i][j]` bounds `x_j - x_i` (`None`: unbounded).
pub(super) type Dbm = Vec<Vec<Option<i128>>>;

/// The least value of `e` the difference bounds and ranges prove, when `e` is linear in at
/// most two symbols with unit coefficients of opposite signs (`n - w + 1`), else `None`.
pub(super) fn linear_lower_bound(space: &Space, ranges: &[Iv], dbm: &Dbm, e: &Expr) -> Option<i128> {
    let l = linear(e)?;
    let terms: Vec<(usize, i128)> = l.coef.iter().map(|(s, c)| Some((space.index(s)?, *c))).collect::<Option<_>>()?;
    match terms.as_slice() {
        [] => Some(l.k),
        [(x, 1)] => l.k.checked_add(ranges[*x].0),
        [(x, -1)] => l.k.checked_sub(ranges[*x].1),
        // x - y + k >= k - max(y - x), and max(y - x) is d[x][y].
        [(x, 1), (y, -1)] | [(y, -1), (x, 1)] => l.k.checked_sub(dbm.get(*x)?.get(*y)?.as_ref().copied()?),
        _ => None,
    }
}

/// One comparison `a op b` of a chain.
struct Pair<'a> {
    a: &'a Expr,
    op: CmpOp,
    b: &'a Expr,
}

fn pairs<'a>(cs: &[&'a Constraint]) -> Vec<Pair<'a>> {
    cs.iter().flat_map(|c| c.ops.iter().enumerate().map(move |(i, op)| Pair { a: &c.terms[i], op: *op, b: &c.terms[i + 1] })).collect()
}

/// `lhs <= c` over linear forms, from `a op b` (`!=` gives nothing).
fn as_upper_bounds(p: &Pair<'_>) -> Option<Vec<Lin>> {
    let d = linear(p.a)?.add(linear(p.b)?.scale(-1)?)?;
    let neg = d.clone().scale(-1)?;
    let minus_one = |l: Lin| l.add(Lin { coef: BTreeMap::new(), k: 1 });
    Some(match p.op {
        CmpOp::Le => vec![d],
        CmpOp::Lt => vec![minus_one(d)?],
        CmpOp::Ge => vec![neg],
        CmpOp::Gt => vec![minus_one(neg)?],
        CmpOp::Eq => vec![d, neg],
        CmpOp::Ne => vec![],
    })
}

fn floor_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn ceil_div(a: i128, b: i128) -> i128 {
    -floor_div(-a, b)
}

/// Propagates `cs` over `space` to a fixpoint (at most a few rounds): difference bounds by
/// shortest paths, single-symbol linear bounds, and interval narrowing of `sym op expr`.
pub(super) fn propagate(space: &Space, cs: &[&Constraint]) -> Outcome {
    propagate_full(space, cs).0
}

/// [`propagate`], with the final difference bounds when not refuted.
pub(super) fn propagate_full(space: &Space, cs: &[&Constraint]) -> (Outcome, Dbm) {
    let ps = pairs(cs);
    let mut ranges = space.full.clone();
    let mut linear_forms: Vec<Lin> = Vec::new();
    for p in &ps {
        // Sides that always differ by a constant decide the comparison on their own.
        if let Some(d) = linear(p.a).and_then(|a| a.add(linear(p.b)?.scale(-1)?)) {
            if d.coef.is_empty() && !p.op.apply(d.k, 0) {
                return (Outcome::Refuted(Reason::Constant { k: d.k, op: p.op }), Vec::new());
            }
        }
        linear_forms.extend(as_upper_bounds(p).unwrap_or_default());
    }
    let mut dbm = Vec::new();
    for _round in 0..8 {
        let before = ranges.clone();
        match difference_bounds(space, &linear_forms, &mut ranges) {
            Ok(d) => dbm = d,
            Err(r) => return (Outcome::Refuted(r), Vec::new()),
        }
        if let Err(r) = narrow(space, &ps, &mut ranges) {
            return (Outcome::Refuted(r), Vec::new());
        }
        if ranges == before {
            break;
        }
    }
    (Outcome::Ranges(ranges), dbm)
}

/// Applies the linear forms `l <= 0`: single-symbol ones as bounds, `x - y + k <= 0` ones as
/// edges of a difference graph (with the ranges as edges to a zero node), closed by
/// Floyd-Warshall; a negative cycle or an empty range refutes.
fn difference_bounds(space: &Space, forms: &[Lin], ranges: &mut [Iv]) -> Result<Dbm, Reason> {
    let n = space.syms.len();
    let z = n;
    let mut d: Vec<Vec<Option<i128>>> = vec![vec![None; n + 1]; n + 1];
    let edge = |d: &mut Vec<Vec<Option<i128>>>, from: usize, to: usize, w: i128| {
        let cur = &mut d[from][to];
        *cur = Some(cur.map_or(w, |c| c.min(w)));
    };
    for (i, r) in ranges.iter().enumerate() {
        edge(&mut d, z, i, r.1); // x - 0 <= hi
        edge(&mut d, i, z, r.0.saturating_neg()); // 0 - x <= -lo
    }
    for l in forms {
        let terms: Vec<(usize, i128)> = l.coef.iter().filter_map(|(s, c)| Some((space.index(s)?, *c))).collect();
        if terms.len() != l.coef.len() {
            continue;
        }
        match terms.as_slice() {
            [(x, c)] => {
                // c * x + k <= 0.
                let m = -l.k;
                if *c > 0 {
                    edge(&mut d, z, *x, floor_div(m, *c));
                } else {
                    edge(&mut d, *x, z, -ceil_div(m, *c));
                }
            }
            // x - y + k <= 0, i.e. x - y <= -k: an edge y -> x.
            [(x, 1), (y, -1)] | [(y, -1), (x, 1)] => edge(&mut d, *y, *x, -l.k),
            _ => {}
        }
    }
    for k in 0..=n {
        let row_k = d[k].clone();
        for row in d.iter_mut() {
            let Some(ik) = row[k] else { continue };
            for (cell, kj) in row.iter_mut().zip(&row_k) {
                if let Some(kj) = kj {
                    let w = ik.saturating_add(*kj);
                    if cell.is_none_or(|c| w < c) {
                        *cell = Some(w);
                    }
                }
            }
        }
    }
    if (0..=n).any(|i| d[i][i].is_some_and(|w| w < 0)) {
        return Err(Reason::Empty);
    }
    for (i, r) in ranges.iter_mut().enumerate() {
        if let Some(hi) = d[z][i] {
            r.1 = r.1.min(hi);
        }
        if let Some(neg_lo) = d[i][z] {
            r.0 = r.0.max(neg_lo.saturating_neg());
        }
        if r.0 > r.1 {
            return Err(Reason::Empty);
        }
    }
    Ok(d)
}

/// Interval pass: refutes a pair whose ranges cannot stand in the relation, and narrows a
/// symbol compared with an expression (`x <= e` bounds `x` by `e`'s maximum).
fn narrow(space: &Space, ps: &[Pair<'_>], ranges: &mut [Iv]) -> Result<(), Reason> {
    for p in ps {
        let env = |s: &str| space.index(s).map(|i| ranges[i]);
        let a = interval(p.a, &env).ok_or_else(|| Reason::Undefined(p.a.to_string()))?;
        let b = interval(p.b, &env).ok_or_else(|| Reason::Undefined(p.b.to_string()))?;
        if !possible(p.op, a, b) {
            return Err(Reason::Ranges { a: p.a.to_string(), a_iv: a, op: p.op, b: p.b.to_string(), b_iv: b });
        }
        let mut tighten = |sym: &Expr, op: CmpOp, other: Iv| {
            let Expr::Sym(s) = sym else { return };
            let Some(i) = space.index(s) else { return };
            let r = &mut ranges[i];
            match op {
                CmpOp::Lt => r.1 = r.1.min(other.1.saturating_sub(1)),
                CmpOp::Le => r.1 = r.1.min(other.1),
                CmpOp::Gt => r.0 = r.0.max(other.0.saturating_add(1)),
                CmpOp::Ge => r.0 = r.0.max(other.0),
                CmpOp::Eq => *r = (r.0.max(other.0), r.1.min(other.1)),
                CmpOp::Ne => {}
            }
        };
        tighten(p.a, p.op, b);
        tighten(p.b, flip(p.op), a);
        if ranges.iter().any(|r| r.0 > r.1) {
            return Err(Reason::Empty);
        }
    }
    Ok(())
}

/// `a op b` as `b op' a`.
pub(super) fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        o => o,
    }
}

/// A smallest subset of `cs` (by index) that propagation still refutes, found by dropping
/// constraints one at a time; `None` if `cs` is not refuted.
pub(super) fn refuted_core(space: &Space, cs: &[&Constraint]) -> Option<(Vec<usize>, Reason)> {
    let Outcome::Refuted(mut reason) = propagate(space, cs) else { return None };
    let mut keep: Vec<usize> = (0..cs.len()).collect();
    let mut i = 0;
    while i < keep.len() {
        let trial: Vec<usize> = keep.iter().copied().filter(|&k| k != keep[i]).collect();
        let sub: Vec<&Constraint> = trial.iter().map(|&k| cs[k]).collect();
        match propagate(space, &sub) {
            Outcome::Refuted(r) if !sub.is_empty() => {
                keep = trial;
                reason = r;
            }
            _ => i += 1,
        }
    }
    Some((keep, reason))
}

/// Candidate values in `r` for the witness search: its ends, small values, and every literal
/// of the declaration and its neighbours.
fn candidates(r: Iv, literals: &[i128]) -> Vec<i128> {
    let (lo, hi) = r;
    let mut v: Vec<i128> = Vec::new();
    let mut push = |x: i128| {
        if x >= lo && x <= hi && !v.contains(&x) {
            v.push(x);
        }
    };
    for k in 0..=6 {
        push(lo.saturating_add(k));
        push(hi.saturating_sub(k));
    }
    for x in 0..=12 {
        push(x);
        push(-x);
    }
    for &l in literals {
        for x in [l - 1, l, l + 1, 2 * l, l * l] {
            push(x);
        }
    }
    for x in [16, 31, 32, 33, 64, 100, 1000, 65_536, 1 << 31, 1 << 32, 1 << 62] {
        push(x);
    }
    v.sort_unstable();
    v
}

/// Every literal in the expressions, for the candidates.
pub(super) fn literals<'a>(exprs: impl IntoIterator<Item = &'a Expr>) -> Vec<i128> {
    fn walk(e: &Expr, out: &mut Vec<i128>) {
        match e {
            Expr::Lit(v) => out.push(*v as i128),
            Expr::Sym(_) => {}
            Expr::Neg(a) => walk(a, out),
            Expr::Bin(_, a, b) | Expr::Min(a, b) | Expr::Max(a, b) => {
                walk(a, out);
                walk(b, out);
            }
        }
    }
    let mut out = Vec::new();
    exprs.into_iter().for_each(|e| walk(e, &mut out));
    out.sort_unstable();
    out.dedup();
    out
}

/// The most assignments a search visits.
const BUDGET: usize = 200_000;

/// Searches assignments of `space`'s symbols within `ranges` that satisfy every constraint of
/// `cs` and for which `f` returns `true`; returns the first. Exhaustive over candidate values
/// when their product is small, else a fixed pseudo-random sample of it.
pub(super) fn find(
    space: &Space,
    ranges: &[Iv],
    cs: &[&Constraint],
    lits: &[i128],
    mut f: impl FnMut(&BTreeMap<String, i128>) -> bool,
) -> Option<BTreeMap<String, i128>> {
    let small = ranges.iter().map(|(lo, hi)| (hi - lo + 1) as f64).product::<f64>() <= BUDGET as f64;
    let cands: Vec<Vec<i128>> =
        ranges.iter().map(|&(lo, hi)| if small { (lo..=hi).collect() } else { candidates((lo, hi), lits) }).collect();
    if cands.iter().any(Vec::is_empty) {
        return None;
    }
    // The map keeps its keys; only the values change (no allocation per assignment). `order`
    // maps the map's (sorted) keys to the symbols' positions.
    let mut env: BTreeMap<String, i128> = space.syms.iter().map(|s| (s.clone(), 0)).collect();
    let order: Vec<usize> = env.keys().map(|k| space.index(k).unwrap_or(0)).collect();
    let mut visit = |idx: &[usize], env: &mut BTreeMap<String, i128>| -> bool {
        for ((_, slot), &j) in env.iter_mut().zip(&order) {
            *slot = cands[j][idx[j]];
        }
        cs.iter().all(|c| c.holds(&|s| env.get(s).copied()) == Some(true)) && f(env)
    };
    let total: f64 = cands.iter().map(|c| c.len() as f64).product();
    let mut idx = vec![0usize; space.syms.len()];
    if total <= BUDGET as f64 {
        loop {
            if visit(&idx, &mut env) {
                return Some(env);
            }
            let mut k = 0;
            loop {
                if k == idx.len() {
                    return None;
                }
                idx[k] += 1;
                if idx[k] < cands[k].len() {
                    break;
                }
                idx[k] = 0;
                k += 1;
            }
        }
    }
    // Deterministic pseudo-random sampling (xorshift), seeded by nothing but the shape.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..BUDGET {
        for (k, c) in cands.iter().enumerate() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            idx[k] = (state % c.len() as u64) as usize;
        }
        if visit(&idx, &mut env) {
            return Some(env);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_constraint;
    use syn::parse::Parser;

    fn c(src: &str) -> Constraint {
        Parser::parse2(parse_constraint, src.parse().unwrap()).unwrap().to_constraint()
    }

    fn space() -> Space {
        Space { syms: vec!["n".into(), "m".into(), "w".into()], full: vec![DIM_RANGE, DIM_RANGE, dtype_range(DType::u32)] }
    }

    fn refuted(cs: &[&str]) -> bool {
        let cs: Vec<Constraint> = cs.iter().map(|s| c(s)).collect();
        let refs: Vec<&Constraint> = cs.iter().collect();
        matches!(propagate(&space(), &refs), Outcome::Refuted(_))
    }

    #[test]
    fn refutes_over_the_full_range() {
        assert!(refuted(&["n < n"]));
        assert!(refuted(&["w % 2 == 2"]));
        assert!(refuted(&["n < m", "m < n"]));
        assert!(refuted(&["n + 1 <= m", "m <= n"]));
        assert!(refuted(&["w > 4294967295"]));
        assert!(refuted(&["2 * w == 1"]));
        assert!(refuted(&["w % 2 == 1", "2 <= w <= 2"]));
        assert!(refuted(&["n / 0 >= 0"]));
        assert!(!refuted(&["n < m"]));
        assert!(!refuted(&["w % 2 == 1", "1 <= w <= 31", "w <= n"]));
        assert!(!refuted(&["n - w + 1 >= 0"]));
        assert!(!refuted(&["n * m * w >= 1"]));
    }

    #[test]
    fn core_is_minimal() {
        let cs: Vec<Constraint> = ["w <= 31", "n < m", "w >= 1", "m < n"].iter().map(|s| c(s)).collect();
        let refs: Vec<&Constraint> = cs.iter().collect();
        let (core, _) = refuted_core(&space(), &refs).unwrap();
        assert_eq!(core, vec![1, 3]);
    }

    #[test]
    fn intervals_bound_division_and_remainder() {
        let e = |s: &str| Parser::parse2(crate::parse::parse_expr, s.parse().unwrap()).unwrap().to_expr();
        let iv = |s: &str| if s == "w" { Some((0, 10)) } else { Some((-5, 5)) };
        assert_eq!(interval(&e("w % 3"), &iv), Some((0, 2)));
        assert_eq!(interval(&e("n % w"), &iv), Some((-5, 5)));
        assert_eq!(interval(&e("n / w"), &iv), Some((-5, 5)));
        assert_eq!(interval(&e("10 / (w - w)"), &|_| Some((0, 0))), None);
        assert_eq!(interval(&e("-w + 1"), &iv), Some((-9, 1)));
    }
}
