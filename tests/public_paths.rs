//! Every `op_runtime::...` path named to a user (error messages, doc comments, the README and
//! docs/) is one the user can write: an item, module, method or variant of the reviewed public
//! API listing (`op-runtime/public-api.txt`, checked against the crate by `scripts/public-api`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The names the listing defines: `op_runtime::a::B`, `op_runtime::a::B::method`,
/// `op_runtime::a::B::Variant`, `op_runtime::a::B::field`, and every module prefix.
fn public_names() -> BTreeSet<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("op-runtime/public-api.txt")).expect("listing");
    let mut names = BTreeSet::new();
    for line in text.lines().filter(|l| !l.starts_with("impl ")) {
        let line = ["mod ", "struct ", "enum ", "trait ", "const ", "static ", "type ", "macro ", "union ", "use "]
            .iter()
            .find_map(|k| line.strip_prefix(k))
            .unwrap_or(line);
        let line = line.replacen("::fn ", "::", 1).replacen("::const ", "::", 1).replacen("::type ", "::", 1);
        let end = line.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '.')).unwrap_or(line.len());
        let path = line[..end].replace('.', "::");
        let path = path.trim_end_matches(':');
        let mut prefix = String::new();
        for seg in path.split("::") {
            if !prefix.is_empty() {
                prefix.push_str("::");
            }
            prefix.push_str(seg);
            names.insert(prefix.clone());
        }
    }
    names
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// `op_runtime::` paths in a text, skipping the macro's private door.
fn mentioned(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("op_runtime::") {
            let before = rest[..i].chars().last();
            let tail = &rest[i..];
            let end = tail.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(tail.len());
            let path = tail[..end].trim_end_matches(':').to_string();
            rest = &tail[end..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') || path.contains("__private") {
                continue;
            }
            out.push((n + 1, path));
        }
    }
    out
}

#[test]
fn every_named_path_is_public() {
    let names = public_names();
    assert!(names.contains("op_runtime::register") && names.len() > 500, "the listing is read");
    let mut sources = Vec::new();
    for dir in [
        "op-runtime/src",
        "op-core/src",
        "op-backends/src",
        "op-train/src",
        "op-verify/src",
        "op-builtins/src",
        "op-macros/src",
        "op-spec/src",
        "op-contract/src",
    ] {
        files(&Path::new(ROOT).join(dir), "rs", &mut sources);
    }
    files(&Path::new(ROOT).join("docs"), "md", &mut sources);
    sources.push(Path::new(ROOT).join("README.md"));
    let mut missing = Vec::new();
    for file in &sources {
        let text = std::fs::read_to_string(file).expect("source");
        for (line, path) in mentioned(&text) {
            if !names.contains(&path) {
                missing.push(format!("{}:{line}: {path}", file.strip_prefix(ROOT).unwrap_or(file).display()));
            }
        }
    }
    assert!(missing.is_empty(), "paths named to users that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn a_wrong_path_is_caught() {
    let names = public_names();
    let found = mentioned("see `op_runtime::verify::conformance::conform` and op_runtime::register");
    let missing: Vec<_> = found.iter().filter(|(_, p)| !names.contains(p)).collect();
    assert_eq!(missing.len(), 1, "{found:?}");
    assert_eq!(missing[0].1, "op_runtime::verify::conformance::conform");
}
