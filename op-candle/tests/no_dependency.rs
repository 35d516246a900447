//! The adapters add no dependency to op-runtime: in the workspace's `Cargo.lock`, which lists
//! every dependency a package can have (each feature's, and its dev-dependencies), nothing
//! op-runtime reaches is candle, burn (or its cubecl) or ndarray. A user who does not depend on
//! op-candle, op-burn or op-ndarray builds none of those libraries.

use std::collections::{HashMap, HashSet};

/// One `[[package]]` of the lock: its name, version and dependencies (as the lock writes them:
/// `name` where one version is locked, `name version` otherwise).
struct Package {
    name: String,
    version: String,
    deps: Vec<String>,
}

fn packages(lock: &str) -> Vec<Package> {
    let mut out = Vec::new();
    for block in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block.lines().find_map(|l| l.strip_prefix(&format!("{key} = \"")).and_then(|v| v.strip_suffix('"'))).map(str::to_string)
        };
        let deps = match block.find("dependencies = [") {
            Some(at) => block[at..]
                .lines()
                .skip(1)
                .take_while(|l| !l.starts_with(']'))
                .map(|l| l.trim().trim_end_matches(',').trim_matches('"').to_string())
                .collect(),
            None => Vec::new(),
        };
        out.push(Package { name: field("name").unwrap_or_default(), version: field("version").unwrap_or_default(), deps });
    }
    out
}

/// Every package name `root` reaches through the lock's dependency lists.
fn reached(lock: &str, root: &str) -> HashSet<String> {
    let pkgs = packages(lock);
    let by_key: HashMap<String, &Package> = pkgs.iter().map(|p| (format!("{} {}", p.name, p.version), p)).collect();
    let find = |dep: &str| -> Vec<&Package> {
        match by_key.get(dep) {
            Some(p) => vec![*p],
            None => pkgs.iter().filter(|p| p.name == dep).collect(),
        }
    };
    let mut seen = HashSet::new();
    let mut todo: Vec<&Package> = find(root);
    assert!(!todo.is_empty(), "`{root}` is not in Cargo.lock");
    while let Some(p) = todo.pop() {
        for d in &p.deps {
            for q in find(d) {
                if seen.insert(format!("{} {}", q.name, q.version)) {
                    todo.push(q);
                }
            }
        }
    }
    seen.into_iter().map(|k| k.split(' ').next().unwrap_or_default().to_string()).collect()
}

fn is_adapter_library(name: &str) -> bool {
    name.starts_with("candle")
        || name.starts_with("burn")
        || name.starts_with("cubecl")
        || name == "ndarray"
        || name.starts_with("op-candle")
        || name.starts_with("op-burn")
        || name.starts_with("op-ndarray")
}

#[test]
fn op_runtime_reaches_no_adapter_library() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock")).expect("the workspace's Cargo.lock");
    let from_runtime = reached(&lock, "op-runtime");
    assert!(from_runtime.contains("half") && from_runtime.contains("op-contract"), "the walk reaches op-runtime's own dependencies");
    let bad: Vec<&String> = from_runtime.iter().filter(|n| is_adapter_library(n)).collect();
    assert!(bad.is_empty(), "op-runtime reaches {bad:?}");
    // The walk does find them where they are: from the adapters themselves.
    assert!(reached(&lock, "op-candle").contains("candle-core"));
    assert!(reached(&lock, "op-ndarray").contains("ndarray"));
    let from_burn = reached(&lock, "op-burn");
    assert!(from_burn.contains("burn-tensor") && from_burn.contains("burn-autodiff") && from_burn.contains("burn-ndarray"));
}
