//! Backward rules: the backward fits the signature, `jvp` arity, subgradients of kinked
//! categories, and a generic reference for differentiable ops. Must not check the VJP/JVP bodies.

use crate::contract::DType;
use crate::ctxt::Ctxt;
use crate::model::*;
use crate::reference::RefShape;

// Rule: a differentiable op needs a float input to differentiate and a float output to carry
// a gradient (an op whose outputs are all integers has zero or no derivative: `backward = none`).
pub(super) fn check_backward_fits_signature(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    let Some(bw) = &attr.backward else { return };
    if matches!(bw, SBackward::None(_)) {
        return;
    }
    let has_float_input = sig.inputs().any(|t| t.dtype.value.is_float());
    if !has_float_input && !sig.gaps.args {
        cx.error(
            bw.span()
                .error("this backward needs a float tensor input to differentiate, and the signature has none; declare `backward = none`"),
        );
    } else if !sig.gaps.outputs && !sig.outputs.is_empty() && sig.outputs.iter().all(|o| !o.dtype.value.is_float()) {
        let outs: Vec<String> = sig.outputs.iter().map(|o| format!("`{}: {}`", o.name, o.dtype.value)).collect();
        cx.error(bw.span().error(format!(
            "this backward needs a float output to carry a gradient, and every output is an integer ({}): integer results have no derivative; declare `backward = none`",
            outs.join(", ")
        )));
    }
    if let SBackward::Declared { vjp: None, jvp: None, span, .. } = bw {
        cx.error(span.error("declare at least one rule: `vjp(path)` or `jvp(path, ...)`"));
    }
}

// Rule: a differentiable op's reference is generic over its float type (unless that type is
// already f64), so gradcheck can run the same body in f64.
pub(super) fn check_differentiable_reference_is_generic(
    cx: &Ctxt,
    attr: &OpAttr,
    sig: &SSignature,
    reference: &RefShape,
    func: &crate::reference::RefFn,
) {
    let Some(bw) = &attr.backward else { return };
    // (With dtype variables the reference is generic over them: `reference` checks that.)
    if matches!(bw, SBackward::None(_)) || reference.float_generic.is_some() || !sig.vars.is_empty() {
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
pub(super) fn check_jvp_arity(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    let Some(SBackward::Declared { jvp: Some((span, rules)), .. }) = &attr.backward else { return };
    if sig.gaps.args {
        return;
    }
    let diff: Vec<String> = sig
        .args
        .iter()
        .filter_map(|a| match a {
            SArg::Tensor(t) if t.dtype.value.is_float() => Some(t.name.to_string()),
            _ => None,
        })
        .collect();
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

// Rule: a differentiable op of a kinked category states its subgradient; a
// non-differentiable op has none to state.
pub(super) fn check_subgradient(cx: &Ctxt, attr: &OpAttr) {
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

#[cfg(test)]
mod tests {
    use crate::check::tests::errs;
    use quote::quote;

    #[test]
    fn jvp_arity_names_the_op_and_both_numbers() {
        let e = errs(
            quote!(name = "a/mul", version = 1, signature(a: f32[n], b: f32[n]) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = jvp(only_one)),
            quote!(
                fn f<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
                    todo!()
                }
            ),
        );
        assert_eq!(e, vec!["op `a/mul` has 2 differentiable input(s) (a, b) but `jvp` lists 1 rule(s); list exactly one rule per differentiable input, in order".to_string()]);
    }
}
