//! Every `op_runtime::...` path named to a user (error messages, doc comments, the README and
//! docs/, the guide's chapters docs/guide/*.md included) is one the user can write: an item,
//! module, method or variant of the reviewed public API listing (`op-runtime/public-api.txt`,
//! its re-exports followed into the floors' listings, each checked against its crate by
//! `scripts/public-api`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The listings of the facade and of each floor crate it re-exports from.
const LISTINGS: [&str; 6] = ["op-runtime", "op-core", "op-backends", "op-train", "op-verify", "op-builtins"];

/// The name a listing line defines (`op_core::a::B::method` from `op_core::a::B::fn method(..)`),
/// and for a re-export (`use op_runtime::X = op_core::a::B`, `use op_runtime::m::* = op_x::*`)
/// the alias and its source.
fn parse(line: &str) -> (Option<String>, Option<(String, String)>) {
    if let Some(rest) = line.strip_prefix("use ") {
        if let Some((dst, src)) = rest.split_once(" = ") {
            let strip = |p: &str| p.trim().trim_end_matches("::*").to_string();
            return (Some(strip(dst)), Some((strip(dst), strip(src))));
        }
    }
    let line = ["mod ", "struct ", "enum ", "trait ", "const ", "static ", "type ", "macro ", "union ", "use "]
        .iter()
        .find_map(|k| line.strip_prefix(k))
        .unwrap_or(line);
    let line = line.replacen("::fn ", "::", 1).replacen("::const ", "::", 1).replacen("::type ", "::", 1);
    let end = line.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '.')).unwrap_or(line.len());
    let path = line[..end].replace('.', "::");
    (Some(path.trim_end_matches(':').to_string()), None)
}

/// The names the facade's listing defines, its re-exports followed into the floors' listings:
/// `op_runtime::a::B`, `op_runtime::a::B::method`, `op_runtime::a::B::Variant`,
/// `op_runtime::a::B::field`, and every module prefix.
fn public_names() -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    let mut aliases = Vec::new();
    for crate_dir in LISTINGS {
        let text = std::fs::read_to_string(Path::new(ROOT).join(crate_dir).join("public-api.txt")).expect("listing");
        for line in text.lines().filter(|l| !l.starts_with("impl ")) {
            let (name, alias) = parse(line);
            all.extend(name);
            aliases.extend(alias);
        }
    }
    // Follow re-exports (chains included: op_runtime::train::Tape -> op_train::Tape -> op_train::tape::Tape).
    for _ in 0..4 {
        let mut added = Vec::new();
        for (dst, src) in &aliases {
            let prefix = format!("{src}::");
            for n in all.range(src.clone()..) {
                if n != src && !n.starts_with(&prefix) {
                    break;
                }
                added.push(format!("{dst}{}", &n[src.len()..]));
            }
        }
        let before = all.len();
        all.extend(added);
        if all.len() == before {
            break;
        }
    }
    let mut names = BTreeSet::new();
    for path in all.iter().filter(|p| p.starts_with("op_runtime")) {
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
    // docs/ with its subdirectories: the guide's chapters (docs/guide/*.md) are read too.
    files(&Path::new(ROOT).join("docs"), "md", &mut sources);
    assert!(sources.iter().any(|p| p.ends_with("docs/guide/declaring.md")), "the guide's chapters are read");
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
