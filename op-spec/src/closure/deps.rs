//! The other crates a closure's code can call, and what pins each: a path dependency (a crate
//! of the user's own workspace, whose version does not change when it is edited) by a digest of
//! its sources, a registry or git crate by its exact entry in `Cargo.lock`, in both cases with
//! everything it depends on in turn (the lock file's graph). Read from the declaring package's
//! `Cargo.toml` (renamed and `workspace = true` dependencies included) and the workspace's
//! `Cargo.lock`, each parsed once per process. It decides nothing about which crates a closure
//! reaches (that is `resolve`'s).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// A dependency as the declaring package's code names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Dep {
    /// The package name (`Cargo.toml`'s `package = ".."`, else the key).
    pub package: String,
    /// The package's directory, for a path dependency.
    pub path: Option<PathBuf>,
}

/// A package's dependencies by the crate names its code uses (`-` as `_`).
pub(crate) type Deps = BTreeMap<String, Dep>;

/// A parsed TOML file, cached per process by path (`None`: unreadable or not TOML).
fn toml_file(path: &Path) -> Option<Arc<toml::Table>> {
    type Cache = HashMap<PathBuf, Option<Arc<toml::Table>>>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    cache
        .entry(path.to_path_buf())
        .or_insert_with(|| std::fs::read_to_string(path).ok().and_then(|t| t.parse::<toml::Table>().ok()).map(Arc::new))
        .clone()
}

/// The workspace root above (or at) `manifest_dir`: the nearest directory whose `Cargo.toml`
/// has a `[workspace]` table, else `manifest_dir` itself.
fn workspace_root(manifest_dir: &Path) -> PathBuf {
    manifest_dir
        .ancestors()
        .find(|d| toml_file(&d.join("Cargo.toml")).is_some_and(|t| t.contains_key("workspace")))
        .unwrap_or(manifest_dir)
        .to_path_buf()
}

/// The dependencies of the package at `manifest_dir` (normal, dev and build, target-specific
/// ones too), by crate name.
pub(crate) fn deps_of(manifest_dir: &Path) -> Deps {
    let mut out = Deps::new();
    let Some(manifest) = toml_file(&manifest_dir.join("Cargo.toml")) else { return out };
    let root = workspace_root(manifest_dir);
    let ws = toml_file(&root.join("Cargo.toml"));
    let ws_deps = ws.as_ref().and_then(|w| w.get("workspace")?.get("dependencies")?.as_table().cloned()).unwrap_or_default();
    let mut tables: Vec<&toml::Table> = Vec::new();
    let kinds = ["dependencies", "dev-dependencies", "build-dependencies"];
    tables.extend(kinds.iter().filter_map(|k| manifest.get(*k)?.as_table()));
    if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
        for t in targets.values() {
            tables.extend(kinds.iter().filter_map(|k| t.get(*k)?.as_table()));
        }
    }
    for table in tables {
        for (key, spec) in table {
            let inherited = spec.get("workspace").and_then(|w| w.as_bool()) == Some(true);
            let ws_spec = inherited.then(|| ws_deps.get(key)).flatten();
            let field = |f: &str| spec.get(f).or_else(|| ws_spec.and_then(|w| w.get(f))).and_then(|v| v.as_str().map(str::to_string));
            let path = match (spec.get("path").and_then(|p| p.as_str()), ws_spec.and_then(|w| w.get("path")?.as_str())) {
                (Some(p), _) => Some(manifest_dir.join(p)),
                (None, Some(p)) => Some(root.join(p)),
                _ => None,
            };
            let dep = Dep { package: field("package").unwrap_or_else(|| key.clone()), path: path.map(|p| normalize(&p)) };
            out.insert(key.replace('-', "_"), dep);
        }
    }
    out
}

/// `path` with `.` and `..` components folded (lexically).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// One `[[package]]` of `Cargo.lock`.
#[derive(Clone, Debug)]
struct Locked {
    name: String,
    version: String,
    /// Its source and checksum (absent for path packages).
    pin: String,
    /// Its dependencies as the lock file writes them (`name`, `name version`, ...).
    deps: Vec<String>,
}

/// The lock file of the workspace holding `manifest_dir`, if there is one.
fn lock_of(manifest_dir: &Path) -> Option<Arc<Vec<Locked>>> {
    type Cache = HashMap<PathBuf, Option<Arc<Vec<Locked>>>>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let path = manifest_dir.ancestors().map(|d| d.join("Cargo.lock")).find(|p| p.is_file())?;
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    cache
        .entry(path.clone())
        .or_insert_with(|| {
            let table = toml_file(&path)?;
            let packages = table.get("package")?.as_array()?;
            let text = |v: &toml::Value, k: &str| v.get(k).and_then(|s| s.as_str()).unwrap_or_default().to_string();
            Some(Arc::new(
                packages
                    .iter()
                    .map(|p| Locked {
                        name: text(p, "name"),
                        version: text(p, "version"),
                        pin: format!("{} {}", text(p, "source"), text(p, "checksum")),
                        deps: p
                            .get("dependencies")
                            .and_then(|d| d.as_array())
                            .map(|d| d.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
                            .unwrap_or_default(),
                    })
                    .collect(),
            ))
        })
        .clone()
}

/// The lock entries a lock-file dependency string names (`name`, `name version`,
/// `name version (source)`): every entry of that name and, if given, version.
fn matching<'a>(lock: &'a [Locked], spec: &str) -> impl Iterator<Item = usize> + 'a {
    let mut words = spec.split_whitespace();
    let (name, version) = (words.next().unwrap_or_default().to_string(), words.next().map(str::to_string));
    (0..lock.len()).filter(move |&i| lock[i].name == name && version.as_ref().is_none_or(|v| *v == lock[i].version))
}

/// What pins one dependency named by the closure's code: one line, the crate name, then a
/// digest of every package it depends on transitively (its lock entry and theirs: name,
/// version, source and checksum) and of the sources of every path package among them (read
/// from the path dependencies' own manifests).
pub(crate) fn pin(manifest_dir: &Path, name: &str, dep: &Dep) -> String {
    // Once per process: the lock file and the path dependencies' sources are those the crates
    // the compiler links were built from, before this one.
    type Cache = HashMap<(PathBuf, String), String>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let key = (manifest_dir.to_path_buf(), name.to_string());
    if let Some(line) = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return line.clone();
    }
    let line = pin_uncached(manifest_dir, name, dep);
    CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner()).insert(key, line.clone());
    line
}

fn pin_uncached(manifest_dir: &Path, name: &str, dep: &Dep) -> String {
    let Some(lock) = lock_of(manifest_dir) else {
        return match &dep.path {
            Some(p) => format!("//~ crate {name} = path package {} sources {}", dep.package, sources_digest(p)),
            None => format!("//~ crate {name} = package {} (no Cargo.lock: not pinned)", dep.package),
        };
    };
    // The path packages' directories, found by walking the path dependencies' manifests.
    let mut dirs: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut queue: Vec<(String, PathBuf)> = dep.path.iter().map(|p| (dep.package.clone(), p.clone())).collect();
    while let Some((package, dir)) = queue.pop() {
        if dirs.insert(package, dir.clone()).is_none() {
            queue.extend(deps_of(&dir).into_values().filter_map(|d| Some((d.package, d.path?))));
        }
    }
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut stack: Vec<usize> = matching(&lock, &dep.package).collect();
    while let Some(i) = stack.pop() {
        if seen.insert(i) {
            stack.extend(lock[i].deps.iter().flat_map(|d| matching(&lock, d).collect::<Vec<_>>()));
        }
    }
    if seen.is_empty() {
        return format!("//~ crate {name} = package {} (not in Cargo.lock)", dep.package);
    }
    let mut h = blake3::Hasher::new();
    for &i in &seen {
        let l = &lock[i];
        h.update(format!("{} {} {}\n", l.name, l.version, l.pin).as_bytes());
        if l.pin.trim().is_empty() {
            match dirs.get(&l.name) {
                Some(dir) => h.update(format!("sources {}\n", sources_digest(dir)).as_bytes()),
                None => h.update(b"sources unknown\n"),
            };
        }
    }
    let versions: Vec<&str> = matching(&lock, &dep.package).map(|i| lock[i].version.as_str()).collect();
    format!("//~ crate {name} = {} {} with {} locked packages {}", dep.package, versions.join(" "), seen.len(), h.finalize().to_hex())
}

/// A digest of a path package's sources: every `.rs` file and its `Cargo.toml` under its
/// directory (not `target`, hidden directories or nested packages), by relative path. Computed
/// once per process: the crate the compiler links was built from them before this one.
pub(crate) fn sources_digest(dir: &Path) -> String {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
    if let Some(d) = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner()).get(dir) {
        return d.clone();
    }
    let mut h = blake3::Hasher::new();
    for (rel, bytes) in package_files(dir) {
        h.update(&(rel.len() as u64).to_le_bytes());
        h.update(rel.as_bytes());
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    let digest = h.finalize().to_hex().to_string();
    CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner()).insert(dir.to_path_buf(), digest.clone());
    digest
}

/// Most files read for one package's digest (a guard against a runaway tree).
const MAX_PACKAGE_FILES: usize = 20_000;

/// Every `.rs` file and the `Cargo.toml` of the package at `dir` (not `target`, hidden
/// directories, or directories holding another package), sorted by relative path.
pub(crate) fn package_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if !name.starts_with('.') && name != "target" && !p.join("Cargo.toml").is_file() {
                    dirs.push(p);
                }
            } else if (name.ends_with(".rs") || (name == "Cargo.toml" && d == dir)) && out.len() < MAX_PACKAGE_FILES {
                let rel = p.strip_prefix(dir).unwrap_or(&p).to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}
