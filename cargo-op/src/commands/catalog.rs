//! `cargo op list` and `cargo op card`: the catalog entries the generated `__op_catalog` tests
//! write (each op found in its binary's catalog, its identity checked against registration's),
//! with the receipts a store holds for each content.

use super::{load_trust, print_json, records_dir, store, trust_path};
use crate::cargo::{run_tests, CATALOG};
use crate::cli::{Scope, StoreArg, TrustArg};
use crate::error::{Error, Status};
use op_report::Records;
use op_runtime::catalog::CatalogEntry;
use op_runtime::sharing::{LocalDevices, SharingError, Store};
use op_runtime::{BackendKind, OpSource};

/// The catalog of the scope: runs the catalog tests (unless `--no-run`) and reads their entries.
fn entries(scope: &Scope, store: &Store) -> Result<Vec<CatalogEntry>, Error> {
    let dir = records_dir(scope, "list")?;
    if !scope.no_run {
        let run = run_tests(scope, &[CATALOG], &dir, "listing ops")?;
        if !run.failed.is_empty() {
            return Err(Error::Cargo {
                command: "cargo test (the catalog tests)".into(),
                reason: format!("{} failed:\n{}", run.failed.join(", "), run.tail),
            });
        }
    }
    let tested: Vec<CatalogEntry> = Records::load(&dir)?.ops.into_iter().map(|o| o.entry).collect();
    let mut out = as_linked(tested);
    for e in &mut out {
        e.receipts = stored_receipts(store, e)?;
    }
    Ok(out)
}

/// The built-ins as a program links them: the catalog tests of op-runtime run in its own test
/// build, where the code the built-ins reach tests `cfg(test)` (their unit tests), so their
/// identities there are not those of the op-runtime every other crate links; this binary links
/// that one, so its catalog gives them. Every other op keeps the entry its crate's test wrote.
fn as_linked(tested: Vec<CatalogEntry>) -> Vec<CatalogEntry> {
    let (linked, _) = op_runtime::catalog::entries();
    tested
        .into_iter()
        .map(|e| match linked.iter().find(|l| l.id == e.id && l.source == OpSource::Builtin && e.source == OpSource::Builtin) {
            Some(l) => l.clone(),
            None => e,
        })
        .collect()
}

/// The receipts `store` holds for `e`'s content (none where it is not published, or published
/// with other content).
fn stored_receipts(store: &Store, e: &CatalogEntry) -> Result<Vec<op_runtime::receipt::Receipt>, Error> {
    match store.load(&e.id) {
        Ok(loaded) if loaded.card.content_hash == e.identity => Ok(loaded.receipts),
        Ok(_) | Err(SharingError::NotPublished { .. }) => Ok(Vec::new()),
        Err(err) => Err(err.into()),
    }
}

/// One line per backend: its kernels (GPU kernels with the start of their hash).
fn kernels_text(e: &CatalogEntry) -> String {
    let mut parts = Vec::new();
    for b in BackendKind::PRIORITY {
        let ks: Vec<String> = e
            .kernels_on(b)
            .map(|k| {
                let hash = k.blake3.as_deref().map(|h| format!(" ({})", h.get(..8).unwrap_or(h))).unwrap_or_default();
                let vjp = if k.vjp { " [vjp]" } else { "" };
                format!("{}{hash}{vjp}", k.kernel)
            })
            .collect();
        if !ks.is_empty() {
            parts.push(format!("{}: {}", b.name(), ks.join(", ")));
        }
    }
    parts.join("; ")
}

/// `cargo op list`.
pub(crate) fn list(scope: &Scope, store_arg: &StoreArg, json: bool) -> Result<Status, Error> {
    let store = store(store_arg)?;
    let entries = entries(scope, &store)?;
    if json {
        print_json(&entries)?;
        return Ok(Status::Ok);
    }
    for e in &entries {
        println!(
            "{:<40} {}  {:?}  {}, {}  receipts in store: {}\n    {}",
            e.id,
            e.identity.get(..16).unwrap_or(&e.identity),
            e.source,
            e.category,
            e.tolerance,
            e.receipts.len(),
            kernels_text(e)
        );
    }
    println!("{} ops", entries.len());
    Ok(Status::Ok)
}

/// Whether `e` is the op `name` names (`name@version`, or `name` alone).
fn named(e: &CatalogEntry, name: &str) -> bool {
    e.id == name || e.name == name
}

/// `cargo op card NAME`: the catalog's card (the highest version where `NAME` has none) with
/// the store's receipts, trust decided on this machine's devices with the trust list; an op
/// only in the store is shown from the store.
pub(crate) fn card(name: &str, scope: &Scope, store_arg: &StoreArg, trust_arg: &TrustArg, json: bool) -> Result<Status, Error> {
    let store = store(store_arg)?;
    let trust = load_trust(&trust_path(trust_arg)?)?;
    let devices = LocalDevices::of(op_runtime::registry());
    let entries = entries(scope, &store)?;
    let found = entries.iter().filter(|e| named(e, name)).max_by_key(|e| e.version);
    let card = match found {
        Some(e) => {
            let mut card = e.card.clone();
            card.receipts = e.receipts.clone();
            card.for_devices(&devices, &trust)
        }
        None => match store.load(name) {
            Ok(loaded) => loaded.card_for(&devices, &trust),
            Err(SharingError::NotPublished { .. } | SharingError::BadId { .. }) => {
                return Err(Error::NotFound {
                    name: name.to_string(),
                    looked: format!("the catalog ({} ops) or the store {}", entries.len(), store.dir().display()),
                })
            }
            Err(e) => return Err(e.into()),
        },
    };
    if json {
        print_json(&card)?;
    } else {
        println!("{card}");
    }
    Ok(Status::Ok)
}
