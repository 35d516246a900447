//! Float constraints (`lo <= hi`, `0 <= p <= 1`, `eps > 0`): what their terms may be, and that
//! together they admit a value of every float parameter's own type (so `eps == 0.1` on an `f32`
//! is refused: no f32 equals the f64 `0.1`). Reads only the signature.

use crate::contract::{DType, FloatConstraint, FloatTerm};
use crate::ctxt::Ctxt;
use crate::model::*;
use crate::parse::expr_text;
use std::collections::BTreeMap;

// Rule: a float constraint compares float parameters and numbers (a number may be negated):
// no arithmetic, and no integer symbol (a constraint compares integers or floats, not both).
pub(super) fn check_float_constraint_terms(cx: &Ctxt, sig: &SSignature, int_symbols: &[String]) {
    for c in sig.float_constraints() {
        for t in &c.terms {
            match (&t.kind, t.to_float_term()) {
                (SExprKind::Sym(i), _) if int_symbols.iter().any(|s| i == s) => {
                    let float = first_float(sig, c).unwrap_or_else(|| "a float literal".to_string());
                    cx.error(syn::Error::new(i.span(), format!("constraint compares integer `{i}` with {float}: a constraint compares either integers (dims, integer parameters) or floats (float parameters, numbers); split it in two")));
                }
                (_, Some(_)) => {}
                (_, None) => cx.error(t.span.error(format!(
                    "float constraints compare float parameters and numbers directly, and `{}` is arithmetic; compare the parameters themselves (e.g. `lo <= hi`, `0 <= p <= 1`)",
                    expr_text(t)
                ))),
            }
        }
    }
}

/// The first float parameter (or literal) of `c`, for messages.
fn first_float(sig: &SSignature, c: &SConstraint) -> Option<String> {
    let mut syms = Vec::new();
    c.terms.iter().for_each(|t| t.symbols(&mut syms));
    syms.into_iter().find(|s| sig.is_float_param(&s.to_string())).map(|s| format!("float parameter `{s}`"))
}

/// A float format's values, indexed by a key whose order is the values' order (`-inf` first,
/// `-0` just before `+0`, `+inf` last; NaN excluded: it satisfies no constraint).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fmt {
    F16,
    BF16,
    F32,
    F64,
}

impl Fmt {
    fn of(d: DType) -> Fmt {
        match d {
            DType::f16 => Fmt::F16,
            DType::bf16 => Fmt::BF16,
            DType::f32 => Fmt::F32,
            _ => Fmt::F64,
        }
    }

    /// The bit pattern of +inf (the largest magnitude key).
    fn inf_bits(self) -> i128 {
        match self {
            Fmt::F16 => 0x7c00,
            Fmt::BF16 => 0x7f80,
            Fmt::F32 => 0x7f80_0000,
            Fmt::F64 => 0x7ff0_0000_0000_0000,
        }
    }

    fn keys(self) -> (i128, i128) {
        (-self.inf_bits() - 1, self.inf_bits())
    }

    fn value(self, key: i128) -> f64 {
        let (neg, mag) = if key < 0 { (true, -key - 1) } else { (false, key) };
        let v = match self {
            Fmt::F16 => half_to_f64(mag as u16),
            Fmt::BF16 => f32::from_bits((mag as u32) << 16) as f64,
            Fmt::F32 => f32::from_bits(mag as u32) as f64,
            Fmt::F64 => f64::from_bits(mag as u64),
        };
        if neg {
            -v
        } else {
            v
        }
    }

    /// The smallest key whose value is >= `v` (`up`), or the largest whose value is <= `v`.
    fn round(self, v: f64, up: bool) -> i128 {
        let (mut lo, mut hi) = self.keys();
        if up {
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.value(mid) >= v {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
        } else {
            while lo < hi {
                let mid = lo + (hi - lo + 1) / 2;
                if self.value(mid) <= v {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
        }
        lo
    }
}

/// An IEEE binary16 value.
fn half_to_f64(bits: u16) -> f64 {
    let exp = i32::from((bits >> 10) & 0x1f);
    let mant = f64::from(bits & 0x3ff);
    match exp {
        0 => mant * 2f64.powi(-24),
        31 if mant == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + mant / 1024.0) * 2f64.powi(e - 15),
    }
}

/// Candidate keys of one parameter: around every literal, the extremes, zeros, and `k` values
/// inside every gap between those (all of them when the gap is small), so every order of `k`
/// parameters relative to each other and to the literals is represented.
fn candidates(fmt: Fmt, literals: &[f64], k: usize) -> Vec<i128> {
    let (kmin, kmax) = fmt.keys();
    let mut keys = vec![kmin, kmin + 1, -1, 0, kmax - 1, kmax];
    for &l in literals {
        let (d, u) = (fmt.round(l, false), fmt.round(l, true));
        keys.extend([d - 1, d, u, u + 1]);
    }
    keys.retain(|x| (kmin..=kmax).contains(x));
    keys.sort_unstable();
    keys.dedup();
    let mut out = keys.clone();
    for w in keys.windows(2) {
        let (a, b) = (w[0], w[1]);
        let inside = b - a - 1;
        if inside <= 2 * k as i128 {
            out.extend(a + 1..b);
        } else {
            out.extend((1..=k as i128).map(|i| a + (b - a) * i / (k as i128 + 1)));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The most assignments the satisfiability search visits.
const BUDGET: f64 = 1_000_000.0;

/// Whether some assignment of the parameters (each a value of its own format) satisfies all
/// of `cs`: `Some(true|false)` when the search was complete, `None` when too large to search.
fn satisfiable(params: &[(String, Fmt)], cs: &[FloatConstraint]) -> Option<bool> {
    let literals: Vec<f64> = cs
        .iter()
        .flat_map(|c| &c.terms)
        .filter_map(|t| match t {
            FloatTerm::Lit(l) => Some(l.0),
            FloatTerm::Param(_) => None,
        })
        .collect();
    let cands: Vec<Vec<f64>> =
        params.iter().map(|(_, f)| candidates(*f, &literals, params.len()).into_iter().map(|k| f.value(k)).collect()).collect();
    if cands.iter().map(|c| c.len() as f64).product::<f64>() > BUDGET {
        return None;
    }
    let mut idx = vec![0usize; params.len()];
    loop {
        let env = |s: &str| params.iter().position(|(p, _)| p == s).map(|i| cands[i][idx[i]]);
        if cs.iter().all(|c| c.holds(&env) == Some(true)) {
            return Some(true);
        }
        let mut k = 0;
        loop {
            if k == idx.len() {
                return Some(false);
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

// Rule: the float constraints admit at least one value of each float parameter's type: no
// constant-false one, none that can never hold, no set that contradicts itself.
pub(super) fn check_float_constraints_satisfiable(cx: &Ctxt, sig: &SSignature) {
    let spanned: Vec<(&SConstraint, FloatConstraint)> = sig
        .float_constraints()
        .filter_map(|c| Some((c, c.to_float_constraint()?)))
        .filter(|(_, fc)| fc.terms.iter().all(|t| !matches!(t, FloatTerm::Param(p) if !sig.is_float_param(p))))
        .collect();
    let params_of = |cs: &[&FloatConstraint]| -> Vec<(String, Fmt)> {
        let mut names: BTreeMap<String, Fmt> = BTreeMap::new();
        for t in cs.iter().flat_map(|c| &c.terms) {
            if let FloatTerm::Param(p) = t {
                if let Some(sp) = sig.param(p) {
                    names.insert(p.clone(), Fmt::of(sp.dtype.value));
                }
            }
        }
        names.into_iter().collect()
    };
    for (c, fc) in &spanned {
        let params = params_of(&[fc]);
        let text = c.to_float_constraint().map(|f| f.to_string()).unwrap_or_default();
        match satisfiable(&params, std::slice::from_ref(fc)) {
            Some(false) if params.is_empty() => {
                cx.error(c.span.error(format!("constraint `{text}` is always false, so no input is admissible; fix or remove it")));
                return;
            }
            Some(false) => {
                cx.error(c.span.error(format!(
                    "constraint `{text}` can never hold: no value of {} satisfies it; fix or remove it",
                    describe(sig, &params)
                )));
                return;
            }
            _ => {}
        }
    }
    let all: Vec<&FloatConstraint> = spanned.iter().map(|(_, f)| f).collect();
    let unsat = |sub: &[&FloatConstraint]| {
        let owned: Vec<FloatConstraint> = sub.iter().map(|c| (*c).clone()).collect();
        satisfiable(&params_of(sub), &owned) == Some(false)
    };
    if all.len() < 2 || !unsat(&all) {
        return;
    }
    let mut keep: Vec<usize> = (0..all.len()).collect();
    let mut i = 0;
    while i < keep.len() {
        let trial: Vec<usize> = keep.iter().copied().filter(|&k| k != keep[i]).collect();
        let sub: Vec<&FloatConstraint> = trial.iter().map(|&k| all[k]).collect();
        if sub.len() >= 2 && unsat(&sub) {
            keep = trial;
        } else {
            i += 1;
        }
    }
    let chosen: Vec<&FloatConstraint> = keep.iter().map(|&k| all[k]).collect();
    let text: Vec<String> = chosen.iter().map(|c| format!("`{c}`")).collect();
    cx.error(spanned[keep[keep.len() - 1]].0.span.error(format!(
        "the constraints {} contradict each other: no values of {} satisfy all of them together; fix or remove one of them",
        text.join(", "),
        describe(sig, &params_of(&chosen))
    )));
}

fn describe(sig: &SSignature, params: &[(String, Fmt)]) -> String {
    let parts: Vec<String> =
        params.iter().map(|(p, _)| format!("`{p}: {}`", sig.param(p).map_or("?".to_string(), |x| x.dtype.value.to_string()))).collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::tests::errs;
    use quote::quote;

    fn clamp(sig: proc_macro2::TokenStream) -> Vec<String> {
        errs(
            quote!(name = "a/clamp", version = 1, #sig, category = selection, tolerance = exact, backward = none),
            quote!(
                fn clamp<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
                    todo!()
                }
            ),
        )
    }

    #[test]
    fn float_constraints_are_accepted() {
        assert_eq!(clamp(quote!(signature(x: f32[n], lo: f32, hi: f32 where lo <= hi) -> f32[n])), Vec::<String>::new());
        assert_eq!(
            clamp(quote!(signature(x: f32[n], lo: f32 where 0 <= lo <= 1.5, hi: f32 where hi > -1e-3) -> f32[n])),
            Vec::<String>::new()
        );
    }

    #[test]
    fn float_constraints_that_cannot_hold() {
        let e = clamp(quote!(signature(x: f32[n], lo: f32, hi: f32 where lo < lo) -> f32[n]));
        assert_eq!(e, vec!["constraint `lo < lo` can never hold: no value of `lo: f32` satisfies it; fix or remove it".to_string()]);
        let e = clamp(quote!(signature(x: f32[n], lo: f32, hi: f32 where lo == 0.1) -> f32[n]));
        assert!(e[0].starts_with("constraint `lo == 0.1` can never hold"), "{e:?}");
        let e = clamp(quote!(signature(x: f32[n], lo: f32, hi: f32 where lo < hi, hi < 0, lo > 1) -> f32[n]));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("the constraints `lo < hi`, `hi < 0.0`, `lo > 1.0` contradict each other"), "{}", e[0]);
        // Strictly between 0 and the smallest f32 subnormal: nothing.
        let e = clamp(quote!(signature(x: f32[n], lo: f32, hi: f32 where 0 < lo < 1e-46) -> f32[n]));
        assert_eq!(e.len(), 1, "{e:?}");
        let e = clamp(quote!(signature(x: f32[n], lo: f32, hi: f32 where 2.0 < 1.0) -> f32[n]));
        assert_eq!(e, vec!["constraint `2.0 < 1.0` is always false, so no input is admissible; fix or remove it".to_string()]);
    }

    #[test]
    fn float_constraint_terms() {
        let e = clamp(quote!(signature(x: f32[n], lo: f32, hi: f32 where lo + 1.0 <= hi) -> f32[n]));
        assert!(e[0].starts_with("float constraints compare float parameters and numbers directly"), "{e:?}");
        let e = clamp(quote!(signature(x: f32[n], lo: f32, hi: f32 where lo <= n) -> f32[n]));
        assert!(e[0].starts_with("constraint compares integer `n` with float parameter `lo`"), "{e:?}");
    }

    #[test]
    fn formats_round_and_order() {
        for f in [Fmt::F16, Fmt::BF16, Fmt::F32, Fmt::F64] {
            let (lo, hi) = f.keys();
            assert_eq!(f.value(lo), f64::NEG_INFINITY);
            assert_eq!(f.value(hi), f64::INFINITY);
            assert_eq!(f.value(0), 0.0);
            assert!(f.value(-1).is_sign_negative());
            assert_eq!(f.value(f.round(1.0, true)), 1.0);
        }
        assert_eq!(Fmt::F16.value(Fmt::F16.keys().1 - 1), 65504.0);
        assert_eq!(Fmt::F32.value(Fmt::F32.round(0.1, true)), 0.1f32 as f64);
    }
}
