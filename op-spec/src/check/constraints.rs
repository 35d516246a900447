//! Constraint soundness: constant-false and contradictory constraints, and non-negative output
//! dims via the bounded search. Assumes symbols are bound (`symbols` reports those); reads no files.

use super::symbols::int_params;
use crate::contract::{DType, Expr};
use crate::ctxt::Ctxt;
use crate::model::*;
use std::collections::BTreeMap;

// Rule: a constraint without symbols must hold (a constant-false constraint admits no input).
pub(super) fn check_constant_constraints(cx: &Ctxt, sig: &SSignature) {
    for c in &sig.constraints {
        let mut syms = Vec::new();
        c.terms.iter().for_each(|t| t.symbols(&mut syms));
        if syms.is_empty() {
            match c.to_constraint().holds(&|_| None) {
                Some(true) => {}
                Some(false) => cx.error(
                    c.span
                        .error(format!("constraint `{}` is always false, so no input is admissible; fix or remove it", c.to_constraint())),
                ),
                None => {
                    cx.error(c.span.error(format!("constraint `{}` cannot be evaluated (division by zero or overflow)", c.to_constraint())))
                }
            }
        }
    }
}

/// The range of values a symbol may take: dims are `0..=i64::MAX`, parameters their dtype's.
fn default_range(sig: &SSignature, sym: &str) -> (i128, i128) {
    for a in &sig.args {
        if let SArg::Param(p) = a {
            if p.name == sym {
                return match p.dtype.value {
                    DType::u8 => (0, u8::MAX as i128),
                    DType::i8 => (i8::MIN as i128, i8::MAX as i128),
                    DType::u16 => (0, u16::MAX as i128),
                    DType::i16 => (i16::MIN as i128, i16::MAX as i128),
                    DType::u32 => (0, u32::MAX as i128),
                    DType::i32 => (i32::MIN as i128, i32::MAX as i128),
                    DType::u64 => (0, u64::MAX as i128),
                    _ => (i64::MIN as i128, i64::MAX as i128),
                };
            }
        }
    }
    (0, i64::MAX as i128)
}

/// Interval bounds implied by simple constraints `sym op lit` / `lit op sym`, per symbol,
/// plus the constraint that set each bound (for error spans).
fn intervals(sig: &SSignature, syms: &[String]) -> BTreeMap<String, (i128, i128)> {
    let mut iv: BTreeMap<String, (i128, i128)> = syms.iter().map(|s| (s.clone(), default_range(sig, s))).collect();
    for c in &sig.constraints {
        let cc = c.to_constraint();
        for (i, op) in cc.ops.iter().enumerate() {
            let (a, b) = (&cc.terms[i], &cc.terms[i + 1]);
            use crate::contract::CmpOp::*;
            let (sym, lit, op) = match (a, b) {
                (Expr::Sym(s), Expr::Lit(v)) => (s, *v as i128, *op),
                (Expr::Lit(v), Expr::Sym(s)) => (
                    s,
                    *v as i128,
                    match op {
                        Lt => Gt,
                        Le => Ge,
                        Gt => Lt,
                        Ge => Le,
                        o => *o,
                    },
                ),
                _ => continue,
            };
            let Some(r) = iv.get_mut(sym) else { continue };
            match op {
                Lt => r.1 = r.1.min(lit - 1),
                Le => r.1 = r.1.min(lit),
                Gt => r.0 = r.0.max(lit + 1),
                Ge => r.0 = r.0.max(lit),
                Eq => {
                    r.0 = r.0.max(lit);
                    r.1 = r.1.min(lit);
                }
                Ne => {}
            }
        }
    }
    iv
}

/// Candidate values per symbol for the bounded search: the interval's ends, small values,
/// and every literal of the declaration +-1, clipped to the interval.
fn candidates(lo: i128, hi: i128, literals: &[i128]) -> Vec<i128> {
    let mut v: Vec<i128> = Vec::new();
    let mut push = |x: i128| {
        if x >= lo && x <= hi && !v.contains(&x) {
            v.push(x);
        }
    };
    for k in 0..=6 {
        push(lo + k);
        push(hi - k);
    }
    for x in 0..=12 {
        push(x);
    }
    for &l in literals {
        push(l - 1);
        push(l);
        push(l + 1);
        push(2 * l);
    }
    for x in [16, 31, 32, 33, 64, 100, 1000, 65_536, 1 << 31] {
        push(x);
    }
    v.sort_unstable();
    v
}

fn literals_of(sig: &SSignature) -> Vec<i128> {
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
    sig.constraints.iter().flat_map(|c| c.terms.iter()).for_each(|t| walk(&t.to_expr(), &mut out));
    sig.outputs.iter().flat_map(|o| o.dims.iter()).for_each(|d| walk(&d.to_expr(), &mut out));
    out
}

/// A bounded search over symbol assignments: calls `f` on each assignment that satisfies every
/// constraint until it returns `true`; gives up after a fixed budget. Returns whether the
/// search was exhaustive over the symbols' (finite) intervals.
fn search_admissible(sig: &SSignature, syms: &[String], mut f: impl FnMut(&BTreeMap<String, i128>) -> bool) -> bool {
    const BUDGET: usize = 200_000;
    let iv = intervals(sig, syms);
    if iv.values().any(|(lo, hi)| lo > hi) {
        return true;
    }
    let lits = literals_of(sig);
    let exhaustive = iv.values().map(|(lo, hi)| (hi - lo + 1) as f64).product::<f64>() <= BUDGET as f64;
    let cands: Vec<Vec<i128>> = syms
        .iter()
        .map(|s| {
            let (lo, hi) = iv[s];
            if exhaustive {
                (lo..=hi).collect()
            } else {
                candidates(lo, hi, &lits)
            }
        })
        .collect();
    let constraints: Vec<crate::contract::Constraint> = sig.constraints.iter().map(SConstraint::to_constraint).collect();
    let total: f64 = cands.iter().map(|c| c.len() as f64).product();
    let mut env: BTreeMap<String, i128> = BTreeMap::new();
    let mut visit = |idx: &[usize], env: &mut BTreeMap<String, i128>| -> bool {
        for (s, (c, &i)) in syms.iter().zip(cands.iter().zip(idx)) {
            env.insert(s.clone(), c[i]);
        }
        let ok = constraints.iter().all(|c| c.holds(&|s| env.get(s).copied()) == Some(true));
        ok && f(env)
    };
    if total <= BUDGET as f64 {
        let mut idx = vec![0usize; syms.len()];
        loop {
            if visit(&idx, &mut env) {
                return exhaustive;
            }
            let mut k = 0;
            loop {
                if k == idx.len() {
                    return exhaustive;
                }
                idx[k] += 1;
                if idx[k] < cands[k].len() {
                    break;
                }
                idx[k] = 0;
                k += 1;
            }
        }
    } else {
        // Deterministic pseudo-random sampling (xorshift), seeded by nothing but the shape.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut idx = vec![0usize; syms.len()];
        for _ in 0..BUDGET {
            for (k, c) in cands.iter().enumerate() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                idx[k] = (state % c.len() as u64) as usize;
            }
            if visit(&idx, &mut env) {
                return false;
            }
        }
        false
    }
}

fn all_symbols(sig: &SSignature, dims: &[String]) -> Vec<String> {
    let mut syms = dims.to_vec();
    syms.extend(int_params(sig));
    syms
}

// Rule: the constraints together must admit at least one input (else they contradict).
pub(super) fn check_contradictory_constraints(cx: &Ctxt, sig: &SSignature, dims: &[String]) {
    if sig.constraints.is_empty() {
        return;
    }
    let syms = all_symbols(sig, dims);
    // Constraints without symbols are `check_constant_constraints`' business.
    let mut sig = sig.clone();
    sig.constraints.retain(|c| {
        let mut v = Vec::new();
        c.terms.iter().for_each(|t| t.symbols(&mut v));
        !v.is_empty()
    });
    let sig = &sig;
    if sig.constraints.is_empty() {
        return;
    }
    // Interval contradictions point at the first constraint that empties the symbol's range.
    for (s, (lo, hi)) in intervals(sig, &syms) {
        if lo > hi {
            let mut prefix = sig.clone();
            let culprit = (1..=sig.constraints.len()).find_map(|k| {
                prefix.constraints = sig.constraints[..k].to_vec();
                let (a, b) = intervals(&prefix, std::slice::from_ref(&s))[&s];
                (a > b).then(|| sig.constraints[k - 1].span)
            });
            let span = culprit.unwrap_or(sig.span);
            cx.error(span.error(format!("the constraints on `{s}` contradict each other: together they require {lo} <= {s} <= {hi}, which no value satisfies; fix or remove one of them")));
            return;
        }
    }
    // Exhaustive search over the symbols with small ranges, on the constraints that mention
    // only them: sound (a miss there is a real contradiction), never a guess.
    let iv = intervals(sig, &syms);
    let small: Vec<String> = syms.iter().filter(|s| iv[*s].1 - iv[*s].0 < 4096).cloned().collect();
    let local: Vec<crate::contract::Constraint> = sig
        .constraints
        .iter()
        .map(SConstraint::to_constraint)
        .filter(|c| {
            let mut v = Vec::new();
            c.terms.iter().for_each(|t| t.symbols(&mut v));
            v.iter().all(|s| small.iter().any(|m| m == s))
        })
        .collect();
    let space: f64 = small.iter().map(|s| (iv[s].1 - iv[s].0 + 1) as f64).product();
    if local.is_empty() || space > 200_000.0 {
        return;
    }
    let mut idx: Vec<i128> = small.iter().map(|s| iv[s].0).collect();
    loop {
        let env = |name: &str| small.iter().position(|s| s == name).map(|k| idx[k]);
        if local.iter().all(|c| c.holds(&env) == Some(true)) {
            return;
        }
        let mut k = 0;
        loop {
            if k == idx.len() {
                let text: Vec<String> = local.iter().map(|c| format!("`{c}`")).collect();
                cx.error(sig.constraints[sig.constraints.len() - 1].span.error(format!(
                    "the constraints {} contradict each other: no value of the parameters satisfies all of them",
                    text.join(", ")
                )));
                return;
            }
            idx[k] += 1;
            if idx[k] <= iv[&small[k]].1 {
                break;
            }
            idx[k] = iv[&small[k]].0;
            k += 1;
        }
    }
}

// Rule: every output dim is >= 0 for every admissible input (a bounded search finds
// counterexamples such as `n - w + 1` without `w <= n`).
pub(super) fn check_output_dims_nonnegative(cx: &Ctxt, attr: &OpAttr, sig: &SSignature, dims: &[String]) {
    if !matches!(attr.output, None | Some(SShapeClass::Static(_))) {
        return;
    }
    let syms = all_symbols(sig, dims);
    let mut input_dims: Vec<&SExpr> = Vec::new();
    for a in &sig.args {
        if let SArg::Tensor(t) = a {
            input_dims.extend(t.dims.iter().filter(|d| !matches!(d.kind, SExprKind::Sym(_))));
        }
    }
    for o in &sig.outputs {
        for d in &o.dims {
            let e = d.to_expr();
            let mut syms_here = Vec::new();
            e.symbols(&mut syms_here);
            if syms_here.iter().any(|s| !syms.iter().any(|b| b == s)) {
                continue; // unbound: reported elsewhere
            }
            let mut witness: Option<(BTreeMap<String, i128>, i128)> = None;
            let input_exprs: Vec<Expr> = input_dims.iter().map(|d| d.to_expr()).collect();
            search_admissible(sig, &syms, |env| {
                // Inputs whose own dims would be negative are not admissible.
                if input_exprs.iter().any(|ie| ie.eval_map(env).is_none_or(|v| v < 0)) {
                    return false;
                }
                match e.eval_map(env) {
                    Some(v) if v >= 0 => false,
                    Some(v) => {
                        witness = Some((env.clone(), v));
                        true
                    }
                    None => false,
                }
            });
            if let Some((env, v)) = witness {
                let mut used: Vec<&str> = Vec::new();
                e.symbols(&mut used);
                used.dedup();
                let assign: Vec<String> = syms.iter().filter(|s| used.contains(&s.as_str())).map(|s| format!("{s} = {}", env[s])).collect();
                cx.error(d.span.error(format!(
                    "output dim `{e}` of `{}` can be negative: with {} (admissible under the constraints) it is {v}; add a constraint that rules this out (for `n - w + 1`, add `w <= n`)",
                    o.name,
                    assign.join(", ")
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::check::tests::errs;
    use quote::quote;

    #[test]
    fn negative_output_dim_gives_a_counterexample() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32 where 1 <= w <= 31) -> f32[n - w + 1],
                category = selection, tolerance = exact, backward = none),
            quote!(
                fn f<T: Real>(x: &[T], w: u32) -> Vec<T> {
                    todo!()
                }
            ),
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("output dim `n - w + 1` of `out` can be negative: with n = 0, w = 2 (admissible"), "{}", e[0]);
        assert!(e[0].contains("add `w <= n`"));
    }
    #[test]
    fn contradictions_and_constant_false() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32 where w >= 5, w < 3) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = none),
            quote!(
                fn f(x: &[f32], w: u32) -> Vec<f32> {
                    todo!()
                }
            ),
        );
        assert!(e.iter().any(|m| m.contains("the constraints on `w` contradict each other: together they require 5 <= w <= 2")), "{e:?}");
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32 where 2 > 3) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = none),
            quote!(
                fn f(x: &[f32], w: u32) -> Vec<f32> {
                    todo!()
                }
            ),
        );
        assert!(e.iter().any(|m| m.contains("constraint `2 > 3` is always false")), "{e:?}");
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32 where w % 2 == 1, 2 <= w <= 2) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = none),
            quote!(
                fn f(x: &[f32], w: u32) -> Vec<f32> {
                    todo!()
                }
            ),
        );
        assert!(e.iter().any(|m| m.contains("contradict each other: no value")), "{e:?}");
    }
    #[test]
    fn constant_constraints_are_not_also_contradictions() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], k: u32 where k <= n, 3 < 2) -> f32[n - k],
                category = selection, tolerance = exact, backward = none),
            quote!(
                fn f<T: Real>(x: &[T], k: u32) -> Vec<T> {
                    todo!()
                }
            ),
        );
        assert_eq!(e, vec!["constraint `3 < 2` is always false, so no input is admissible; fix or remove it".to_string()]);
    }
}
