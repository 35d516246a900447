//! The catalog lists every op linked into a binary, without registering any, with the identity
//! registration gives it: here the built-ins and the example's windowed median (included below).
//! With `OP_LIST_JSON` naming the output of `cargo op list --json` (CI), that listing must hold
//! the built-ins with the identities registration gives them here, and the median with the one
//! the example's own registration gives it (`OP_EXAMPLE_IDENTITY`, from `-- --identity`).

#[path = "../examples/windowed_median/median.rs"]
mod median;

use op_runtime::catalog::{entries, CatalogEntry};
use op_runtime::{OpSource, Registry};

/// The identity a fresh registry gives each built-in and the median.
fn registered() -> Vec<(String, String)> {
    let registry = Registry::with_builtins();
    let median = registry.register(&median::windowed_median::DECL).expect("the median registers");
    let mut ids: Vec<(String, String)> = op_runtime::builtins::decls()
        .iter()
        .map(|d| {
            let id = op_runtime::RegisteredOp::load(d).expect("loads").id().to_string();
            let h = registry.lookup(&id).expect("registered");
            (h.id(), h.op().hash_hex())
        })
        .collect();
    ids.push((median.id(), median.op().hash_hex()));
    ids
}

/// Asserts `listed` holds each of `expected` with the same identity.
fn holds(listed: &[CatalogEntry], expected: &[(String, String)], what: &str) {
    for (id, identity) in expected {
        let found: Vec<&CatalogEntry> = listed.iter().filter(|e| &e.id == id).collect();
        assert!(!found.is_empty(), "{what}: `{id}` is not listed");
        assert!(
            found.iter().any(|e| &e.identity == identity),
            "{what}: `{id}` listed with {:?}, registration gives {identity}",
            found.iter().map(|e| &e.identity).collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_catalog_lists_the_builtins_and_the_median_with_registrations_identities() {
    let (listed, failed) = entries();
    assert!(failed.is_empty(), "{failed:?}");
    let expected = registered();
    holds(&listed, &expected, "op_runtime::catalog::entries()");
    let builtin = |id: &str| listed.iter().find(|e| e.id == id).map(|e| e.source);
    assert_eq!(builtin("builtin/add@1"), Some(OpSource::Builtin));
    assert_eq!(builtin("user/example/windowed_median@1"), Some(OpSource::User));
    let median = listed.iter().find(|e| e.id == "user/example/windowed_median@1").expect("listed");
    assert!(median.kernels.iter().any(|k| k.kernel.ends_with("windowed_median.wgsl") && k.blake3.is_some()), "{:?}", median.kernels);
    // Nothing registered them: the process-wide registry has no user op.
    assert!(op_runtime::registry().lookup("user/example/windowed_median@1").is_err());
}

#[test]
fn cargo_op_list_json_agrees_with_registration() {
    let Some(path) = std::env::var_os("OP_LIST_JSON").filter(|p| !p.is_empty()) else {
        eprintln!("OP_LIST_JSON not set: the output of `cargo op list --json` is checked in CI (.ci/run)");
        return;
    };
    let text = std::fs::read_to_string(&path).expect("the listing");
    let listed: Vec<CatalogEntry> = serde_json::from_str(&text).expect("`cargo op list --json` is a JSON array of catalog entries");
    // The built-ins as this binary links them.
    let builtins: Vec<(String, String)> = registered().into_iter().filter(|(id, _)| id.starts_with("builtin/")).collect();
    holds(&listed, &builtins, "cargo op list --json");
    // The median as the example registers it (this file's copy of it is another target's
    // code, with its own identity): `name@version identity` from `--identity`.
    let example = std::env::var("OP_EXAMPLE_IDENTITY").expect("OP_EXAMPLE_IDENTITY: `cargo run --example windowed_median -- --identity`");
    let (id, identity) = example.trim().split_once(' ').expect("`name@version identity`");
    holds(&listed, &[(id.to_string(), identity.to_string())], "cargo op list --json (the example's median)");
}
