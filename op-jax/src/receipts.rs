//! The receipts this process holds: minted by `op_jax.conformance` here, or presented
//! (`op_jax.present_receipts`, e.g. read from a file another run wrote). A receipt is held only
//! when it is intact (`Receipt::check_intact`: its digest matches its fields, its format is this
//! engine's, a signature verifies). Each forward call's provenance names the
//! held receipt covering (op, content, backend, device), as the tape does for its own calls; an
//! artefact carries the digests held when it was traced, and `op_jax.verify` asks which of its
//! ops hold a receipt valid on this machine (`Receipt::verify`: same op, same content, the
//! device profile of a backend here).

use op_runtime::provenance::ProvenanceEntry;
use op_runtime::receipt::Receipt;
use op_runtime::{registry, OpHandle};
use std::sync::{Mutex, OnceLock};

fn held() -> &'static Mutex<Vec<Receipt>> {
    static HELD: OnceLock<Mutex<Vec<Receipt>>> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// Holds `r` if it is intact and not held already; false where it is not
/// (`Receipt::check_intact`: digest, format, signature).
pub fn hold(r: Receipt) -> bool {
    if r.check_intact().is_err() {
        return false;
    }
    let mut h = held().lock().unwrap_or_else(|p| p.into_inner());
    if !h.iter().any(|x| x.digest == r.digest) {
        h.push(r);
    }
    true
}

/// The held receipts of op `h` (its `name@version` and its current content).
pub fn of(h: &OpHandle) -> Vec<Receipt> {
    let (id, hash) = (h.id(), h.op().hash_hex());
    held().lock().unwrap_or_else(|p| p.into_inner()).iter().filter(|r| r.op == id && r.content_hash == hash).cloned().collect()
}

/// The held receipts of `h` that are valid on this machine: each verified against the device
/// profile of the backend it names, as this process's registry sees it.
pub fn valid_here(h: &OpHandle) -> Vec<Receipt> {
    of(h)
        .into_iter()
        .filter(|r| {
            let local = registry().backend(r.backend).and_then(|b| b.profile().ok());
            local.is_some_and(|p| r.verify_parts(&h.id(), &h.op().hash_hex(), &p).is_ok())
        })
        .collect()
}

/// Names the held receipt covering this call (op, content, backend, device) in its entry. Runs
/// on every call: nothing is formatted, and an empty set costs one uncontended lock.
pub fn attach(e: &mut ProvenanceEntry) {
    let h = held().lock().unwrap_or_else(|p| p.into_inner());
    if h.is_empty() {
        return;
    }
    if let Some(r) = h.iter().find(|r| {
        r.backend == e.backend && crate::handler::hex_eq(&e.content_hash, &r.content_hash) && *r.op == *e.op && r.device == *e.device
    }) {
        e.receipt = Some(r.digest.clone());
    }
}
