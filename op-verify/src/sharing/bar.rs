//! What may leave private, checked at publish: a valid SPDX licence for any shared op, and for
//! `public` the full bar the built-ins meet (a description, every scalar parameter documented,
//! a receipt for a kernel besides the reference, a licence), refused with the list of what is
//! missing. Decides nothing about trust; no I/O.

use super::card::intact;
use super::error::{Missing, SharingError};
use op_contract::contract::Visibility;
use op_core::kind::BackendKind;
use op_core::op::RegisteredOp;
use op_core::receipt::Receipt;

/// Refuses what may not leave private: a VJP op (it travels with its op), a private op, a
/// licence that is not a valid SPDX expression, a shared op without a licence, and a `public`
/// op below the bar ([`public_bar`]), listing everything it lacks.
pub fn may_leave_private(op: &RegisteredOp, receipts: &[Receipt]) -> Result<(), SharingError> {
    let id = op.id.as_str();
    let c = &op.contract;
    if op.vjp_of.is_some() {
        let of = format!("{}@{}", c.name.strip_suffix("/vjp").unwrap_or(&c.name), c.version);
        return Err(SharingError::DerivedOp { op: id.to_string(), of });
    }
    if c.visibility == Visibility::Private {
        return Err(SharingError::Private { op: id.to_string() });
    }
    // The macro validated it; a contract loaded from elsewhere is validated again here.
    if let Some(l) = c.license.as_deref().map(str::trim).filter(|l| !l.is_empty()) {
        if let Err(e) = spdx::Expression::parse(l) {
            return Err(SharingError::BadLicense { op: id.to_string(), license: l.to_string(), reason: e.reason.to_string() });
        }
    }
    if c.visibility == Visibility::Public {
        let missing = public_bar(op, receipts);
        if !missing.is_empty() {
            return Err(SharingError::BelowPublicBar { op: id.to_string(), missing });
        }
    }
    if c.license.as_deref().is_none_or(|l| l.trim().is_empty()) {
        return Err(SharingError::NoLicense { op: id.to_string() });
    }
    Ok(())
}

/// What `op` lacks of the bar every built-in meets, in a fixed order; empty when it meets it.
pub fn public_bar(op: &RegisteredOp, receipts: &[Receipt]) -> Vec<Missing> {
    let c = &op.contract;
    let description = op.decl.description.trim();
    let mut missing = Vec::new();
    if c.license.as_deref().is_none_or(|l| l.trim().is_empty()) {
        missing.push(Missing::License);
    }
    if description.is_empty() {
        missing.push(Missing::Description);
    }
    let named = code_identifiers(description);
    let undocumented: Vec<String> = c.signature.params().filter(|p| !named.contains(&p.name.as_str())).map(|p| p.name.clone()).collect();
    if !undocumented.is_empty() {
        missing.push(Missing::ParameterDocs(undocumented));
    }
    if !intact(receipts, &op.id, &op.hash_hex()).iter().any(|r| r.backend != BackendKind::Reference) {
        missing.push(Missing::KernelReceipt);
    }
    missing
}

/// The identifiers inside the code spans (`` `...` ``) of `text`.
fn code_identifiers(text: &str) -> Vec<&str> {
    let pieces: Vec<&str> = text.split('`').collect();
    // An odd number of pieces: every span is closed; otherwise the last one is not.
    let closed = if pieces.len() % 2 == 1 { pieces.len() } else { pieces.len() - 1 };
    pieces[..closed]
        .iter()
        .skip(1)
        .step_by(2)
        .flat_map(|span| span.split(|ch: char| !(ch.is_alphanumeric() || ch == '_')))
        .filter(|w| !w.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::code_identifiers;

    #[test]
    fn identifiers_come_from_code_spans_only() {
        assert_eq!(code_identifiers("Scaling by a scalar parameter `s * x`."), vec!["s", "x"]);
        assert_eq!(code_identifiers("window w, `w_max` and `a+b` then `unclosed"), vec!["w_max", "a", "b"]);
        assert!(code_identifiers("no spans at all: w and s").is_empty());
    }
}
