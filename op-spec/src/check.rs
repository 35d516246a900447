//! The checker: one `check_*` function per cross-cutting rule of a declaration, each stated in
//! a one-line comment, all reporting into one [`Ctxt`]. It reads kernel files (relative to the
//! declaring crate) but never generates code.

use crate::contract::{Access, Category, Contract, DType, Expr, KernelLang, Tolerance, Visibility};
use crate::ctxt::Ctxt;
use crate::model::*;
use crate::reference::{check_reference_fn, RefShape};
use crate::wgsl::{check_wgsl, KernelInfo};
use proc_macro2::Span;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A kernel file and the headers it includes, as read at compile time.
#[derive(Clone, Debug)]
pub struct LoadedKernel {
    /// Absolute path of the source file.
    pub abs_path: PathBuf,
    /// The source bytes (hashed into identity).
    pub bytes: Vec<u8>,
    /// `#include "..."` headers: (path relative to the crate, absolute path, bytes), sorted.
    pub headers: Vec<(String, PathBuf, Vec<u8>)>,
    /// Entry point and workgroup size.
    pub info: KernelInfo,
}

/// The outcome of a successful check: everything the expansion needs.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The span-free contract, with each kernel's entry point resolved.
    pub contract: Contract,
    /// What the expansion needs to know about the reference function.
    pub reference: RefShape,
    /// The loaded kernels, in declaration order.
    pub kernels: Vec<LoadedKernel>,
}

/// Inputs to the checker besides the attribute.
pub struct CheckInput<'a> {
    /// The parsed attribute.
    pub attr: &'a OpAttr,
    /// The reference function the attribute is on.
    pub func: &'a syn::ItemFn,
    /// The doc comment of the function, the op's description.
    pub description: &'a str,
    /// Directories kernel paths are resolved against, in order: the declaring crate's manifest
    /// dir, then the declaring source file's dir.
    pub base_dirs: &'a [PathBuf],
}

/// Runs every rule. Returns `Some` only if no rule reported an error.
pub fn check(cx: &Ctxt, input: &CheckInput<'_>) -> Option<Checked> {
    let attr = input.attr;
    check_required_keys(cx, attr);
    check_category_tolerance(cx, attr);
    let mut reference = RefShape::default();
    let mut kernels = Vec::new();
    if let Some(sig) = &attr.signature {
        check_names_unique(cx, sig);
        let dims = bound_dim_symbols(sig);
        check_symbols_bound(cx, attr, sig, &dims);
        check_constraint_operands(cx, sig);
        check_constant_constraints(cx, sig);
        check_contradictory_constraints(cx, sig, &dims);
        check_output_dims_nonnegative(cx, attr, sig, &dims);
        check_backward_fits_signature(cx, attr, sig);
        check_jvp_arity(cx, attr, sig);
        reference = check_reference_fn(cx, input.func, sig, &dims);
        check_differentiable_reference_is_generic(cx, attr, sig, &reference, input.func);
        for k in &attr.kernels {
            // A kernel is compared with its source only if its descriptor is sound: a source
            // checked against a broken descriptor would only repeat the descriptor's error.
            let descriptor_ok = check_binding_coverage(cx, k, sig, &dims);
            if let Some(lk) = load_and_check_kernel(cx, k, sig, input.base_dirs, descriptor_ok) {
                kernels.push(lk);
            }
        }
    }
    check_subgradient(cx, attr);
    check_license(cx, attr);
    check_public_metadata(cx, attr, input.description);
    if cx.has_errors() {
        return None;
    }
    let mut contract = attr.to_contract()?;
    for (k, lk) in contract.kernels.iter_mut().zip(&kernels) {
        k.entry = lk.info.entry.clone();
    }
    Some(Checked { contract, reference, kernels })
}

fn call_site(attr: &OpAttr) -> Span {
    attr.span.unwrap_or_else(Span::call_site)
}

// Rule: name, version, signature, category, tolerance and backward must all be declared (a
// key written with a malformed value is reported there, not again as missing).
fn check_required_keys(cx: &Ctxt, attr: &OpAttr) {
    let required: [(&str, &str); 6] = [
        ("name", "name = \"user/example/my_op\""),
        ("version", "version = 1"),
        ("signature", "signature(x: f32[n]) -> f32[n]"),
        ("category", "category = elementwise"),
        ("tolerance", "tolerance = ulp(1)"),
        ("backward", "backward = none"),
    ];
    let missing: Vec<(&str, &str)> = required.into_iter().filter(|(k, _)| !attr.keys_present.iter().any(|p| p == k)).collect();
    match missing.as_slice() {
        [] => {}
        [(key, example)] => cx.error(syn::Error::new(call_site(attr), format!("missing key `{key}`: every op declares it; add e.g. `{example}`"))),
        many => {
            let keys: Vec<String> = many.iter().map(|(k, _)| format!("`{k}`")).collect();
            let examples: Vec<String> = many.iter().map(|(_, e)| format!("`{e}`")).collect();
            cx.error(syn::Error::new(
                call_site(attr),
                format!("missing keys {}: every op declares them; add e.g. {}", keys.join(", "), examples.join(", ")),
            ));
        }
    }
}

/// The category x tolerance table: `Ok` if legal, else why not and what to use instead.
pub fn category_tolerance_rule(cat: Category, tol: &Tolerance) -> Result<(), &'static str> {
    use Category::*;
    match (cat, tol) {
        // Selection only compares, selects and permutes: it must reproduce values bit for bit.
        (Selection, Tolerance::Exact) => Ok(()),
        (Selection, _) => Err("`selection` ops do no arithmetic on values, so they must be `exact`"),
        // Integer arithmetic is exact on every backend.
        (Integer, Tolerance::Exact) => Ok(()),
        (Integer, _) => Err("`integer` ops are exact on every backend; use `exact`"),
        // Float arithmetic rounds: `exact` would reject correct kernels (FMA, reassociation).
        (_, Tolerance::Exact) => Err("`exact` is legal only for `selection` and `integer`; float arithmetic rounds, use `ulp(k)`"),
        // Elementwise and transcendental ops are bounded per element in ulps.
        (Elementwise | Transcendental, Tolerance::Ulp(_)) => Ok(()),
        // Reductions and contractions accumulate error with length: a fixed ulp bound is wrong.
        (Reduction | Contraction, Tolerance::Accum(_)) => Ok(()),
        (Reduction | Contraction, _) => Err("`reduction` and `contraction` error grows with length; use `accum(k)` (a matmul cannot slip past with `loose`)"),
        // `accum` is only meaningful where there is an accumulation.
        (_, Tolerance::Accum(_)) => Err("`accum(k)` is for `reduction` and `contraction`; use `ulp(k)`"),
        // `loose` is the approximate category's privilege and nobody else's.
        (Approximate, Tolerance::Loose { .. } | Tolerance::Ulp(_)) => Ok(()),
        (_, Tolerance::Loose { .. }) => Err("`loose(rtol, atol)` is legal only for `approximate` ops; use `ulp(k)`"),
    }
}

// Rule: the tolerance class must be legal for the category (table in `category_tolerance_rule`).
fn check_category_tolerance(cx: &Ctxt, attr: &OpAttr) {
    let (Some(cat), Some(tol)) = (&attr.category, &attr.tolerance) else { return };
    if let Err(why) = category_tolerance_rule(cat.value, &tol.value) {
        cx.error(tol.span.error(format!("tolerance `{}` is illegal for category `{}`: {why}", tol.value, cat.value.name())));
    }
}

// Rule: argument and output names are distinct and differ from dim symbols.
fn check_names_unique(cx: &Ctxt, sig: &SSignature) {
    let mut seen: Vec<String> = Vec::new();
    let idents = sig.args.iter().map(SArg::ident).chain(sig.outputs.iter().filter(|o| o.named).map(|o| &o.name));
    for id in idents {
        let s = id.to_string();
        if seen.contains(&s) {
            cx.error(syn::Error::new(id.span(), format!("`{s}` is declared twice in the signature; give each input, parameter and output its own name")));
        } else {
            seen.push(s);
        }
    }
    let dims = bound_dim_symbols(sig);
    for a in &sig.args {
        if let SArg::Param(p) = a {
            if dims.contains(&p.name.to_string()) {
                cx.error(syn::Error::new(p.name.span(), format!("parameter `{}` has the name of a dim symbol; rename one of them", p.name)));
            }
        }
    }
}

/// Symbols bound by input dims: a bare symbol in some input's dim list.
pub fn bound_dim_symbols(sig: &SSignature) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in &sig.args {
        if let SArg::Tensor(t) = a {
            for d in &t.dims {
                if let SExprKind::Sym(i) = &d.kind {
                    let s = i.to_string();
                    if !out.contains(&s) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out
}

fn int_params(sig: &SSignature) -> Vec<String> {
    sig.args
        .iter()
        .filter_map(|a| match a {
            SArg::Param(p) if p.dtype.value.is_int() => Some(p.name.to_string()),
            _ => None,
        })
        .collect()
}

// Rule: every symbol used in dims, constraints, launch geometry and uniforms is bound by an
// input dim or an integer parameter (outputs of `bounded`/`dynamic` ops may be data-dependent).
fn check_symbols_bound(cx: &Ctxt, attr: &OpAttr, sig: &SSignature, dims: &[String]) {
    let mut bound: Vec<String> = dims.to_vec();
    bound.extend(int_params(sig));
    let all_params: Vec<String> = sig.args.iter().filter(|a| matches!(a, SArg::Param(_))).map(|a| a.ident().to_string()).collect();
    let report = |id: &syn::Ident, where_: &str, extra: &str| {
        let s = id.to_string();
        if all_params.contains(&s) {
            return; // a non-integer parameter: reported by check_constraint_operands
        }
        cx.error(syn::Error::new(
            id.span(),
            format!("symbol `{s}` in {where_} is never bound: bind it as a bare dim of an input (e.g. `x: f32[{s}]`) or declare a parameter `{s}: u32`{extra}"),
        ));
    };
    let free_outputs_ok = matches!(attr.output, Some(SShapeClass::Bounded(..)) | Some(SShapeClass::Dynamic(_)));
    for a in &sig.args {
        if let SArg::Tensor(t) = a {
            for d in t.dims.iter().filter(|d| !matches!(d.kind, SExprKind::Sym(_))) {
                let mut syms = Vec::new();
                d.symbols(&mut syms);
                syms.into_iter().filter(|s| !bound.contains(&s.to_string())).for_each(|s| report(s, &format!("the dims of input `{}`", t.name), ""));
            }
        }
    }
    for o in &sig.outputs {
        for d in &o.dims {
            let mut syms = Vec::new();
            d.symbols(&mut syms);
            for s in syms {
                if !bound.contains(&s.to_string()) && !free_outputs_ok {
                    report(s, &format!("the dims of output `{}`", o.name), "; a data-dependent size needs `output = bounded(expr)` or `output = dynamic`");
                }
            }
        }
    }
    for c in &sig.constraints {
        for t in &c.terms {
            let mut syms = Vec::new();
            t.symbols(&mut syms);
            syms.into_iter().filter(|s| !bound.contains(&s.to_string())).for_each(|s| report(s, "a constraint", ""));
        }
    }
    if let Some(SShapeClass::Bounded(_, e)) = &attr.output {
        let mut syms = Vec::new();
        e.symbols(&mut syms);
        syms.into_iter().filter(|s| !bound.contains(&s.to_string())).for_each(|s| report(s, "the `bounded` limit", ""));
    }
    for k in &attr.kernels {
        if let Some(t) = &k.threads {
            let mut syms = Vec::new();
            t.symbols(&mut syms);
            syms.into_iter().filter(|s| !bound.contains(&s.to_string())).for_each(|s| report(s, "the kernel's `threads`", ""));
        }
        for b in &k.bindings {
            if let SBinding::Uniform { fields, .. } = b {
                for f in fields {
                    let s = f.to_string();
                    if !bound.contains(&s) && !all_params.contains(&s) {
                        report(f, "the uniform block", "");
                    }
                }
            }
        }
    }
}

// Rule: constraints compare integers; float and bool parameters cannot appear in them.
fn check_constraint_operands(cx: &Ctxt, sig: &SSignature) {
    let non_int: BTreeMap<String, DType> = sig
        .args
        .iter()
        .filter_map(|a| match a {
            SArg::Param(p) if !p.dtype.value.is_int() => Some((p.name.to_string(), p.dtype.value)),
            _ => None,
        })
        .collect();
    let mut exprs: Vec<&SExpr> = sig.constraints.iter().flat_map(|c| c.terms.iter()).collect();
    exprs.extend(sig.outputs.iter().flat_map(|o| o.dims.iter()));
    for e in exprs {
        let mut syms = Vec::new();
        e.symbols(&mut syms);
        for s in syms {
            if let Some(d) = non_int.get(&s.to_string()) {
                cx.error(syn::Error::new(s.span(), format!("parameter `{s}` is `{d}`; dims and constraints are integer expressions, so only integer parameters can appear in them")));
            }
        }
    }
}

// Rule: a constraint without symbols must hold (a constant-false constraint admits no input).
fn check_constant_constraints(cx: &Ctxt, sig: &SSignature) {
    for c in &sig.constraints {
        let mut syms = Vec::new();
        c.terms.iter().for_each(|t| t.symbols(&mut syms));
        if syms.is_empty() {
            match c.to_constraint().holds(&|_| None) {
                Some(true) => {}
                Some(false) => cx.error(c.span.error(format!("constraint `{}` is always false, so no input is admissible; fix or remove it", c.to_constraint()))),
                None => cx.error(c.span.error(format!("constraint `{}` cannot be evaluated (division by zero or overflow)", c.to_constraint()))),
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
fn check_contradictory_constraints(cx: &Ctxt, sig: &SSignature, dims: &[String]) {
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
                cx.error(sig.constraints[sig.constraints.len() - 1]
                    .span
                    .error(format!("the constraints {} contradict each other: no value of the parameters satisfies all of them", text.join(", "))));
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
fn check_output_dims_nonnegative(cx: &Ctxt, attr: &OpAttr, sig: &SSignature, dims: &[String]) {
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

// Rule: a differentiable op needs a float input to differentiate and float outputs.
fn check_backward_fits_signature(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    let Some(bw) = &attr.backward else { return };
    if matches!(bw, SBackward::None(_)) {
        return;
    }
    let has_float_input = sig.args.iter().any(|a| matches!(a, SArg::Tensor(t) if t.dtype.value.is_float()));
    if !has_float_input {
        cx.error(bw.span().error("this backward needs a float tensor input to differentiate, and the signature has none; declare `backward = none`"));
    }
    if let SBackward::Declared { vjp: None, jvp: None, span } = bw {
        cx.error(span.error("declare at least one rule: `vjp(path)` or `jvp(path, ...)`"));
    }
}

// Rule: a differentiable op's reference is generic over its float type (unless that type is
// already f64), so gradcheck can run the same body in f64.
fn check_differentiable_reference_is_generic(cx: &Ctxt, attr: &OpAttr, sig: &SSignature, reference: &RefShape, func: &syn::ItemFn) {
    let Some(bw) = &attr.backward else { return };
    if matches!(bw, SBackward::None(_)) || reference.float_generic.is_some() {
        return;
    }
    let floats: Vec<DType> = sig
        .args
        .iter()
        .filter_map(|a| match a {
            SArg::Tensor(t) if t.dtype.value.is_float() => Some(t.dtype.value),
            _ => None,
        })
        .chain(sig.outputs.iter().map(|o| o.dtype.value).filter(|d| d.is_float()))
        .collect();
    if floats.is_empty() || floats.iter().all(|d| *d == DType::f64) {
        return;
    }
    let f = &func.sig.ident;
    cx.error(syn::Error::new(
        f.span(),
        format!("reference `{f}` of a differentiable op must be generic over its float type so gradcheck can run it in f64: write `fn {f}<T: Real>(...)` with `T` for the `{}` elements", floats[0]),
    ));
}

// Rule: `jvp` lists exactly one rule per differentiable (float tensor) input.
fn check_jvp_arity(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    let Some(SBackward::Declared { jvp: Some((span, rules)), .. }) = &attr.backward else { return };
    let diff: Vec<String> = sig.args.iter().filter_map(|a| match a {
        SArg::Tensor(t) if t.dtype.value.is_float() => Some(t.name.to_string()),
        _ => None,
    }).collect();
    if rules.len() != diff.len() && !diff.is_empty() {
        let name = attr.name.as_ref().map(|n| n.value.as_str()).unwrap_or("this op");
        cx.error(span.error(format!(
            "op `{name}` has {} differentiable input(s) ({}) but `jvp` lists {} rule(s); list exactly one rule per differentiable input, in order",
            diff.len(),
            diff.join(", "),
            rules.len()
        )));
    }
}

// Rule: each kernel binds every tensor exactly once, inputs `read`, outputs `read_write`,
// names only tensors of the signature, and has at most one uniform block. Returns whether the
// descriptor is present and sound.
fn check_binding_coverage(cx: &Ctxt, k: &SKernel, sig: &SSignature, dims: &[String]) -> bool {
    let before = cx.error_count();
    let _ = dims;
    let inputs: Vec<String> = sig.args.iter().filter_map(|a| match a {
        SArg::Tensor(t) => Some(t.name.to_string()),
        _ => None,
    }).collect();
    let outputs: Vec<String> = sig.outputs.iter().map(|o| o.name.to_string()).collect();
    let params: Vec<String> = sig.args.iter().filter_map(|a| match a {
        SArg::Param(p) => Some(p.name.to_string()),
        _ => None,
    }).collect();
    let mut bound: Vec<String> = Vec::new();
    let mut uniforms = 0;
    for b in &k.bindings {
        match b {
            SBinding::Buffer { name, access } => {
                let s = name.to_string();
                if bound.contains(&s) {
                    cx.error(syn::Error::new(name.span(), format!("tensor `{s}` is bound twice; bind each tensor exactly once")));
                    continue;
                }
                bound.push(s.clone());
                if inputs.contains(&s) {
                    if access.value != Access::Read {
                        cx.error(access.span.error(format!("input `{s}` must be bound `read`: kernels may not write their inputs")));
                    }
                } else if outputs.contains(&s) {
                    if access.value != Access::ReadWrite {
                        cx.error(access.span.error(format!("output `{s}` must be bound `read_write`: the kernel writes it")));
                    }
                } else if params.contains(&s) {
                    cx.error(syn::Error::new(name.span(), format!("`{s}` is a scalar parameter: pass it in `uniform({s})`, not as a buffer")));
                } else {
                    let mut all = inputs.clone();
                    all.extend(outputs.iter().cloned());
                    let all: Vec<String> = all.iter().map(|t| format!("`{t}`")).collect();
                    cx.error(syn::Error::new(name.span(), format!("`{s}` is not a tensor of the signature (tensors: {}); bind only those, or declare `{s}` in the signature", all.join(", "))));
                }
            }
            SBinding::Uniform { span, fields } => {
                uniforms += 1;
                if uniforms > 1 {
                    cx.error(span.error("a kernel has at most one `uniform(...)` block; merge the fields into one"));
                }
                let mut seen: Vec<String> = Vec::new();
                for f in fields {
                    if seen.contains(&f.to_string()) {
                        cx.error(syn::Error::new(f.span(), format!("uniform field `{f}` is listed twice; list each field once")));
                    }
                    seen.push(f.to_string());
                }
            }
        }
    }
    let anchor = k.bindings_span.unwrap_or(k.span);
    for t in inputs.iter().chain(outputs.iter()) {
        if !bound.contains(t) && k.bindings_span.is_some() {
            let access = if inputs.contains(t) { "read" } else { "read_write" };
            cx.error(anchor.error(format!("tensor `{t}` is not bound by this kernel; add `{t}: {access}` to `bindings(...)`")));
        }
    }
    k.bindings_span.is_some() && cx.error_count() == before
}

/// Reads `rel` against each base in turn. The error text completes "kernel source `rel` ..."
/// and holds no absolute path (diagnostics must not depend on the machine).
fn read_relative(bases: &[PathBuf], rel: &str) -> Result<(PathBuf, Vec<u8>), String> {
    if bases.is_empty() {
        return Err("cannot be found: the crate directory is unknown (CARGO_MANIFEST_DIR is not set)".to_string());
    }
    let mut other: Option<std::io::Error> = None;
    for base in bases {
        let abs = base.join(rel);
        match std::fs::read(&abs) {
            Ok(b) => return Ok((abs, b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => other = other.or(Some(e)),
        }
    }
    Err(match other {
        Some(e) => format!("cannot be read ({e}); check the file's permissions and that it is a file"),
        None => "does not exist relative to the crate's Cargo.toml or to the declaring file's directory; fix the path or add the file".to_string(),
    })
}

/// `#include "..."` targets of a CUDA source, in order.
pub fn cuda_includes(src: &str) -> Vec<String> {
    src.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix('#')?.trim_start().strip_prefix("include")?.trim();
            let rest = rest.strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

// Rule: kernel files exist; WGSL kernels match their descriptor (see `wgsl`); CUDA kernels
// have their entry and one parameter per descriptor field, and their headers exist.
fn load_and_check_kernel(cx: &Ctxt, k: &SKernel, sig: &SSignature, base: &[PathBuf], check_contents: bool) -> Option<LoadedKernel> {
    let (abs_path, bytes) = match read_relative(base, &k.path.value()) {
        Ok(x) => x,
        Err(e) => {
            cx.error(syn::Error::new(k.path.span(), format!("kernel source `{}` {e}", k.path.value())));
            return None;
        }
    };
    if !check_contents {
        return None;
    }
    let Ok(text) = String::from_utf8(bytes.clone()) else {
        cx.error(syn::Error::new(k.path.span(), "kernel source is not UTF-8 text"));
        return None;
    };
    match k.lang {
        KernelLang::Wgsl => {
            let info = check_wgsl(cx, k, sig, &text)?;
            Some(LoadedKernel { abs_path, bytes, headers: Vec::new(), info })
        }
        KernelLang::Cuda => {
            let mut headers: Vec<(String, PathBuf, Vec<u8>)> = Vec::new();
            let dir = Path::new(&k.path.value()).parent().map(Path::to_path_buf).unwrap_or_default();
            let mut queue: Vec<(PathBuf, String)> = cuda_includes(&text).into_iter().map(|i| (dir.clone(), i)).collect();
            while let Some((d, inc)) = queue.pop() {
                let rel = d.join(&inc).to_string_lossy().replace('\\', "/");
                if headers.iter().any(|h| h.0 == rel) {
                    continue;
                }
                match read_relative(base, &rel) {
                    Ok((abs, hb)) => {
                        let ht = String::from_utf8_lossy(&hb).to_string();
                        let hd = Path::new(&rel).parent().map(Path::to_path_buf).unwrap_or_default();
                        queue.extend(cuda_includes(&ht).into_iter().map(|i| (hd.clone(), i)));
                        headers.push((rel, abs, hb));
                    }
                    Err(e) => {
                        cx.error(syn::Error::new(k.path.span(), format!("header `{inc}` included by this kernel (as `{rel}`) {e}")));
                        return None;
                    }
                }
            }
            headers.sort_by(|a, b| a.0.cmp(&b.0));
            let entry = check_cuda_entry(cx, k, &text)?;
            Some(LoadedKernel { abs_path, bytes, headers, info: KernelInfo { entry, workgroup_size: [k.block.as_ref().map(|b| b.value).unwrap_or(256), 1, 1] } })
        }
    }
}

/// The parameter list text of `__global__ ... name(`, if found.
fn cuda_params(src: &str, name: &str) -> Option<Vec<String>> {
    let mut from = 0;
    while let Some(pos) = src[from..].find("__global__") {
        let start = from + pos;
        let rest = &src[start..];
        let open = rest.find('(')?;
        let head = &rest[..open];
        if head.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == name) {
            let close = rest[open..].find(')')? + open;
            let inner = rest[open + 1..close].trim();
            return Some(if inner.is_empty() || inner == "void" { Vec::new() } else { inner.split(',').map(|s| s.trim().to_string()).collect() });
        }
        from = start + 10;
    }
    None
}

fn global_names(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = src[from..].find("__global__") {
        let start = from + pos;
        if let Some(open) = src[start..].find('(') {
            if let Some(n) = src[start..start + open].split(|c: char| !c.is_alphanumeric() && c != '_').rfind(|w| !w.is_empty()) {
                out.push(n.to_string());
            }
        }
        from = start + 10;
    }
    out
}

fn check_cuda_entry(cx: &Ctxt, k: &SKernel, src: &str) -> Option<String> {
    let globals = global_names(src);
    let entry = match &k.entry {
        Some(e) => {
            if !globals.contains(&e.value()) {
                let found: Vec<String> = globals.iter().map(|g| format!("`{g}`")).collect();
                let found = if found.is_empty() { "none".to_string() } else { found.join(", ") };
                cx.error(syn::Error::new(e.span(), format!("CUDA kernel `{}` has no `__global__` function `{}` (found: {found}); set `entry` to one of them", k.path.value(), e.value())));
                return None;
            }
            e.value()
        }
        None if globals.len() == 1 => globals[0].clone(),
        None => {
            cx.error(syn::Error::new(k.path.span(), format!("CUDA kernel has {} `__global__` functions ({}); name one with `entry = \"...\"`", globals.len(), globals.join(", "))));
            return None;
        }
    };
    let params = cuda_params(src, &entry).unwrap_or_default();
    let want: usize = k.bindings.iter().map(|b| match b {
        SBinding::Buffer { .. } => 1,
        SBinding::Uniform { fields, .. } => fields.len(),
    }).sum();
    let anchor = k.bindings_span.unwrap_or(k.span);
    if params.len() != want {
        cx.error(anchor.error(format!(
            "CUDA kernel `{entry}` takes {} parameter(s) but the descriptor binds {want}; CUDA binds by parameter order, so list one slot per parameter in `bindings(...)` (each buffer, then each uniform field)",
            params.len()
        )));
        return Some(entry);
    }
    let mut i = 0;
    for b in &k.bindings {
        match b {
            SBinding::Buffer { name, access } => {
                let p = &params[i];
                if !p.contains('*') {
                    cx.error(syn::Error::new(name.span(), format!("`{name}` is a buffer but CUDA parameter {i} of `{entry}` is `{p}`, not a pointer")));
                } else if access.value == Access::Read && !p.contains("const") {
                    cx.error(access.span.error(format!("`{name}` is bound `read` but CUDA parameter {i} of `{entry}` is `{p}`; declare it `const`")));
                } else if access.value == Access::ReadWrite && p.trim_start().starts_with("const") && !p.contains("* const") {
                    cx.error(access.span.error(format!("`{name}` is bound `read_write` but CUDA parameter {i} of `{entry}` is `{p}` (const)")));
                }
                i += 1;
            }
            SBinding::Uniform { fields, .. } => {
                for f in fields {
                    if params[i].contains('*') {
                        cx.error(syn::Error::new(f.span(), format!("uniform field `{f}` is a scalar but CUDA parameter {i} of `{entry}` is `{}`, a pointer; take it by value (e.g. `unsigned int {f}`)", params[i])));
                    }
                    i += 1;
                }
            }
        }
    }
    Some(entry)
}

// Rule: a differentiable op of a kinked category states its subgradient; a
// non-differentiable op has none to state.
fn check_subgradient(cx: &Ctxt, attr: &OpAttr) {
    let (Some(cat), Some(bw)) = (&attr.category, &attr.backward) else { return };
    let differentiable = !matches!(bw, SBackward::None(_));
    if differentiable && cat.value.has_kinks() && attr.subgradient.is_none() {
        cx.error(bw.span().error(format!(
            "category `{}` has kinks, so a differentiable op must say what its gradient is there: add `subgradient = \"...\"` (e.g. \"cotangent routed to the selected element\")",
            cat.value.name()
        )));
    }
    if let (false, Some(s)) = (differentiable, &attr.subgradient) {
        cx.error(s.span.error("`subgradient` has no meaning with `backward = none`; remove it"));
    }
}

// Rule: nothing leaves private without a valid SPDX licence expression.
fn check_license(cx: &Ctxt, attr: &OpAttr) {
    if let Some(l) = &attr.license {
        if let Err(e) = spdx::Expression::parse(&l.value) {
            cx.error(l.span.error(format!("`{}` is not a valid SPDX licence expression ({}); e.g. \"MIT\" or \"MIT OR Apache-2.0\"", l.value, e.reason)));
        }
    }
    if let Some(v) = &attr.visibility {
        if v.value != Visibility::Private && attr.license.is_none() {
            let vis = if v.value == Visibility::Public { "public" } else { "workspace" };
            cx.error(v.span.error(format!("a `{vis}` op needs a licence: add `license = \"MIT\"` (any SPDX expression) or keep it private")));
        }
    }
}

// Rule: public ops meet the built-ins' metadata bar: a doc comment (the description), besides
// the licence `check_license` requires of every non-private op.
fn check_public_metadata(cx: &Ctxt, attr: &OpAttr, description: &str) {
    let Some(v) = &attr.visibility else { return };
    if v.value != Visibility::Public {
        return;
    }
    if description.trim().is_empty() {
        cx.error(v.span.error("a `public` op needs a description: add a `///` doc comment to the function"));
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Checks a whole declaration from tokens (used by tests and by the macro).
pub fn check_tokens(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream, base_dirs: &[PathBuf]) -> Result<(Checked, OpAttr), Vec<syn::Error>> {
    let cx = Ctxt::new();
    let func: syn::ItemFn = match syn::parse2(item) {
        Ok(f) => f,
        Err(e) => {
            cx.error(e);
            return Err(cx.check().err().unwrap_or_default());
        }
    };
    let attr = crate::parse::parse_attr(&cx, attr);
    let description = crate::canon::doc_comment(&func.attrs);
    let checked = check(&cx, &CheckInput { attr: &attr, func: &func, description: &description, base_dirs });
    match (cx.check(), checked) {
        (Ok(()), Some(c)) => Ok((c, attr)),
        (Err(e), _) => Err(e),
        (Ok(()), None) => Err(vec![syn::Error::new(Span::call_site(), "op-spec: the declaration did not check (internal: no error recorded)")]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn errs(attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> Vec<String> {
        match check_tokens(attr, item, &[]) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    fn median_fn() -> proc_macro2::TokenStream {
        quote!(pub fn windowed_median<T: Real>(x: &[T], w: u32) -> Vec<T> { todo!() })
    }

    #[test]
    fn the_median_declaration_checks() {
        let e = errs(
            quote!(name = "user/example/windowed_median", version = 1,
                signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
                category = selection, tolerance = exact, backward = vjp(windowed_median_vjp),
                subgradient = "cotangent routed to the selected element", license = "MIT"),
            median_fn(),
        );
        assert!(e.is_empty(), "{e:?}");
    }

    #[test]
    fn negative_output_dim_gives_a_counterexample() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32 where 1 <= w <= 31) -> f32[n - w + 1],
                category = selection, tolerance = exact, backward = none),
            quote!(fn f<T: Real>(x: &[T], w: u32) -> Vec<T> { todo!() }),
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("output dim `n - w + 1` of `out` can be negative: with n = 0, w = 2 (admissible"), "{}", e[0]);
        assert!(e[0].contains("add `w <= n`"));
    }

    #[test]
    fn category_tolerance_table_rejects_loose_matmul() {
        assert!(category_tolerance_rule(Category::Contraction, &Tolerance::Loose { rtol: 1e-3, atol: 0.0 }).is_err());
        assert!(category_tolerance_rule(Category::Contraction, &Tolerance::Accum(4)).is_ok());
        assert!(category_tolerance_rule(Category::Selection, &Tolerance::Ulp(0)).is_err());
        assert!(category_tolerance_rule(Category::Elementwise, &Tolerance::Exact).is_err());
        assert!(category_tolerance_rule(Category::Approximate, &Tolerance::Loose { rtol: 1e-2, atol: 1e-4 }).is_ok());
    }

    #[test]
    fn contradictions_and_constant_false() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32 where w >= 5, w < 3) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = none),
            quote!(fn f(x: &[f32], w: u32) -> Vec<f32> { todo!() }),
        );
        assert!(e.iter().any(|m| m.contains("the constraints on `w` contradict each other: together they require 5 <= w <= 2")), "{e:?}");
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32 where 2 > 3) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = none),
            quote!(fn f(x: &[f32], w: u32) -> Vec<f32> { todo!() }),
        );
        assert!(e.iter().any(|m| m.contains("constraint `2 > 3` is always false")), "{e:?}");
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32 where w % 2 == 1, 2 <= w <= 2) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = none),
            quote!(fn f(x: &[f32], w: u32) -> Vec<f32> { todo!() }),
        );
        assert!(e.iter().any(|m| m.contains("contradict each other: no value")), "{e:?}");
    }

    #[test]
    fn jvp_arity_names_the_op_and_both_numbers() {
        let e = errs(
            quote!(name = "a/mul", version = 1, signature(a: f32[n], b: f32[n]) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = jvp(only_one)),
            quote!(fn f<T: Real>(a: &[T], b: &[T]) -> Vec<T> { todo!() }),
        );
        assert_eq!(e, vec!["op `a/mul` has 2 differentiable input(s) (a, b) but `jvp` lists 1 rule(s); list exactly one rule per differentiable input, in order".to_string()]);
    }

    #[test]
    fn reference_parameters_must_agree() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], w: u32) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = none),
            quote!(fn f(x: &[f64], w: i32) -> Vec<f32> { todo!() }),
        );
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].contains("must be `&[f32]`"));
        assert!(e[1].contains("must be `u32`"));
    }

    #[test]
    fn licence_and_subgradient_rules() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = selection, tolerance = exact,
                backward = vjp(g), visibility = workspace),
            quote!(fn f<T: Real>(x: &[T]) -> Vec<T> { todo!() }),
        );
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e.iter().any(|m| m.contains("add `subgradient = ")));
        assert!(e.iter().any(|m| m.contains("a `workspace` op needs a licence")));
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = selection, tolerance = exact,
                backward = none, license = "MIT AND NotALicence"),
            quote!(fn f<T: Real>(x: &[T]) -> Vec<T> { todo!() }),
        );
        assert!(e[0].contains("is not a valid SPDX licence expression"), "{e:?}");
    }

    #[test]
    fn a_malformed_key_is_not_also_missing() {
        let e = errs(
            quote!(name = "Bad Name", version = 0, signature(x: f8e4m3[n]) -> f32[n], category = pointwise, tolerance = approx, backward = autodiff),
            quote!(fn f(x: &[f32]) -> Vec<f32> { todo!() }),
        );
        assert_eq!(e.len(), 6, "{e:?}");
        assert!(e.iter().all(|m| !m.starts_with("missing key")), "{e:?}");
    }

    #[test]
    fn constant_constraints_are_not_also_contradictions() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], k: u32 where k <= n, 3 < 2) -> f32[n - k],
                category = selection, tolerance = exact, backward = none),
            quote!(fn f<T: Real>(x: &[T], k: u32) -> Vec<T> { todo!() }),
        );
        assert_eq!(e, vec!["constraint `3 < 2` is always false, so no input is admissible; fix or remove it".to_string()]);
    }

    #[test]
    fn a_broken_descriptor_is_not_compared_with_its_source() {
        let dir = std::env::temp_dir().join(format!("op-spec-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("k.wgsl"),
            "@group(0) @binding(0) var<storage, read> x: array<f32>;\n@group(0) @binding(1) var<storage, read_write> out: array<f32>;\n@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { out[g.x] = x[g.x]; }\n",
        )
        .unwrap();
        let attr = |b: proc_macro2::TokenStream| {
            quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none,
                kernel(wgsl = "k.wgsl", #b, threads = n))
        };
        let item = quote!(fn f<T: Real>(x: &[T]) -> Vec<T> { todo!() });
        let bases = [dir];
        assert!(check_tokens(attr(quote!(bindings(x: read, out: read_write))), item.clone(), &bases).is_ok());
        let msgs = |r: Result<(Checked, OpAttr), Vec<syn::Error>>| r.err().unwrap_or_default().into_iter().map(|e| e.to_string()).collect::<Vec<_>>();
        let e = msgs(check_tokens(attr(quote!(bindings(out: read_write))), item.clone(), &bases));
        assert_eq!(e, vec!["tensor `x` is not bound by this kernel; add `x: read` to `bindings(...)`".to_string()]);
        let e = msgs(check_tokens(attr(quote!(bindings(x: read, out: write))), item.clone(), &bases));
        assert_eq!(e, vec!["unknown access `write`; valid: read, read_write".to_string()]);
        let e = msgs(check_tokens(quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0),
            backward = none, kernel(wgsl = "nope.wgsl", bindings(x: read, out: read_write), threads = n)), item, &bases));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("kernel source `nope.wgsl` does not exist relative to the crate's Cargo.toml"), "{}", e[0]);
    }

    #[test]
    fn missing_keys_are_all_reported() {
        let e = errs(quote!(name = "a/b"), quote!(fn f() {}));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("missing keys `version`, `signature`, `category`, `tolerance`, `backward`: every op declares them"), "{e:?}");
    }
}
