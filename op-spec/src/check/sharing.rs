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
