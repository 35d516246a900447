//! Data-dependent outputs (`output = bounded(..)` / `dynamic`): what such ops may declare.
//! Reads only the attribute and signature; must not evaluate constraints or read files.

use crate::ctxt::Ctxt;
use crate::model::*;

/// Symbols used by output dims but bound by no input dim or integer parameter.
fn free_symbols<'a>(sig: &'a SSignature, bound: &[String]) -> Vec<&'a syn::Ident> {
    let mut out: Vec<&syn::Ident> = Vec::new();
    for o in &sig.outputs {
        for d in &o.dims {
            let mut used = Vec::new();
            d.symbols(&mut used);
            for u in used {
                if !bound.iter().any(|b| u == b) && !out.contains(&u) {
                    out.push(u);
                }
            }
        }
    }
    out
}

// Rule: a data-dependent symbol is a whole output dim, at most one per output, so the
// engine can read its size off the returned data.
pub(super) fn check_data_dependent_dims(cx: &Ctxt, attr: &OpAttr, sig: &SSignature, bound: &[String]) {
    if matches!(attr.output, None | Some(SShapeClass::Static(_))) {
        return;
    }
    let free = free_symbols(sig, bound);
    for o in &sig.outputs {
        let mut seen: Vec<&syn::Ident> = Vec::new();
        for d in &o.dims {
            let mut used = Vec::new();
            d.symbols(&mut used);
            for u in used.into_iter().filter(|u| free.contains(u)) {
                if !matches!(d.kind, SExprKind::Sym(_)) {
                    cx.error(syn::Error::new(
                        u.span(),
                        format!(
                            "data-dependent symbol `{u}` must be a whole dim of output `{}` (e.g. `f32[{u}]`), not part of an expression",
                            o.name
                        ),
                    ));
                } else if !seen.is_empty() {
                    cx.error(syn::Error::new(u.span(), format!("output `{}` has two data-dependent dims (`{}` and `{u}`); one per output lets the engine read its size off the data", o.name, seen[0])));
                } else {
                    seen.push(u);
                }
            }
        }
    }
}

// Rule: a data-dependent op is `backward = none` and has no GPU kernel (both need static shapes
// for now), so neither a gradient nor a launch can be silently mis-sized.
pub(super) fn check_data_dependent_support(cx: &Ctxt, attr: &OpAttr) {
    let class = match &attr.output {
        Some(SShapeClass::Bounded(span, _)) => (*span, "bounded"),
        Some(SShapeClass::Dynamic(span)) => (*span, "dynamic"),
        _ => return,
    };
    if let Some(bw) = &attr.backward {
        if !matches!(bw, SBackward::None(_)) {
            cx.error(bw.span().error(format!(
                "`output = {}` ops must be `backward = none`: gradients through data-dependent shapes are not supported yet",
                class.1
            )));
        }
    }
    for k in &attr.kernels {
        cx.error(SpanRange::single(k.span.first).error(format!("`output = {}` ops run on host backends only: GPU kernels need static output sizes; remove this kernel or make the output static", class.1)));
    }
}
