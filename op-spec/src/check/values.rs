//! Rules about values rather than shapes: which inputs a `domain(...)` may bound, and where
//! `signed_zero = ignore` means something. Reads the attribute only; must not judge kernels.

use crate::contract::{SignedZero, Tolerance};
use crate::ctxt::Ctxt;
use crate::model::*;

// Rule: a domain bounds the values of a float tensor input of the signature.
pub(super) fn check_domain_inputs(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    for d in &attr.domain {
        let name = d.input.to_string();
        let found = sig.args.iter().find(|a| *a.ident() == d.input);
        let why = match found {
            Some(SArg::Tensor(t)) if t.dtype.value.is_float() => continue,
            Some(SArg::Tensor(t)) => format!("`{name}` is a `{}` tensor", t.dtype.value),
            Some(SArg::Param(_)) => format!("`{name}` is a parameter (bound it with a `where` constraint instead)"),
            // An argument that did not parse has its own error.
            Some(SArg::Broken(_)) => continue,
            None => {
                let floats: Vec<String> = sig
                    .args
                    .iter()
                    .filter_map(|a| if let SArg::Tensor(t) = a { t.dtype.value.is_float().then(|| format!("`{}`", t.name)) } else { None })
                    .collect();
                format!(
                    "`{name}` is not an input of the signature (float inputs: {})",
                    if floats.is_empty() { "none".into() } else { floats.join(", ") }
                )
            }
        };
        cx.error(syn::Error::new(d.input.span(), format!("`domain(...)` bounds float tensor inputs, e.g. `domain(x > 0)`, but {why}")));
    }
}

// Rule: `signed_zero = ignore` needs a float output compared `exact` (the other classes already
// compare +0 and -0 as equal), else it would declare something that changes nothing.
pub(super) fn check_signed_zero_scope(cx: &Ctxt, attr: &OpAttr) {
    let Some(sz) = &attr.signed_zero else { return };
    if sz.value != SignedZero::Ignore {
        return;
    }
    if let Some(t) = &attr.tolerance {
        if !matches!(t.value, Tolerance::Exact) {
            cx.error(sz.span.error(format!(
                "`signed_zero = ignore` changes only `exact` comparisons; `{}` already compares +0 and -0 as equal: remove it",
                t.value
            )));
            return;
        }
    }
    if let Some(sig) = &attr.signature {
        if !sig.outputs.iter().any(|o| o.dtype.value.is_float()) {
            cx.error(sz.span.error("`signed_zero = ignore` needs a float output: integers have no signed zero; remove it"));
        }
    }
}
