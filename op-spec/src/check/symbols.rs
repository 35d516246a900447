//! Signature names and symbols: distinct names, every symbol bound, integer-only operands in
//! dims, `threads` and `bounded(..)`. Reads only the signature and descriptors; must not
//! evaluate constraints or read files.

use crate::contract::DType;
use crate::ctxt::Ctxt;
use crate::model::*;
use std::collections::BTreeMap;

/// Input dim symbols plus integer parameters: every symbol a static dim may use.
pub(super) fn bound_with_params(sig: &SSignature, dims: &[String]) -> Vec<String> {
    let mut b = dims.to_vec();
    b.extend(int_params(sig));
    b
}

// Rule: argument and output names are distinct and differ from dim symbols.
pub(super) fn check_names_unique(cx: &Ctxt, sig: &SSignature) {
    let mut seen: Vec<String> = Vec::new();
    let idents = sig.args.iter().map(SArg::ident).chain(sig.outputs.iter().filter(|o| o.named).map(|o| &o.name));
    for id in idents {
        let s = id.to_string();
        if seen.contains(&s) {
            cx.error(syn::Error::new(
                id.span(),
                format!("`{s}` is declared twice in the signature; give each input, parameter and output its own name"),
            ));
        } else {
            seen.push(s);
        }
    }
    let dims = bound_dim_symbols(sig);
    for a in &sig.args {
        if let SArg::Param(p) = a {
            if dims.contains(&p.name.to_string()) {
                cx.error(syn::Error::new(
                    p.name.span(),
                    format!("parameter `{}` has the name of a dim symbol; rename one of them", p.name),
                ));
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

pub(super) fn int_params(sig: &SSignature) -> Vec<String> {
    sig.args
        .iter()
        .filter_map(|a| match a {
            SArg::Param(p) if p.dtype.value.is_int() => Some(p.name.to_string()),
            _ => None,
        })
        .collect()
}

// Rule: every symbol used in dims, constraints and the `bounded` limit is bound by an input dim
// or an integer parameter (outputs of `bounded`/`dynamic` ops may be data-dependent); kernels'
// symbols are `check_kernel_symbols`'.
pub(super) fn check_symbols_bound(cx: &Ctxt, attr: &OpAttr, sig: &SSignature, dims: &[String]) {
    if sig.gaps.args {
        return; // the argument that did not parse may be the one binding a symbol
    }
    let bound = bound_with_params(sig, dims);
    let report = |id: &syn::Ident, where_: &str, extra: &str| {
        if sig.param(&id.to_string()).is_none() {
            // (A non-integer parameter is reported by check_constraint_operands.)
            cx.error(unbound(id, where_, extra));
        }
    };
    let free_outputs_ok = matches!(attr.output, Some(SShapeClass::Bounded(..)) | Some(SShapeClass::Dynamic(_)));
    for a in &sig.args {
        if let SArg::Tensor(t) = a {
            for d in t.dims.iter().filter(|d| !matches!(d.kind, SExprKind::Sym(_))) {
                let mut syms = Vec::new();
                d.symbols(&mut syms);
                syms.into_iter()
                    .filter(|s| !bound.contains(&s.to_string()))
                    .for_each(|s| report(s, &format!("the dims of input `{}`", t.name), ""));
            }
        }
    }
    for o in &sig.outputs {
        for d in &o.dims {
            let mut syms = Vec::new();
            d.symbols(&mut syms);
            for s in syms {
                if !bound.contains(&s.to_string()) && !free_outputs_ok {
                    report(
                        s,
                        &format!("the dims of output `{}`", o.name),
                        "; a data-dependent size needs `output = bounded(expr)` or `output = dynamic`",
                    );
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
}

/// The error for symbol `id`, used in `where_` but bound by no input dim or integer parameter.
fn unbound(id: &syn::Ident, where_: &str, extra: &str) -> syn::Error {
    let s = id.to_string();
    syn::Error::new(
        id.span(),
        format!("symbol `{s}` in {where_} is never bound: bind it as a bare dim of an input (e.g. `x: f32[{s}]`) or declare a parameter `{s}: u32`{extra}"),
    )
}

// Rule: a kernel's `threads` uses only symbols bound by an input dim or an integer parameter
// (and no parameter of another dtype: the launch is an integer expression), and its uniform
// block only such symbols and parameters. The same for every kernel, forward or VJP, against
// the signature of the op it computes.
pub(super) fn check_kernel_symbols(cx: &Ctxt, sig: &SSignature, k: &SKernel) {
    if sig.gaps.args {
        return; // the argument that did not parse may be the one binding a symbol
    }
    let bound = bound_with_params(sig, &bound_dim_symbols(sig));
    for t in k.threads.iter().chain(&k.threads_yz) {
        let mut syms = Vec::new();
        t.symbols(&mut syms);
        for s in syms.into_iter().filter(|s| !bound.contains(&s.to_string())) {
            match sig.param(&s.to_string()) {
                Some(p) => cx.error(non_integer_operand(s, p.dtype.value)),
                None => cx.error(unbound(s, "the kernel's `threads`", "")),
            }
        }
    }
    for b in &k.bindings {
        let SBinding::Uniform { fields, .. } = b else { continue };
        for f in fields.iter().filter(|f| !bound.contains(&f.to_string()) && sig.param(&f.to_string()).is_none()) {
            cx.error(unbound(f, "the uniform block", ""));
        }
    }
}

/// The error for a parameter of dtype `d` (not an integer) in an integer expression.
fn non_integer_operand(s: &syn::Ident, d: DType) -> syn::Error {
    syn::Error::new(s.span(), format!("parameter `{s}` is `{d}`; dims, `threads` and `bounded(..)` are integer expressions, so only integer parameters can appear in them (a float parameter can appear in a constraint such as `{s} > 0`)"))
}

// Rule: dims and `bounded(..)` are integer expressions (kernels' `threads` too, see
// `check_kernel_symbols`), and so are the integer constraints: only integer parameters appear
// in them (float parameters appear in float
// constraints, which `floats` checks; a `bool` parameter in none).
pub(super) fn check_constraint_operands(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    let non_int: BTreeMap<String, DType> =
        sig.params().filter(|p| !p.dtype.value.is_int()).map(|p| (p.name.to_string(), p.dtype.value)).collect();
    let mut exprs: Vec<&SExpr> = sig.inputs().flat_map(|t| t.dims.iter()).collect();
    exprs.extend(sig.outputs.iter().flat_map(|o| o.dims.iter()));
    if let Some(SShapeClass::Bounded(_, e)) = &attr.output {
        exprs.push(e);
    }
    for e in exprs {
        let mut syms = Vec::new();
        e.symbols(&mut syms);
        for s in syms {
            if let Some(d) = non_int.get(&s.to_string()) {
                cx.error(non_integer_operand(s, *d));
            }
        }
    }
    for c in &sig.constraints {
        let mut syms = Vec::new();
        c.terms.iter().for_each(|t| t.symbols(&mut syms));
        for s in syms.into_iter().filter(|s| non_int.get(&s.to_string()) == Some(&DType::bool)) {
            cx.error(syn::Error::new(
                s.span(),
                format!("parameter `{s}` is `bool`; constraints compare numbers, so a `bool` parameter cannot appear in one"),
            ));
        }
    }
}
