//! Sharing rules: the licence of non-private ops and the metadata bar of public ones. Reads
//! only the attribute and the description; must not judge the op's semantics.

use crate::contract::Visibility;
use crate::ctxt::Ctxt;
use crate::model::*;

// Rule: nothing leaves private without a valid SPDX licence expression.
pub(super) fn check_license(cx: &Ctxt, attr: &OpAttr) {
    if let Some(l) = &attr.license {
        if let Err(e) = spdx::Expression::parse(&l.value) {
            cx.error(l.span.error(format!(
                "`{}` is not a valid SPDX licence expression ({}); e.g. \"MIT\" or \"MIT OR Apache-2.0\"",
                l.value, e.reason
            )));
        }
    }
    if let Some(v) = &attr.visibility {
        if v.value != Visibility::Private && attr.license.is_none() {
            let vis = if v.value == Visibility::Public { "public" } else { "workspace" };
            cx.error(
                v.span.error(format!("a `{vis}` op needs a licence: add `license = \"MIT\"` (any SPDX expression) or keep it private")),
            );
        }
    }
}

/// The crate allowed to declare ops under `builtin/` (op-runtime's built-ins floor).
pub const BUILTIN_CRATE: &str = "op_builtins";

/// The first segment of op names reserved for op-runtime.
pub const BUILTIN_SEGMENT: &str = "builtin";

// Rule: the `builtin` namespace (a name whose first segment is `builtin`, `builtin` itself
// included) belongs to op-runtime: another crate declaring an op there would be shown as a
// built-in wherever the name is read (cards, provenance).
pub(super) fn check_reserved_namespace(cx: &Ctxt, attr: &OpAttr, crate_name: Option<&str>) {
    let Some(name) = &attr.name else { return };
    if name.value.split('/').next() != Some(BUILTIN_SEGMENT) || crate_name == Some(BUILTIN_CRATE) {
        return;
    }
    let example = match name.value.split_once('/') {
        Some((_, rest)) => format!("user/{rest}"),
        None => "user/my_op".to_string(),
    };
    cx.error(name.span.error(format!(
        "the `builtin` namespace (`builtin` and every name under `builtin/`) is reserved for op-runtime's own ops; name this op under your own namespace, e.g. \"{example}\""
    )));
}

// Rule: public ops meet the built-ins' metadata bar: a doc comment (the description), besides
// the licence `check_license` requires of every non-private op.
pub(super) fn check_public_metadata(cx: &Ctxt, attr: &OpAttr, description: &str) {
    let Some(v) = &attr.visibility else { return };
    if v.value != Visibility::Public {
        return;
    }
    if description.trim().is_empty() {
        cx.error(v.span.error("a `public` op needs a description: add a `///` doc comment to the function"));
    }
}

#[cfg(test)]
mod tests {
    use crate::check::tests::errs;
    use quote::quote;

    fn named(name: &str) -> Vec<String> {
        errs(
            quote!(name = #name, version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(1), backward = none),
            quote!(
                fn f<T: Real>(x: &[T]) -> Vec<T> {
                    todo!()
                }
            ),
        )
    }

    #[test]
    fn the_builtin_namespace_is_reserved_itself_included() {
        let e = named("builtin");
        assert_eq!(e, ["the `builtin` namespace (`builtin` and every name under `builtin/`) is reserved for op-runtime's own ops; name this op under your own namespace, e.g. \"user/my_op\""]);
        let e = named("builtin/relu");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].ends_with("e.g. \"user/relu\""), "{}", e[0]);
        assert!(named("builtins/relu").is_empty());
        assert!(named("user/builtin").is_empty());
    }
}
