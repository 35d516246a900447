//! Category, tolerance and NaN policy against the dtypes: integer arithmetic has integer
//! results, float-rounding categories and tolerances need a float result to round, and NaN can
//! only propagate from a float input to a float output. Reads only the attribute.

use crate::contract::{Category, NanPolicy};
use crate::ctxt::Ctxt;
use crate::model::*;

/// Whether the category describes float rounding (its tolerance bounds a float error).
pub(super) fn rounds(cat: Category) -> bool {
    !matches!(cat, Category::Selection | Category::Integer)
}

// Rule: `category = integer` is exact integer arithmetic: no output is a float.
pub(super) fn check_integer_category_outputs(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    let Some(cat) = &attr.category else { return };
    if cat.value != Category::Integer || sig.gaps.outputs {
        return;
    }
    if let Some(o) = sig.outputs.iter().find(|o| o.dtype.value.is_float()) {
        cx.error(cat.span.error(format!(
            "category `integer` is exact integer arithmetic, but output `{}` is `{}`: float results round; use `category = elementwise` with `tolerance = ulp(k)` (or `selection` if the op only compares, selects and permutes)",
            o.name, o.dtype.value
        )));
    }
}

/// Whether the rounding categories' rule refuses this attribute (then the category x tolerance
/// table is not consulted: its advice assumes float results).
pub(super) fn rounding_without_float_output(attr: &OpAttr) -> bool {
    let (Some(cat), Some(sig)) = (&attr.category, &attr.signature) else { return false };
    rounds(cat.value) && !sig.gaps.outputs && !sig.outputs.is_empty() && sig.outputs.iter().all(|o| !o.dtype.value.is_float())
}

// Rule: a float-rounding category (elementwise, transcendental, reduction, contraction,
// approximate) and its tolerance (`ulp`, `accum`, `loose`) need a float output to round: an op
// whose outputs are all integers is `integer` (or `selection`) and `exact`.
pub(super) fn check_rounding_category_has_float_output(cx: &Ctxt, attr: &OpAttr) {
    if !rounding_without_float_output(attr) {
        return;
    }
    let (Some(cat), Some(sig)) = (&attr.category, &attr.signature) else { return };
    let outs: Vec<String> = sig.outputs.iter().map(|o| format!("`{}: {}`", o.name, o.dtype.value)).collect();
    let tol = attr.tolerance.as_ref().map(|t| format!(" with `{}`", t.value)).unwrap_or_default();
    cx.error(cat.span.error(format!(
        "category `{}`{tol} bounds float rounding, but every output of this op is an integer ({}): integer results are exact; declare `category = integer, tolerance = exact` (or `selection` if the op only compares, selects and permutes)",
        cat.value.name(),
        outs.join(", ")
    )));
}

// Rule: `nan = propagate` needs a float input (for a NaN to come in) and a float output (for it
// to come out).
pub(super) fn check_nan_policy_has_floats(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    let Some(nan) = &attr.nan else { return };
    if sig.gaps.args || sig.gaps.outputs {
        return;
    }
    let float_in = sig.inputs().any(|t| t.dtype.value.is_float());
    let float_out = sig.outputs.iter().any(|o| o.dtype.value.is_float());
    let word = match nan.value {
        NanPolicy::Propagate => "propagate",
        NanPolicy::Ordered => "ordered",
    };
    let missing = match (float_in, float_out) {
        (true, true) => return check_ordered_is_selection(cx, attr, nan),
        (false, _) => "no float input, so no NaN can come in",
        (true, false) => "no float output, so no NaN can come out",
    };
    cx.error(
        nan.span.error(format!("`nan = {word}` says how NaN inputs reach the outputs, but this op has {missing}; remove `nan = {word}`")),
    );
}

// Rule: `nan = ordered` (NaN ordered like any value, moved, never made) is a `selection` op's
// policy: an op that computes with its values makes NaN (`0 / 0`), so it declares `propagate`.
fn check_ordered_is_selection(cx: &Ctxt, attr: &OpAttr, nan: &Spanned<NanPolicy>) {
    let Some(category) = &attr.category else { return };
    if nan.value == NanPolicy::Ordered && category.value != Category::Selection {
        cx.error(nan.span.error(format!(
            "`nan = ordered` says the op moves NaN like any value by its total order, which only a `selection` op does; this op is `{}`: declare `nan = propagate`",
            category.value
        )));
    }
}

#[cfg(test)]
mod tests {
    use crate::check::tests::errs;
    use quote::quote;

    fn int_fn() -> proc_macro2::TokenStream {
        quote!(
            fn f(x: &[u32]) -> Vec<u32> {
                todo!()
            }
        )
    }

    #[test]
    fn integer_ops_are_integer_and_exact() {
        let base = |cat: proc_macro2::TokenStream| {
            errs(quote!(name = "a/b", version = 1, signature(x: u32[n]) -> u32[n], #cat, backward = none), int_fn())
        };
        assert!(base(quote!(category = integer, tolerance = exact)).is_empty());
        let e = base(quote!(category = elementwise, tolerance = ulp(0)));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with(
                "category `elementwise` with `ulp(0)` bounds float rounding, but every output of this op is an integer (`out: u32`)"
            ),
            "{}",
            e[0]
        );
        let e = base(quote!(category = elementwise, tolerance = exact));
        assert_eq!(e.len(), 1, "{e:?}");
        let e = base(quote!(category = integer, tolerance = exact, nan = propagate));
        assert_eq!(e, vec!["`nan = propagate` says how NaN inputs reach the outputs, but this op has no float input, so no NaN can come in; remove `nan = propagate`".to_string()]);
    }

    #[test]
    fn integer_category_on_float_results() {
        let e = errs(
            quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = integer, tolerance = exact, backward = none),
            quote!(
                fn f(x: &[f32]) -> Vec<f32> {
                    todo!()
                }
            ),
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("category `integer` is exact integer arithmetic, but output `out` is `f32`"), "{}", e[0]);
    }

    #[test]
    fn nan_ordered_is_for_selection_ops() {
        let f = quote!(
            fn f<T: Real>(x: &[T]) -> Vec<T> {
                todo!()
            }
        );
        let base = |rest: proc_macro2::TokenStream| {
            errs(quote!(name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], backward = none, #rest), f.clone())
        };
        assert!(base(quote!(category = selection, tolerance = exact, nan = ordered)).is_empty());
        assert!(base(quote!(category = selection, tolerance = exact, nan = propagate)).is_empty());
        let e = base(quote!(category = elementwise, tolerance = ulp(1), nan = ordered));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("`nan = ordered` says the op moves NaN like any value by its total order, which only a `selection` op does; this op is `elementwise`"), "{}", e[0]);
    }
}
