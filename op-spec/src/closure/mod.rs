//! The code an op runs beyond its reference's own tokens, folded into the identity: every
//! crate-local item that the reference, its backward rules, its `cpu` kernels (the VJP's too) and its composite
//! builder reach, the values of the `cfg`s that code tests, and a pin of every other crate it
//! names. Where it cannot tell what the code reaches, it covers the whole package instead.
//!
//! How: the macro knows the file and line of its attribute (`Span::local_file`, `Span::line`).
//! The tree of the target cargo is compiling (`CARGO_CRATE_NAME` among the manifest's targets)
//! is read by following `mod` declarations (`#[path]` and `cfg_attr` paths included), each file
//! parsed once per process (`tree`). The declaring module is the inline module enclosing the
//! attribute's line in that file (`layout`), in every place the file is mounted. From the seeds,
//! each path is resolved the way Rust resolves names (`resolve`); what it cannot resolve adds
//! every crate item of that name; method calls add every associated item of that name; a
//! reached type or trait brings every `impl` block whose header names it (operators, `Deref`,
//! `Index`, `Iterator`, `PartialEq`, `From`: what the syntax calls without a name) and every
//! item-level macro call naming it. Items enter as canonical tokens with their attributes (so a
//! `cfg` swap counts) but without doc comments or layout, sorted, so the text is the same on
//! every machine. Then one line per `cfg` atom the reached code (or its modules) tests, with its
//! value as the compiler was configured (`config`), and one line per other crate the code names
//! (`deps`): a path dependency by a digest of its sources, a registry crate by its `Cargo.lock`
//! entry, each with everything it depends on. The reference's own item is left out (its tokens
//! already open the code identity).
//!
//! Undecided (no declaring file or line from the compiler, a file outside the target's tree,
//! an attribute a macro wrote, a declaring file that does not parse, a file of the tree that
//! does not parse): the closure is instead a digest of every source file of the package and of
//! the target's tree, plus a pin of every dependency. Nothing at all to read (neither a file nor
//! a manifest directory) is a [`ClosureError`]. Not covered: `std` and the toolchain; `cfg`s
//! tested inside other crates (pinned as sources, not as configured).

mod config;
mod deps;
mod index;
mod krate;
mod layout;
mod light;
mod resolve;
mod tree;

use crate::reference::RefFn;
pub use config::BuildConfig;
use proc_macro2::TokenStream;
use std::path::{Path, PathBuf};

/// Where the macro runs: the declaring file and line, the crate being compiled and its build
/// configuration.
#[derive(Clone, Debug, Default)]
pub struct Site {
    /// The file the `#[op]` attribute is expanded in, if the compiler says (absolute).
    pub file: Option<PathBuf>,
    /// The attribute's line and column (1-based), if the compiler says.
    pub line: Option<(usize, usize)>,
    /// The declaring crate's manifest directory (`CARGO_MANIFEST_DIR`).
    pub manifest_dir: Option<PathBuf>,
    /// The crate being compiled (`CARGO_CRATE_NAME`).
    pub crate_name: Option<String>,
    /// The compiler's cfg configuration (`None` outside a compiler).
    pub config: Option<BuildConfig>,
}

impl Site {
    /// The site of the current macro expansion: `file` as the compiler gives it (relative to
    /// its working directory, made absolute here), the attribute's line and column, and the
    /// compiler's environment and command line.
    pub fn from_env(file: Option<PathBuf>, line: Option<(usize, usize)>) -> Site {
        let cwd = std::env::current_dir().unwrap_or_default();
        Site {
            file: file.map(|f| deps::normalize(&cwd.join(f))),
            line,
            manifest_dir: std::env::var_os("CARGO_MANIFEST_DIR").map(|d| deps::normalize(&cwd.join(d))),
            crate_name: std::env::var("CARGO_CRATE_NAME").ok(),
            config: BuildConfig::of_process(),
        }
    }
}

/// The closure of an op's code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Closure {
    /// Canonical tokens of every item reached, then the `cfg`, crate and file lines, sorted,
    /// one per line.
    pub text: String,
    /// How many items were reached.
    pub items: usize,
    /// The source files read (absolute paths; never part of the identity).
    pub files: Vec<PathBuf>,
    /// Why the closure could not be told precisely, where it covers the whole package instead.
    pub undecided: Option<String>,
}

/// Nothing to compute a closure from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClosureError {
    /// Neither the declaring file nor the package's manifest directory is known.
    #[error(
        "the identity cannot cover the code `{reference}` calls: the compiler gave neither the declaring file nor \
         `CARGO_MANIFEST_DIR`; build the crate with cargo"
    )]
    NothingToRead {
        /// The reference function.
        reference: String,
    },
}

/// The closure of the code reached from `seeds` (token streams: the reference's signature and
/// block) and `paths` (rule and kernel paths as written in the attribute), resolved in the
/// module that declares the op (found from the attribute's line in `site.file`).
pub fn closure(site: &Site, reference: &str, seeds: &[TokenStream], paths: &[&syn::Path]) -> Result<Closure, ClosureError> {
    let Some(manifest) = site.manifest_dir.as_deref().or_else(|| site.file.as_deref().and_then(Path::parent)) else {
        return Err(ClosureError::NothingToRead { reference: reference.to_string() });
    };
    match decide(site, manifest) {
        Ok((krate, starts)) => Ok(precise(site, manifest, &krate, &starts, reference, seeds, paths)),
        Err((reason, krate)) => Ok(whole_package(site, manifest, krate.as_deref(), reason)),
    }
}

/// The target's tree and the declaring modules, or why they cannot be told (with the tree, if
/// it was found).
type Decided = Result<(std::sync::Arc<tree::Crate>, Vec<usize>), (String, Option<std::sync::Arc<tree::Crate>>)>;

fn decide(site: &Site, manifest: &Path) -> Decided {
    let Some(file) = site.file.as_deref() else { return Err(("the compiler gave no declaring file".into(), None)) };
    let Some(krate) = tree::load(file, manifest, site.crate_name.as_deref()) else {
        return Err(("the declaring file is not in the module tree of the target being compiled".into(), None));
    };
    if let Some(bad) = krate.unparsed.first() {
        return Err((format!("`{}` does not parse", relative(bad, manifest)), Some(krate)));
    }
    let Some((line, column)) = site.line else { return Err(("the compiler gave no line".into(), Some(krate))) };
    let Some(inline) = attribute_module(file, line, column) else {
        return Err(("the attribute is not written at module level in the declaring file (a macro wrote it)".into(), Some(krate)));
    };
    let starts = krate.modules_at(file, &inline);
    if starts.is_empty() {
        return Err(("the declaring module is not in the module tree".into(), Some(krate)));
    }
    Ok((krate, starts))
}

/// The module path of the attribute at `line` and `column` of `file` (see
/// [`layout::attributes`]); each file is lexed once per version of its bytes.
fn attribute_module(file: &Path, line: usize, column: usize) -> Option<Vec<String>> {
    type Cache = std::collections::HashMap<PathBuf, ([u8; 32], std::sync::Arc<layout::Attributes>)>;
    static CACHE: std::sync::OnceLock<std::sync::Mutex<Cache>> = std::sync::OnceLock::new();
    let bytes = std::fs::read(file).ok()?;
    let digest = *blake3::hash(&bytes).as_bytes();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    let attrs = match cache.get(file) {
        Some((d, a)) if *d == digest => a.clone(),
        _ => {
            let a = std::sync::Arc::new(layout::attributes(&String::from_utf8_lossy(&bytes)));
            cache.insert(file.to_path_buf(), (digest, a.clone()));
            a
        }
    };
    attrs.get(&(line, column)).cloned().flatten()
}

/// `path` relative to `base` where it is under it, else as given (`/` separated).
fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

fn precise(
    site: &Site,
    manifest: &Path,
    krate: &tree::Crate,
    starts: &[usize],
    reference: &str,
    seeds: &[TokenStream],
    paths: &[&syn::Path],
) -> Closure {
    let mut refs = Vec::new();
    let mut atoms: Vec<String> = Vec::new();
    for s in seeds {
        index::scan(s.clone(), &mut refs);
        atoms.extend(index::cfg_atoms(s.clone()));
    }
    refs.extend(paths.iter().map(|p| index::Ref::from_path(p)));
    let reached = resolve::reach(krate, starts, refs);
    // The reference itself is not repeated: its own tokens come first in the code identity.
    let is_reference = |m: usize, i: usize| {
        starts.contains(&m) && krate.modules[m].items[i].name == reference && krate.modules[m].items[i].kind == index::Kind::Plain
    };
    let mut lines: Vec<String> = Vec::new();
    for &(m, i) in &reached.items {
        atoms.extend(krate.modules[m].cfgs.iter().cloned());
        atoms.extend(krate.modules[m].items[i].cfgs.iter().cloned());
        if !is_reference(m, i) {
            lines.push(krate.modules[m].items[i].text.clone());
        }
    }
    for &m in starts {
        atoms.extend(krate.modules[m].cfgs.iter().cloned());
    }
    lines.sort_unstable();
    lines.dedup();
    let items = lines.len();
    lines.extend(cfg_lines(site.config.as_ref(), atoms));
    let mut deps = deps::deps_of(manifest);
    // A test, example, bench or binary calls its package's library by name: a path dependency.
    if let Some((lib, package)) = tree::lib_name(manifest).filter(|(lib, _)| site.crate_name.as_deref() != Some(lib.as_str())) {
        deps.entry(lib).or_insert(deps::Dep { package, path: Some(manifest.to_path_buf()) });
    }
    lines.extend(reached.outside.iter().filter_map(|name| deps.get(name).map(|d| deps::pin(manifest, name, d))));
    finish(lines, items, krate.files.iter().map(|(f, _)| f.clone()).collect(), None)
}

/// The closure where it cannot be told precisely: a digest of every source file of the package
/// (and of the target's tree, where it reaches outside the package), a pin of every dependency.
fn whole_package(site: &Site, manifest: &Path, krate: Option<&tree::Crate>, reason: String) -> Closure {
    let mut lines = vec![format!("//~ undecided: {reason}: the whole package is covered")];
    let mut files: Vec<PathBuf> = Vec::new();
    for (rel, bytes) in deps::package_files(manifest) {
        lines.push(format!("//~ file {rel} {}", blake3::hash(&bytes).to_hex()));
        files.push(manifest.join(rel));
    }
    let mut outside: Vec<(PathBuf, [u8; 32])> = krate.map(|k| k.files.clone()).unwrap_or_default();
    if let Some(f) = &site.file {
        outside.push((f.clone(), *blake3::hash(&std::fs::read(f).unwrap_or_default()).as_bytes()));
    }
    for (f, digest) in &outside {
        if !f.starts_with(manifest) {
            lines.push(format!("//~ file {} {}", relative(f, manifest), crate::canon::hex(digest)));
            files.push(f.clone());
        }
    }
    for (name, d) in deps::deps_of(manifest) {
        lines.push(deps::pin(manifest, &name, &d));
    }
    finish(lines, 0, files, Some(reason))
}

/// One line per `cfg` atom tested, with its value as the compiler was configured; where an atom
/// is not a `--cfg` (a built-in cfg, or one not set), what decides it (see
/// [`BuildConfig::deciding`]): `target_arch` enters with the target alone, so a kernel with an
/// x86-only path keeps one identity under `cargo test` and `cargo run`; `test` with `--test`.
fn cfg_lines(config: Option<&BuildConfig>, mut atoms: Vec<String>) -> Vec<String> {
    atoms.sort();
    atoms.dedup();
    let Some(c) = config else {
        return atoms.iter().map(|a| format!("//~ cfg {a} unknown (not compiled by rustc)")).collect();
    };
    let mut out: Vec<String> =
        atoms.iter().map(|a| format!("//~ cfg {a} {}", if c.has(a) { "set by --cfg" } else { "not set by --cfg" })).collect();
    let unset: Vec<&str> = atoms.iter().filter(|a| !c.has(a)).map(String::as_str).collect();
    if let Some(deciding) = c.deciding(&unset) {
        out.push(format!("//~ cfg built-in {}", deciding.join(" ")));
    }
    out
}

fn finish(mut lines: Vec<String>, items: usize, files: Vec<PathBuf>, undecided: Option<String>) -> Closure {
    lines.sort_unstable();
    lines.dedup();
    Closure { items, text: lines.join("\n"), files, undecided }
}

/// The canonical code an op runs: the reference's tokens, then (where the macro runs in a
/// crate) the closure of what the reference, its backward rules, its `cpu` kernels (the VJP's included)
/// and its composite builder reach (see [`closure`]), each on its own line after a `//~ closure` marker.
pub fn code_tokens(func: &RefFn, attr: &crate::model::OpAttr, site: Option<&Site>) -> Result<String, ClosureError> {
    let mut code = crate::canon::body_tokens(func);
    let Some(site) = site else { return Ok(code) };
    let mut paths: Vec<&syn::Path> = attr.cpu.iter().map(|k| &k.path).collect();
    match &attr.backward {
        Some(crate::model::SBackward::Declared { vjp, jvp, vjp_cpu, .. }) => {
            paths.extend(vjp.iter());
            paths.extend(jvp.iter().flat_map(|(_, rules)| rules.iter()));
            paths.extend(vjp_cpu.iter().map(|k| &k.path));
        }
        Some(crate::model::SBackward::Composite { graph: Some(g), .. }) => paths.push(g),
        _ => {}
    }
    let (sig, body) = (&func.sig, &func.body);
    let closure = closure(site, &func.sig.ident.to_string(), &[quote::quote!(#sig #body)], &paths)?;
    if !closure.text.is_empty() {
        code.push_str("\n//~ closure\n");
        code.push_str(&closure.text);
    }
    Ok(code)
}

#[cfg(test)]
mod tests;
