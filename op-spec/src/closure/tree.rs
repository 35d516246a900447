//! The declaring crate's module tree: which target root holds the declaring file, and every
//! module reached from it through `mod` declarations, each indexed. Indexes are cached by path
//! and content digest across macro invocations (as plain data: spans never outlive the
//! invocation that made them), and so is each assembled tree, by its root and the digests of
//! the files its walk read: the ops of one crate share one tree instead of each copying it.

use super::index::{index_file, index_light, Module};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Most source files read for one crate (a guard against runaway `#[path]` graphs).
const MAX_FILES: usize = 4096;

/// A module of the crate with its absolute module path (from the crate root).
#[derive(Debug)]
pub(crate) struct CrateModule {
    pub path: Vec<String>,
    pub file: PathBuf,
    pub items: Vec<super::index::Item>,
    pub uses: Vec<(String, Vec<String>)>,
    pub globs: Vec<Vec<String>>,
}

/// The crate's modules, the files read, and files that did not parse (as raw text).
#[derive(Debug, Default)]
pub(crate) struct Crate {
    pub modules: Vec<CrateModule>,
    pub by_path: HashMap<Vec<String>, usize>,
    pub files: Vec<PathBuf>,
    pub unparsed: Vec<String>,
    /// The crate-wide name indices resolution builds, once per tree.
    pub names: OnceLock<super::resolve::Names>,
}

impl Crate {
    /// The module declaring `reference` in `file` (an inline module if the function is
    /// declared in one), else the file's own module.
    pub(crate) fn declaring_module(&self, file: &Path, reference: &str) -> usize {
        let in_file: Vec<usize> = (0..self.modules.len()).filter(|&m| self.modules[m].file == file).collect();
        in_file
            .iter()
            .copied()
            .find(|&m| self.modules[m].items.iter().any(|i| i.name == reference && i.kind == super::index::Kind::Plain))
            .or_else(|| in_file.iter().copied().min_by_key(|&m| self.modules[m].path.len()))
            .unwrap_or(0)
    }
}

/// Deepest bracket nesting `syn` is asked to parse.
const MAX_NESTING: usize = 256;

/// The deepest nesting of `(`, `[` and `{` in a source text (an over-estimate: brackets in
/// strings and comments count too, which only sends more files to the raw-text path).
fn nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// A file's index, or its raw text when it does not parse.
type Indexed = Result<Arc<Vec<Module>>, Arc<String>>;
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
    let text = std::fs::read_to_string(path).ok()?;
    let digest = *blake3::hash(text.as_bytes()).as_bytes();
    let mut c = cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some((d, idx)) = c.get(path) {
        if *d == digest {
            return Some((digest, idx.clone()));
        }
    }
    // syn recurses into nested groups: a file nesting deeper than this enters as raw text.
    let idx = match (nesting(&text) <= MAX_NESTING).then(|| index_source(&text)).flatten() {
        Some(modules) => Ok(Arc::new(modules)),
        None => Err(Arc::new(format!("unparsed source: {text}"))),
    };
    c.insert(path.to_path_buf(), (digest, idx.clone()));
    Some((digest, idx))
}

/// A file's modules: the light parse, or the full one where the light parse does not apply.
fn index_source(text: &str) -> Option<Vec<Module>> {
    match super::light::parse_file(text) {
        Ok(items) => Some(index_light(items)),
        Err(_) => syn::parse_file(text).ok().map(|f| index_file(&f)),
    }
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

/// The file of child module `name` (with its `#[path]`), declared in `file`.
fn child_file(file: &Path, root: bool, inline: &[String], name: &str, path_attr: Option<&str>) -> Option<PathBuf> {
    if let Some(p) = path_attr {
        let base = if inline.is_empty() { file.parent().map(Path::to_path_buf).unwrap_or_default() } else { child_dir(file, root, inline) };
        return Some(base.join(p));
    }
    let dir = child_dir(file, root, inline);
    [dir.join(format!("{name}.rs")), dir.join(name).join("mod.rs")].into_iter().find(|p| p.is_file())
}

/// One file the walk of a tree reached: its module path, and its digest and index (`None` if
/// it could not be read).
struct Read {
    file: PathBuf,
    base: Vec<String>,
    read: Option<([u8; 32], Indexed)>,
}

/// Walks the module tree under `root` (the crate root file) through the file cache: every file
/// reached by `mod` declarations, in walk order.
fn walk(root: &Path) -> Vec<Read> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut out = Vec::new();
    let mut queue: Vec<(PathBuf, Vec<String>, bool)> = vec![(root.to_path_buf(), Vec::new(), true)];
    while let Some((file, base, is_root)) = queue.pop() {
        if seen.contains(&file) || seen.len() >= MAX_FILES {
            continue;
        }
        seen.push(file.clone());
        let got = read(&file);
        if let Some((_, Ok(mods))) = &got {
            for m in mods.iter() {
                for (name, attr) in &m.children {
                    if let Some(f) = child_file(&file, is_root, &m.path, name, attr.as_deref()) {
                        let mut p = base.clone();
                        p.extend(m.path.iter().cloned());
                        p.push(name.clone());
                        queue.push((f, p, false));
                    }
                }
            }
        }
        out.push(Read { file, base, read: got });
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
fn load_tree(root: &Path) -> Arc<Crate> {
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
        krate.files.push(r.file.clone());
        match r.read {
            Some((_, Ok(mods))) => {
                for m in mods.iter() {
                    let mut path = r.base.clone();
                    path.extend(m.path.iter().cloned());
                    krate.by_path.insert(path.clone(), krate.modules.len());
                    krate.modules.push(CrateModule {
                        path,
                        file: r.file.clone(),
                        items: m.items.clone(),
                        uses: m.uses.clone(),
                        globs: m.globs.clone(),
                    });
                }
            }
            Some((_, Err(raw))) => krate.unparsed.push((*raw).clone()),
            None => {}
        }
    }
    krate
}

/// Cargo's target roots under a manifest directory, with the crate name each compiles as.
fn target_roots(manifest: &Path) -> Vec<(PathBuf, String)> {
    let mut roots = Vec::new();
    let name_of = |p: &Path| p.file_stem().and_then(|s| s.to_str()).unwrap_or_default().replace('-', "_");
    let package = manifest.file_name().and_then(|s| s.to_str()).unwrap_or_default().replace('-', "_");
    for f in ["src/lib.rs", "src/main.rs"] {
        roots.push((manifest.join(f), package.clone()));
    }
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

/// The crate whose module tree holds `file`: among the manifest's target roots, the one cargo is
/// compiling (`crate_name`) if it holds the file, else the first that does; else `file` itself
/// as the root (a crate outside the manifest's layout, e.g. a trybuild case).
pub(crate) fn load(file: &Path, manifest: Option<&Path>, crate_name: Option<&str>) -> Arc<Crate> {
    let mut roots = manifest.map(target_roots).unwrap_or_default();
    // The root cargo is compiling first: usually the only tree that needs reading.
    roots.sort_by_key(|(_, name)| Some(name.as_str()) != crate_name);
    for (root, _) in &roots {
        let krate = load_tree(root);
        if krate.files.iter().any(|f| f == file) {
            return krate;
        }
    }
    load_tree(file)
}
