//! The declaring crate's module tree: the target cargo is compiling (its root found from the
//! manifest by `CARGO_CRATE_NAME`), and every module reached from that root through `mod`
//! declarations, each indexed. Only that target's tree is read. Each file is parsed once per
//! process: indexes are cached by path and content digest across macro invocations (as plain
//! data: spans never outlive the invocation that made them), and so is each assembled tree, by
//! its root and the digests of the files its walk read, so the ops of one crate share one tree.

use super::index::{index_light, Module};
pub(crate) use super::krate::{Crate, CrateModule};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Most source files read for one crate (a guard against runaway `#[path]` graphs).
const MAX_FILES: usize = 4096;

/// Deepest recursion the index's parse is allowed (see [`super::layout::parse_depth`]): within
/// a 2 MiB stack in a debug build. A deeper file is not parsed.
const MAX_PARSE_DEPTH: usize = 128;

/// A file's index, or `None` when it does not parse.
type Indexed = Option<Arc<Vec<Module>>>;
/// Indexed files by path, with the blake3 of the bytes they were indexed from.
type Cache = HashMap<PathBuf, ([u8; 32], Indexed)>;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Reads and indexes one file; the index is reused while the file's bytes are the same (by
/// content, never by modification time: an edit can never be missed). `None` if it cannot be
/// read; else the digest of the bytes and the index.
fn read(path: &Path) -> Option<([u8; 32], Indexed)> {
    let bytes = std::fs::read(path).ok()?;
    let digest = *blake3::hash(&bytes).as_bytes();
    if let Some((d, idx)) = cache().lock().unwrap_or_else(|p| p.into_inner()).get(path) {
        if *d == digest {
            return Some((digest, idx.clone()));
        }
    }
    // syn recurses into nested groups, types and expressions: a file deeper than this is not parsed.
    let idx = String::from_utf8(bytes)
        .ok()
        .filter(|t| super::layout::parse_depth(t) <= MAX_PARSE_DEPTH)
        .and_then(|t| super::light::parse_file(&t).ok())
        .map(|light| Arc::new(index_light(light)));
    cache().lock().unwrap_or_else(|p| p.into_inner()).insert(path.to_path_buf(), (digest, idx.clone()));
    Some((digest, idx))
}

/// Whether a file's child modules live in its own directory (`lib.rs`, `main.rs`, `mod.rs`,
/// and crate roots) rather than in a directory named after it.
fn owns_dir(file: &Path, root: bool) -> bool {
    root || matches!(file.file_name().and_then(|n| n.to_str()), Some("mod.rs" | "lib.rs" | "main.rs"))
}

/// The directory in which `file`'s out-of-line child modules of inline module `inline` live.
fn child_dir(file: &Path, root: bool, inline: &[String]) -> PathBuf {
    let parent = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut dir = if owns_dir(file, root) { parent } else { parent.join(file.file_stem().unwrap_or_default()) };
    for m in inline {
        dir = dir.join(m);
    }
    dir
}

/// The files module `c`, declared in `file`, may be read from: its `#[path]` (or each of its
/// `cfg_attr` paths and the default file), those that exist.
fn child_files(file: &Path, root: bool, inline: &[String], c: &super::index::Child) -> Vec<PathBuf> {
    let base = if inline.is_empty() { file.parent().map(Path::to_path_buf).unwrap_or_default() } else { child_dir(file, root, inline) };
    let mut out: Vec<PathBuf> = c.paths.iter().map(|p| super::deps::normalize(&base.join(p))).collect();
    if !c.fixed {
        let dir = child_dir(file, root, inline);
        out.extend([dir.join(format!("{}.rs", c.name)), dir.join(&c.name).join("mod.rs")].into_iter().find(|p| p.is_file()));
    }
    out.retain(|p| p.is_file());
    out
}

/// One file the walk of a tree reached: its module path and cfgs, and its digest and index
/// (`None` if it could not be read).
struct Read {
    file: PathBuf,
    base: Vec<String>,
    cfgs: Vec<String>,
    read: Option<([u8; 32], Indexed)>,
}

/// Walks the module tree under `root` (the crate root file) through the file cache: every file
/// reached by `mod` declarations, in walk order (a file mounted at two module paths twice).
fn walk(root: &Path) -> Vec<Read> {
    let mut seen: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let mut out = Vec::new();
    let mut queue: Vec<(PathBuf, Vec<String>, Vec<String>, bool)> = vec![(root.to_path_buf(), Vec::new(), Vec::new(), true)];
    while let Some((file, base, cfgs, is_root)) = queue.pop() {
        if seen.iter().any(|(f, b)| *f == file && *b == base) || seen.len() >= MAX_FILES {
            continue;
        }
        seen.push((file.clone(), base.clone()));
        let got = read(&file);
        if let Some((_, Some(mods))) = &got {
            for m in mods.iter() {
                for c in &m.children {
                    for f in child_files(&file, is_root, &m.path, c) {
                        let mut p = base.clone();
                        p.extend(m.path.iter().cloned());
                        p.push(c.name.clone());
                        let mut cf = cfgs.clone();
                        cf.extend(m.cfgs.iter().cloned());
                        cf.extend(c.cfgs.iter().cloned());
                        queue.push((f, p, cf, false));
                    }
                }
            }
        }
        out.push(Read { file, base, cfgs, read: got });
    }
    out
}

/// A tree's cache key: every file its walk reached, with its digest (if it could be read), in
/// walk order.
type TreeKey = Vec<(PathBuf, Option<[u8; 32]>)>;

/// Assembled trees by root, with the key each was assembled for.
type Trees = HashMap<PathBuf, (TreeKey, Arc<Crate>)>;

fn trees() -> &'static Mutex<Trees> {
    static TREES: OnceLock<Mutex<Trees>> = OnceLock::new();
    TREES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The module tree under `root`, assembled once per version of its files.
pub(crate) fn load_tree(root: &Path) -> Arc<Crate> {
    let reads = walk(root);
    let key: TreeKey = reads.iter().map(|r| (r.file.clone(), r.read.as_ref().map(|(d, _)| *d))).collect();
    let mut cache = trees().lock().unwrap_or_else(|p| p.into_inner());
    if let Some((k, krate)) = cache.get(root) {
        if *k == key {
            return krate.clone();
        }
    }
    let krate = Arc::new(assemble(reads));
    cache.insert(root.to_path_buf(), (key, krate.clone()));
    krate
}

/// The crate's modules from the files its walk read.
fn assemble(reads: Vec<Read>) -> Crate {
    let mut krate = Crate::default();
    for r in reads {
        let Some((digest, idx)) = r.read else { continue };
        if !krate.files.iter().any(|(f, _)| *f == r.file) {
            krate.files.push((r.file.clone(), digest));
        }
        let Some(mods) = idx else {
            krate.unparsed.push(r.file.clone());
            continue;
        };
        for m in mods.iter() {
            let mut path = r.base.clone();
            path.extend(m.path.iter().cloned());
            // A module's cfgs: its file's mount, and its own and its enclosing inline modules'.
            let mut cfgs = r.cfgs.clone();
            for outer in mods.iter().filter(|o| m.path.starts_with(&o.path)) {
                cfgs.extend(outer.cfgs.iter().cloned());
            }
            cfgs.sort();
            cfgs.dedup();
            krate.by_path.entry(path.clone()).or_default().push(krate.modules.len());
            krate.modules.push(CrateModule {
                path,
                file: r.file.clone(),
                inline: m.path.clone(),
                items: m.items.clone(),
                uses: m.uses.clone(),
                globs: m.globs.clone(),
                cfgs,
            });
        }
    }
    krate
}

/// Cargo's target roots of the package at `manifest`, with the crate name each compiles as:
/// the targets its `Cargo.toml` lists (`[lib]`, `[[bin]]`, `[[example]]`, `[[test]]`,
/// `[[bench]]`), then the ones cargo discovers (`src/lib.rs`, `src/main.rs`, `src/bin/*`,
/// `examples/*`, `tests/*`, `benches/*`).
pub(crate) fn target_roots(manifest: &Path) -> Arc<Vec<(PathBuf, String)>> {
    // Once per process: the targets of a package do not change while the compiler runs.
    type Roots = HashMap<PathBuf, Arc<Vec<(PathBuf, String)>>>;
    static CACHE: OnceLock<Mutex<Roots>> = OnceLock::new();
    if let Some(r) = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner()).get(manifest) {
        return r.clone();
    }
    let roots = Arc::new(find_target_roots(manifest));
    CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner()).insert(manifest.to_path_buf(), roots.clone());
    roots
}

fn find_target_roots(manifest: &Path) -> Vec<(PathBuf, String)> {
    let crate_name = |s: &str| s.replace('-', "_");
    let toml: Option<toml::Table> = std::fs::read_to_string(manifest.join("Cargo.toml")).ok().and_then(|t| t.parse().ok());
    let package = toml
        .as_ref()
        .and_then(|t| t.get("package")?.get("name")?.as_str().map(crate_name))
        .unwrap_or_else(|| crate_name(manifest.file_name().and_then(|s| s.to_str()).unwrap_or_default()));
    let mut roots = Vec::new();
    let declared = |v: &toml::Value, default_name: &str| -> Option<(PathBuf, String)> {
        let name = v.get("name").and_then(|n| n.as_str()).map(crate_name).unwrap_or_else(|| default_name.to_string());
        Some((super::deps::normalize(&manifest.join(v.get("path")?.as_str()?)), name))
    };
    if let Some(t) = &toml {
        roots.extend(t.get("lib").and_then(|l| declared(l, &package)));
        for kind in ["bin", "example", "test", "bench"] {
            for v in t.get(kind).and_then(|b| b.as_array()).into_iter().flatten() {
                roots.extend(declared(v, &package));
            }
        }
    }
    for f in ["src/lib.rs", "src/main.rs"] {
        roots.push((manifest.join(f), package.clone()));
    }
    let name_of = |p: &Path| crate_name(p.file_stem().and_then(|s| s.to_str()).unwrap_or_default());
    for dir in ["src/bin", "examples", "tests", "benches"] {
        let Ok(entries) = std::fs::read_dir(manifest.join(dir)) else { continue };
        let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.extension().is_some_and(|e| e == "rs") {
                roots.push((p.clone(), name_of(&p)));
            } else if p.join("main.rs").is_file() {
                roots.push((p.join("main.rs"), name_of(&p)));
            }
        }
    }
    roots.retain(|(p, _)| p.is_file());
    roots
}

/// The package's library target, if it has one (`[lib]` declared or `src/lib.rs`): its crate
/// name (`[lib] name`, else the package's) and the package's name. The package's other targets
/// (tests, examples, benches, binaries) depend on it without naming it in `Cargo.toml`.
pub(crate) fn lib_name(manifest: &Path) -> Option<(String, String)> {
    let toml: Option<toml::Table> = std::fs::read_to_string(manifest.join("Cargo.toml")).ok().and_then(|t| t.parse().ok());
    let lib = toml.as_ref().and_then(|t| t.get("lib"));
    let package = toml.as_ref().and_then(|t| t.get("package")?.get("name")?.as_str().map(str::to_string))?;
    let name = lib.and_then(|l| l.get("name")?.as_str().map(str::to_string)).unwrap_or_else(|| package.clone());
    (lib.is_some() || manifest.join("src/lib.rs").is_file()).then(|| (name.replace('-', "_"), package))
}

/// The tree of the target cargo is compiling (`crate_name`) that holds `file`, if one does.
/// Only that target's tree is read (two where a package's lib and main share the name); every
/// target's only where the name is unknown or no target of that name holds the file (a target
/// the manifest's layout does not show).
pub(crate) fn load(file: &Path, manifest: &Path, crate_name: Option<&str>) -> Option<Arc<Crate>> {
    let roots = target_roots(manifest);
    let holds = |k: &Arc<Crate>| k.files.iter().any(|(f, _)| f == file);
    let named = roots.iter().filter(|(_, name)| crate_name.is_some_and(|c| c == name));
    named.map(|(root, _)| load_tree(root)).find(holds).or_else(|| roots.iter().map(|(root, _)| load_tree(root)).find(holds))
}
