//! Integer constraint soundness over the full range of every symbol (dims `0..=2^63-1`,
//! parameters their type's): constant-false, never-holding and contradictory constraints, and
//! divisions by a value that can be zero; then what must hold for every admissible input:
//! output dims and `bounded(..)` limits are >= 0, and a kernel launches at least one thread
//! whenever an output is non-empty (each with a counterexample). Float constraints are
//! `floats`'. Assumes symbols are bound (`symbols` reports those); reads no files.

use super::solve::{self, dtype_range, Iv, Outcome, Reason, Space, DIM_RANGE};
use super::symbols::int_params;
use crate::contract::{BinOp, CmpOp, Constraint, Expr};
use crate::ctxt::Ctxt;
use crate::model::*;
use std::collections::BTreeMap;

/// The integer constraints of a signature, ready for reasoning.
pub(super) struct Solver<'a> {
    sig: &'a SSignature,
    space: Space,
    /// The integer constraints (those whose symbols are all in the space), with spans.
    spanned: Vec<&'a SConstraint>,
    cs: Vec<Constraint>,
    lits: Vec<i128>,
    /// Ranges after propagating every constraint; `None` when they are refuted.
    ranges: Option<Vec<Iv>>,
    /// The difference bounds propagation closed.
    dbm: solve::Dbm,
    /// Input dims that are expressions (admissible inputs have them defined and >= 0).
    input_dims: Vec<Expr>,
}

impl<'a> Solver<'a> {
    pub(super) fn new(sig: &'a SSignature, dims: &[String]) -> Solver<'a> {
        let mut space = Space { syms: dims.to_vec(), full: vec![DIM_RANGE; dims.len()] };
        for p in sig.params().filter(|p| p.dtype.value.is_int()) {
            space.syms.push(p.name.to_string());
            space.full.push(dtype_range(p.dtype.value));
        }
        let known = |c: &SConstraint| {
            let mut v = Vec::new();
            c.terms.iter().for_each(|t| t.symbols(&mut v));
            v.iter().all(|s| space.syms.iter().any(|k| s == &k))
        };
        let spanned: Vec<&SConstraint> = sig.int_constraints().filter(|c| known(c)).collect();
        let cs: Vec<Constraint> = spanned.iter().map(|c| c.to_constraint()).collect();
        let input_dims: Vec<Expr> =
            sig.inputs().flat_map(|t| t.dims.iter()).filter(|d| !matches!(d.kind, SExprKind::Sym(_))).map(SExpr::to_expr).collect();
        let mut all: Vec<&Expr> = cs.iter().flat_map(|c| c.terms.iter()).collect();
        let outs: Vec<Expr> = sig.outputs.iter().flat_map(|o| o.dims.iter()).map(SExpr::to_expr).collect();
        all.extend(&outs);
        all.extend(&input_dims);
        let lits = solve::literals(all);
        let refs: Vec<&Constraint> = cs.iter().collect();
        let (outcome, dbm) = solve::propagate_full(&space, &refs);
        let ranges = match outcome {
            Outcome::Ranges(r) => Some(r),
            Outcome::Refuted(_) => None,
        };
        Solver { sig, space, spanned, cs, lits, ranges, dbm, input_dims }
    }

    /// An admissible assignment (every constraint holds, every input dim is defined and >= 0)
    /// for which `f` holds.
    fn witness(&self, mut f: impl FnMut(&BTreeMap<String, i128>) -> bool) -> Option<BTreeMap<String, i128>> {
        let ranges = self.ranges.as_ref()?;
        let refs: Vec<&Constraint> = self.cs.iter().collect();
        solve::find(&self.space, ranges, &refs, &self.lits, |env| {
            self.input_dims.iter().all(|d| d.eval_map(env).is_some_and(|v| v >= 0)) && f(env)
        })
    }

    /// `s = v` for each symbol `e` mentions, in the space's order.
    fn assignment(&self, env: &BTreeMap<String, i128>, exprs: &[&Expr]) -> String {
        let mut used: Vec<&str> = Vec::new();
        exprs.iter().for_each(|e| e.symbols(&mut used));
        let parts: Vec<String> =
            self.space.syms.iter().filter(|s| used.contains(&s.as_str())).map(|s| format!("{s} = {}", env[s])).collect();
        if parts.is_empty() {
            "any input".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// `` `w: u32` `` or `` dim `n` `` for each symbol of `c`, for messages.
    fn describe_symbols(&self, cs: &[&Constraint]) -> String {
        let mut used: Vec<&str> = Vec::new();
        cs.iter().flat_map(|c| c.terms.iter()).for_each(|e| e.symbols(&mut used));
        let parts: Vec<String> = self
            .space
            .syms
            .iter()
            .filter(|s| used.contains(&s.as_str()))
            .map(|s| match self.sig.param(s) {
                Some(p) => format!("`{s}: {}`", p.dtype.value),
                None => format!("dim `{s}`"),
            })
            .collect();
        parts.join(", ")
    }
}

// Rule: a constraint without symbols must hold (a constant-false constraint admits no input).
pub(super) fn check_constant_constraints(cx: &Ctxt, sig: &SSignature) {
    for c in sig.int_constraints() {
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

/// Interval bounds implied by the simple constraints `sym op lit` / `lit op sym`, per symbol.
fn simple_bounds(cs: &[Constraint], space: &Space) -> BTreeMap<String, Iv> {
    let mut iv: BTreeMap<String, Iv> = space.syms.iter().cloned().zip(space.full.iter().copied()).collect();
    for c in cs {
        for (i, op) in c.ops.iter().enumerate() {
            let (sym, lit, op) = match (&c.terms[i], &c.terms[i + 1]) {
                (Expr::Sym(s), Expr::Lit(v)) => (s, *v as i128, *op),
                (Expr::Lit(v), Expr::Sym(s)) => (s, *v as i128, solve::flip(*op)),
                _ => continue,
            };
            let Some(r) = iv.get_mut(sym) else { continue };
            match op {
                CmpOp::Lt => r.1 = r.1.min(lit - 1),
                CmpOp::Le => r.1 = r.1.min(lit),
                CmpOp::Gt => r.0 = r.0.max(lit + 1),
                CmpOp::Ge => r.0 = r.0.max(lit),
                CmpOp::Eq => *r = (r.0.max(lit), r.1.min(lit)),
                CmpOp::Ne => {}
            }
        }
    }
    iv
}

// Rule: the constraints admit at least one input, over the full range of every symbol: no
// simple bounds that empty a symbol's range, no constraint that can never hold (`n < n`,
// `w % 2 == 2` for a `u32`), no set that contradicts itself (`n < m` with `m < n`).
pub(super) fn check_contradictory_constraints(cx: &Ctxt, solver: &Solver<'_>) {
    // Constraints without symbols are `check_constant_constraints`' business.
    let with_syms: Vec<usize> = (0..solver.cs.len())
        .filter(|&i| {
            let mut v = Vec::new();
            solver.cs[i].terms.iter().for_each(|t| t.symbols(&mut v));
            !v.is_empty()
        })
        .collect();
    if with_syms.is_empty() {
        return;
    }
    let cs: Vec<Constraint> = with_syms.iter().map(|&i| solver.cs[i].clone()).collect();
    let spans: Vec<SpanRange> = with_syms.iter().map(|&i| solver.spanned[i].span).collect();
    if report_simple_bounds(cx, solver, &cs, &spans) || report_never_holds(cx, solver, &cs, &spans) {
        return;
    }
    let refs: Vec<&Constraint> = cs.iter().collect();
    if let Some((core, _)) = solve::refuted_core(&solver.space, &refs) {
        let chosen: Vec<&Constraint> = core.iter().map(|&k| refs[k]).collect();
        let text: Vec<String> = chosen.iter().map(|c| format!("`{c}`")).collect();
        cx.error(spans[core[core.len() - 1]].error(format!(
            "the constraints {} contradict each other: no values of {} satisfy all of them together; fix or remove one of them",
            text.join(", "),
            solver.describe_symbols(&chosen)
        )));
        return;
    }
    report_small_search(cx, solver, &cs, &spans);
}

/// Simple bounds that empty a symbol's range, at the first constraint that empties it.
fn report_simple_bounds(cx: &Ctxt, solver: &Solver<'_>, cs: &[Constraint], spans: &[SpanRange]) -> bool {
    for (s, (lo, hi)) in simple_bounds(cs, &solver.space) {
        if lo > hi {
            let culprit = (1..=cs.len()).find(|&k| {
                let (a, b) = simple_bounds(&cs[..k], &solver.space)[&s];
                a > b
            });
            let span = culprit.map_or(solver.sig.span, |k| spans[k - 1]);
            cx.error(span.error(format!("the constraints on `{s}` contradict each other: together they require {lo} <= {s} <= {hi}, which no value satisfies; fix or remove one of them")));
            return true;
        }
    }
    false
}

/// A constraint that on its own never holds, with the reason.
fn report_never_holds(cx: &Ctxt, solver: &Solver<'_>, cs: &[Constraint], spans: &[SpanRange]) -> bool {
    for (c, span) in cs.iter().zip(spans) {
        let Outcome::Refuted(reason) = solve::propagate(&solver.space, &[c]) else { continue };
        let why = match reason {
            Reason::Ranges { a, a_iv, op, b, b_iv } => {
                format!("`{a}` is always in {} and `{b}` in {}, so `{a} {op} {b}` is false", range_text(a_iv), range_text(b_iv))
            }
            Reason::Undefined(t) => format!("`{t}` always divides by zero or overflows"),
            Reason::Constant { k, op } => format!("its two sides always differ by {k}, so it says `{k} {op} 0`"),
            Reason::Empty => "no value in their ranges satisfies it".to_string(),
        };
        cx.error(
            span.error(format!("constraint `{c}` can never hold, for any {}: {why}; fix or remove it", solver.describe_symbols(&[c]))),
        );
        return true;
    }
    false
}

fn range_text((lo, hi): Iv) -> String {
    if lo == hi {
        format!("{{{lo}}}")
    } else {
        format!("{lo}..={hi}")
    }
}

/// Exhaustive search over the symbols with small ranges, on the constraints that mention only
/// them: sound (a miss there is a real contradiction), never a guess.
fn report_small_search(cx: &Ctxt, solver: &Solver<'_>, cs: &[Constraint], spans: &[SpanRange]) {
    let iv = simple_bounds(cs, &solver.space);
    let small: Vec<&String> = solver.space.syms.iter().filter(|s| iv[*s].1 - iv[*s].0 < 4096).collect();
    let local: Vec<&Constraint> = cs
        .iter()
        .filter(|c| {
            let mut v = Vec::new();
            c.terms.iter().for_each(|t| t.symbols(&mut v));
            v.iter().all(|s| small.iter().any(|m| m == s))
        })
        .collect();
    let space: f64 = small.iter().map(|s| (iv[*s].1 - iv[*s].0 + 1) as f64).product();
    if local.is_empty() || space > 200_000.0 {
        return;
    }
    let mut idx: Vec<i128> = small.iter().map(|s| iv[*s].0).collect();
    loop {
        let env = |name: &str| small.iter().position(|s| *s == name).map(|k| idx[k]);
        if local.iter().all(|c| c.holds(&env) == Some(true)) {
            return;
        }
        let mut k = 0;
        loop {
            if k == idx.len() {
                let text: Vec<String> = local.iter().map(|c| format!("`{c}`")).collect();
                cx.error(spans[spans.len() - 1].error(format!(
                    "the constraints {} contradict each other: no value of the parameters satisfies all of them",
                    text.join(", ")
                )));
                return;
            }
            idx[k] += 1;
            if idx[k] <= iv[small[k]].1 {
                break;
            }
            idx[k] = iv[small[k]].0;
            k += 1;
        }
    }
}

/// How evaluating an expression failed.
enum Fail<'e> {
    /// This division or remainder had a zero divisor.
    DivZero(&'e SExpr),
    /// Overflow or an unknown symbol.
    Other,
}

/// Evaluates `e` as `Expr::eval` does, saying which division failed.
fn eval<'e>(e: &'e SExpr, env: &BTreeMap<String, i128>) -> Result<i128, Fail<'e>> {
    Ok(match &e.kind {
        SExprKind::Sym(i) => *env.get(&i.to_string()).ok_or(Fail::Other)?,
        SExprKind::Lit(v) => *v as i128,
        SExprKind::Float(_) => return Err(Fail::Other),
        SExprKind::Neg(a) => eval(a, env)?.checked_neg().ok_or(Fail::Other)?,
        SExprKind::Min(a, b) => eval(a, env)?.min(eval(b, env)?),
        SExprKind::Max(a, b) => eval(a, env)?.max(eval(b, env)?),
        SExprKind::Bin(op, a, b) => {
            let (x, y) = (eval(a, env)?, eval(b, env)?);
            if y == 0 && matches!(op, BinOp::Div | BinOp::Rem) {
                return Err(Fail::DivZero(e));
            }
            op.apply(x, y).ok_or(Fail::Other)?
        }
    })
}

/// The division that fails first when the chain is evaluated as `Constraint::holds` does
/// (term by term, stopping at the first false comparison).
fn chain_div_zero<'e>(c: &'e SConstraint, env: &BTreeMap<String, i128>) -> Option<&'e SExpr> {
    let mut prev: Option<i128> = None;
    for (i, t) in c.terms.iter().enumerate() {
        let v = match eval(t, env) {
            Ok(v) => v,
            Err(Fail::DivZero(d)) => return Some(d),
            Err(Fail::Other) => return None,
        };
        if let Some(p) = prev {
            if !c.ops[i - 1].apply(p, v) {
                return None;
            }
        }
        prev = Some(v);
    }
    None
}

fn report_div_zero(cx: &Ctxt, solver: &Solver<'_>, node: &SExpr, env: Option<&BTreeMap<String, i128>>) {
    let SExprKind::Bin(op, _, divisor) = &node.kind else { return };
    let what = if *op == BinOp::Rem { "takes `%` by zero" } else { "divides by zero" };
    let d = divisor.to_expr();
    let fix = match &divisor.kind {
        SExprKind::Sym(s) => format!("`{s} >= 1`"),
        _ => format!("`{d} != 0`"),
    };
    let with = match env {
        Some(env) => format!("with {} (admissible under the constraints), ", solver.assignment(env, &[&node.to_expr()])),
        None => String::new(),
    };
    cx.error(
        divisor
            .span
            .error(format!("`{d}` can be 0 here: {with}`{}` {what}; add a constraint that rules it out, e.g. {fix}", node.to_expr())),
    );
}

// Rule: no constraint, dim, `bounded(..)` limit or `threads` divides (or takes `%`) by a value
// that can be zero for an admissible input (a constraint's own earlier comparisons guard it).
pub(super) fn check_division_by_zero(cx: &Ctxt, attr: &OpAttr, solver: &Solver<'_>) {
    for (k, c) in solver.spanned.iter().enumerate() {
        if !c.terms.iter().any(divides) {
            continue;
        }
        let others: Vec<&Constraint> = solver.cs.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, c)| c).collect();
        let Outcome::Ranges(ranges) = solve::propagate(&solver.space, &others) else { continue };
        let mut hit = None;
        solve::find(&solver.space, &ranges, &others, &solver.lits, |env| {
            hit = chain_div_zero(c, env).map(|d| (d, env.clone()));
            hit.is_some()
        });
        if let Some((node, env)) = hit {
            report_div_zero(cx, solver, node, Some(&env));
        }
    }
    let sig = solver.sig;
    let mut exprs: Vec<&SExpr> = sig.inputs().flat_map(|t| t.dims.iter()).collect();
    exprs.extend(sig.outputs.iter().flat_map(|o| o.dims.iter()));
    exprs.extend(attr.kernels.iter().flat_map(|k| k.threads.iter().chain(&k.threads_yz)));
    if let Some(SShapeClass::Bounded(_, e)) = &attr.output {
        exprs.push(e);
    }
    for e in exprs {
        if !solver.mentions_only_known(e) || !divides(e) {
            continue;
        }
        let mut hit = None;
        solver.witness(|env| {
            hit = match eval(e, env) {
                Err(Fail::DivZero(d)) => Some((d, env.clone())),
                _ => None,
            };
            hit.is_some()
        });
        if let Some((node, env)) = hit {
            report_div_zero(cx, solver, node, Some(&env));
        }
    }
}

impl Solver<'_> {
    /// Whether every symbol of `e` is in the space (data-dependent ones are not).
    fn mentions_only_known(&self, e: &SExpr) -> bool {
        let mut v = Vec::new();
        e.symbols(&mut v);
        v.iter().all(|s| self.space.syms.iter().any(|k| s == &k))
    }

    /// The least value `e` can take over the propagated ranges (a bound, maybe not attained):
    /// when it is large enough, no search is needed to know a rule holds.
    fn lower_bound(&self, e: &Expr) -> Option<i128> {
        let ranges = self.ranges.as_ref()?;
        let iv = solve::interval(e, &|s| self.space.syms.iter().position(|k| k == s).map(|i| ranges[i])).map(|iv| iv.0);
        let rel = solve::linear_lower_bound(&self.space, ranges, &self.dbm, e);
        match (iv, rel) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Whether `e` divides (or takes `%`) by anything but a nonzero literal.
fn divides(e: &SExpr) -> bool {
    match &e.kind {
        SExprKind::Sym(_) | SExprKind::Lit(_) | SExprKind::Float(_) => false,
        SExprKind::Neg(a) => divides(a),
        SExprKind::Bin(op, a, b) => {
            let risky = matches!(op, BinOp::Div | BinOp::Rem) && !matches!(b.kind, SExprKind::Lit(v) if v != 0);
            risky || divides(a) || divides(b)
        }
        SExprKind::Min(a, b) | SExprKind::Max(a, b) => divides(a) || divides(b),
    }
}

// Rule: every output dim is >= 0 for every admissible input (a bounded search finds
// counterexamples such as `n - w + 1` without `w <= n`).
pub(super) fn check_output_dims_nonnegative(cx: &Ctxt, attr: &OpAttr, solver: &Solver<'_>) {
    if !matches!(attr.output, None | Some(SShapeClass::Static(_))) {
        return;
    }
    for o in &solver.sig.outputs {
        for d in o.dims.iter().filter(|d| solver.mentions_only_known(d)) {
            let e = d.to_expr();
            if solver.lower_bound(&e).is_some_and(|lo| lo >= 0) {
                continue; // non-negative over every range: nothing to search
            }
            let mut value = 0;
            let Some(env) = solver.witness(|env| {
                value = e.eval_map(env).unwrap_or(0);
                value < 0
            }) else {
                continue;
            };
            cx.error(d.span.error(format!(
                "output dim `{e}` of `{}` can be negative: with {} (admissible under the constraints) it is {value}; add a constraint that rules this out (for `n - w + 1`, add `w <= n`)",
                o.name,
                solver.assignment(&env, &[&e])
            )));
        }
    }
}

// Rule: a `bounded(e)` limit is >= 0 for every admissible input (it is the largest size a
// data-dependent dim may take).
pub(super) fn check_bound_nonnegative(cx: &Ctxt, attr: &OpAttr, solver: &Solver<'_>) {
    let Some(SShapeClass::Bounded(_, b)) = &attr.output else { return };
    if !solver.mentions_only_known(b) {
        return; // unbound: reported by `symbols`
    }
    let e = b.to_expr();
    if solver.lower_bound(&e).is_some_and(|lo| lo >= 0) {
        return;
    }
    let mut value = 0;
    if let Some(env) = solver.witness(|env| {
        value = e.eval_map(env).unwrap_or(0);
        value < 0
    }) {
        cx.error(b.span.error(format!(
            "the `bounded` limit `{e}` can be negative: with {} (admissible under the constraints) it is {value}, and a size cannot be; add a constraint that rules this out",
            solver.assignment(&env, &[&e])
        )));
    }
}

/// The element count of output `o` under `env`, when its dims are defined.
fn numel(o: &STensor, env: &BTreeMap<String, i128>) -> Option<i128> {
    o.dims.iter().try_fold(1i128, |acc, d| acc.checked_mul(d.to_expr().eval_map(env)?.max(0)))
}

/// Whether `threads = e` is zero only when output `o` is empty: `e` is one of its dims, or the
/// product of all of them.
fn counts(e: &Expr, o: &STensor) -> bool {
    let dims: Vec<Expr> = o.dims.iter().map(SExpr::to_expr).collect();
    let product = dims.iter().cloned().reduce(|a, b| Expr::Bin(BinOp::Mul, Box::new(a), Box::new(b)));
    dims.contains(e) || product.as_ref() == Some(e)
}

// Rule: each extent of a kernel's `threads` is >= 0 for every admissible input, and the launch
// (the product of its extents) is >= 1 whenever an output is non-empty (a launch of no threads
// writes nothing), accumulating outputs excepted (they start at zero).
pub(super) fn check_launch_geometry(cx: &Ctxt, kernels: &[SKernel], solver: &Solver<'_>) {
    let sig = solver.sig;
    if sig.outputs.iter().any(|o| o.dims.iter().any(|d| !solver.mentions_only_known(d))) {
        return; // data-dependent outputs have no kernels (`outputs` reports it)
    }
    for k in kernels {
        let extents: Vec<&SExpr> = k.threads.iter().chain(&k.threads_yz).collect();
        let Some(t) = k.threads.as_ref().filter(|_| extents.iter().all(|t| solver.mentions_only_known(t))) else { continue };
        // An accumulating output is correct untouched (it starts at zero): only the others
        // need a thread.
        let written: Vec<&STensor> = sig.outputs.iter().filter(|o| !accumulates(k, &o.name)).collect();
        let each: Vec<Expr> = extents.iter().map(|t| t.to_expr()).collect();
        let e = each.iter().cloned().reduce(|a, b| Expr::Bin(BinOp::Mul, Box::new(a), Box::new(b))).unwrap_or(Expr::Lit(0));
        let lows: Vec<Option<i128>> = each.iter().map(|x| solver.lower_bound(x)).collect();
        let all_pos = lows.iter().all(|l| l.is_some_and(|l| l >= 1));
        let all_nonneg = lows.iter().all(|l| l.is_some_and(|l| l >= 0));
        // At least one thread always; or never negative and zero only with every output empty
        // (`threads` is a dim of every output, or its element count): nothing to search.
        if all_pos || (all_nonneg && written.iter().all(|o| counts(&e, o))) {
            continue;
        }
        let Some(w) = launch_witness(solver, &each, &written) else { continue };
        let with = solver.assignment(&w.env, &[&e]);
        let launch = match each.as_slice() {
            [one] => one.to_string(),
            all => format!("({})", all.iter().map(Expr::to_string).collect::<Vec<_>>().join(", ")),
        };
        let (msg, at) = match (w.negative, w.nonempty) {
            (Some((0, v)), _) if each.len() == 1 => (format!("`threads = {launch}` is {v} with {with} (admissible under the constraints): a launch cannot have a negative number of threads; add a constraint that rules this out or change `threads`"), t),
            (Some((d, v)), _) => (format!("`{}`, the {} extent of `threads = {launch}`, is {v} with {with} (admissible under the constraints): a launch cannot have a negative number of threads; add a constraint that rules this out or change `threads`", each[d], ["x", "y", "z"][d.min(2)]), extents[d]),
            (None, Some((o, n))) if each.len() == 1 => (format!("`threads = {launch}` is 0 with {with} (admissible under the constraints) while output `{}` has {n} element(s): a launch of no threads writes nothing; launch at least one thread whenever an output is non-empty (e.g. one per output element)", o.name), t),
            (None, Some((o, n))) => {
                // On the extent that is zero: a launch is empty when any of its extents is.
                let d = w.zero.unwrap_or(0);
                (format!("`{}`, the {} extent of `threads = {launch}`, is 0 with {with} (admissible under the constraints) while output `{}` has {n} element(s): a launch with an empty extent runs no threads and writes nothing; make every extent at least 1 whenever an output is non-empty (e.g. one per element along each axis)", each[d], ["x", "y", "z"][d.min(2)], o.name), extents[d])
            }
            (None, None) => continue,
        };
        cx.error(at.span.error(msg));
    }
}

/// An admissible input where a launch is wrong: an extent negative (its axis and value), or
/// no invocation at all while a written output is non-empty (that output and its size).
struct LaunchWitness<'a> {
    env: BTreeMap<String, i128>,
    negative: Option<(usize, i128)>,
    nonempty: Option<(&'a STensor, i128)>,
    /// The first extent that is zero, if any.
    zero: Option<usize>,
}

/// Searches the admissible inputs for a [`LaunchWitness`] of the launch `extents`.
fn launch_witness<'a>(solver: &Solver<'_>, extents: &[Expr], written: &[&'a STensor]) -> Option<LaunchWitness<'a>> {
    let mut found = None;
    let env = solver.witness(|env| {
        let Some(vs) = extents.iter().map(|x| x.eval_map(env)).collect::<Option<Vec<i128>>>() else { return false };
        let Some(outs) = written.iter().map(|o| numel(o, env)).collect::<Option<Vec<i128>>>() else { return false };
        let nonempty = written.iter().zip(&outs).find(|(_, n)| **n > 0).map(|(o, n)| (*o, *n));
        let negative = vs.iter().copied().enumerate().find(|(_, v)| *v < 0);
        let zero = vs.iter().position(|v| *v == 0);
        found = Some((negative, nonempty, zero));
        negative.is_some() || (zero.is_some() && nonempty.is_some())
    })?;
    let (negative, nonempty, zero) = found?;
    Some(LaunchWitness { env, negative, nonempty: if negative.is_some() { None } else { nonempty }, zero })
}

/// Whether kernel `k` binds output `name` as `accumulate`.
fn accumulates(k: &SKernel, name: &syn::Ident) -> bool {
    k.bindings
        .iter()
        .any(|b| matches!(b, SBinding::Buffer { name: n, access, .. } if n == name && access.value == crate::contract::Access::Accumulate))
}

/// Integer parameter names plus dims: the symbols an integer expression may use.
pub(super) fn all_symbols(sig: &SSignature, dims: &[String]) -> Vec<String> {
    let mut syms = dims.to_vec();
    syms.extend(int_params(sig));
    syms
}

#[cfg(test)]
mod tests {
    use crate::check::tests::errs;
    use quote::quote;

    fn median_like(sig: proc_macro2::TokenStream) -> Vec<String> {
        errs(
            quote!(name = "a/b", version = 1, #sig, category = selection, tolerance = exact, backward = none),
            quote!(
                fn f<T: Real>(x: &[T], w: u32) -> Vec<T> {
                    todo!()
                }
            ),
        )
    }

    #[test]
    fn negative_output_dim_gives_a_counterexample() {
        let e = median_like(quote!(signature(x: f32[n], w: u32 where 1 <= w <= 31) -> f32[n - w + 1]));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("output dim `n - w + 1` of `out` can be negative: with n = 0, w = 2 (admissible"), "{}", e[0]);
        assert!(e[0].contains("add `w <= n`"));
    }

    #[test]
    fn contradictions_and_constant_false() {
        let e = median_like(quote!(signature(x: f32[n], w: u32 where w >= 5, w < 3) -> f32[n]));
        assert!(e.iter().any(|m| m.contains("the constraints on `w` contradict each other: together they require 5 <= w <= 2")), "{e:?}");
        let e = median_like(quote!(signature(x: f32[n], w: u32 where 2 > 3) -> f32[n]));
        assert!(e.iter().any(|m| m.contains("constraint `2 > 3` is always false")), "{e:?}");
        let e = median_like(quote!(signature(x: f32[n], w: u32 where w % 2 == 1, 2 <= w <= 2) -> f32[n]));
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

    #[test]
    fn never_holding_constraints_over_the_full_range() {
        let e = median_like(quote!(signature(x: f32[n], w: u32 where n < n) -> f32[n]));
        assert_eq!(e, vec!["constraint `n < n` can never hold, for any dim `n`: its two sides always differ by 0, so it says `0 < 0`; fix or remove it".to_string()]);
        let e = median_like(quote!(signature(x: f32[n], w: u32 where w % 2 == 2) -> f32[n]));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("constraint `w % 2 == 2` can never hold, for any `w: u32`: `w % 2` is always in 0..=1"), "{}", e[0]);
        let e = median_like(quote!(signature(x: f32[n, m], w: u32 where n < m, m < n) -> f32[n]));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("the constraints `n < m`, `m < n` contradict each other: no values of dim `n`, dim `m`"), "{}", e[0]);
    }

    #[test]
    fn division_by_a_value_that_can_be_zero() {
        let e = median_like(quote!(signature(x: f32[n], w: u32) -> f32[n / w]));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("`w` can be 0 here: with n = 0, w = 0 (admissible under the constraints), `n / w` divides by zero"),
            "{}",
            e[0]
        );
        assert!(median_like(quote!(signature(x: f32[n], w: u32 where w >= 1) -> f32[n / w])).is_empty());
        let e = median_like(quote!(signature(x: f32[n], w: u32 where n % w == 0) -> f32[n]));
        assert!(e[0].contains("`n % w` takes `%` by zero"), "{e:?}");
        // Guarded earlier in the same chain: evaluation stops before the division.
        assert!(median_like(quote!(signature(x: f32[n], w: u32 where 1 <= w <= n / w) -> f32[n])).is_empty());
    }

    #[test]
    fn bounded_limit_and_threads() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n], m: u32) -> f32[k], output = bounded(m - n),
                category = selection, tolerance = exact, backward = none),
            quote!(
                fn f<T: Real>(x: &[T], m: u32) -> Vec<T> {
                    todo!()
                }
            ),
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("the `bounded` limit `m - n` can be negative: with n = 1, m = 0"), "{}", e[0]);
    }
}
