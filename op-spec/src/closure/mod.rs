//! The code an op runs beyond its reference's own tokens: every crate-local item that the
//! reference, its backward rules, its `cpu` kernel and its composite builder reach, read from
//! the declaring crate's own sources and folded into the identity.
//!
//! How: the macro knows the file it is expanded in (`Span::local_file`). From the crate's
//! target roots (`src/lib.rs`, `src/main.rs`, `src/bin/*`, `examples/*`, `tests/*`,
//! `benches/*`; the one cargo is compiling, by `CARGO_CRATE_NAME`, among those whose module
//! tree holds that file) the module tree is read by following `mod` declarations (`#[path]`
//! included). Every item is indexed per module with the paths its tokens mention; starting
//! from the seeds, each path is resolved the way Rust resolves names (the module's own items
//! and child modules, its `use` imports and renames, its glob imports, `crate::`, `self::`,
//! `super::`), and every item reached is added, transitively. Where a path cannot be resolved
//! that way, every crate item with its last segment's name is added instead (an
//! over-approximation, never an omission); method calls (`.name(`) and associated paths
//! (`Type::name`, `T::name`) add every method or associated item of that name in the crate;
//! `name!` adds every `macro_rules!` of that name. Items enter as canonical tokens without
//! attributes or doc comments (layout and comments do not count), sorted, so the text is the
//! same on every machine. The reference's own item is left out (its tokens already open the
//! code identity).
//!
//! Not covered: code in other crates (dependencies, std, libm), which their versions pin; a
//! file the module tree does not reach (`include!`d sources). A source file that does not
//! parse enters as its raw bytes (an over-approximation).

mod index;
mod light;
mod resolve;
mod tree;

use proc_macro2::TokenStream;
use std::path::PathBuf;

/// Where the macro runs: the declaring file and the crate being compiled.
#[derive(Clone, Debug, Default)]
pub struct Site {
    /// The file the `#[op]` attribute is expanded in, if the compiler says.
    pub file: Option<PathBuf>,
    /// The declaring crate's manifest directory (`CARGO_MANIFEST_DIR`).
    pub manifest_dir: Option<PathBuf>,
    /// The crate being compiled (`CARGO_CRATE_NAME`).
    pub crate_name: Option<String>,
}

impl Site {
    /// The site of the current macro expansion, from the compiler's environment.
    pub fn from_env(file: Option<PathBuf>) -> Site {
        Site {
            file,
            manifest_dir: std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
            crate_name: std::env::var("CARGO_CRATE_NAME").ok(),
        }
    }
}

/// The closure of an op's code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Closure {
    /// Canonical tokens of every item reached, sorted, one per line.
    pub text: String,
    /// How many items were reached.
    pub items: usize,
    /// The source files read (absolute paths; never part of the identity).
    pub files: Vec<PathBuf>,
}

/// The closure of the code reached from `seeds` (token streams: the reference's signature and
/// block) and `paths` (rule and kernel paths as written in the attribute), resolved in the
/// module that declares `reference` (a function name) in `site.file`. Without a readable
/// declaring file the closure is empty (the caller decides what that means).
pub fn closure(site: &Site, reference: &str, seeds: &[TokenStream], paths: &[&syn::Path]) -> Closure {
    let Some(file) = site.file.as_deref() else { return Closure::default() };
    let krate = tree::load(file, site.manifest_dir.as_deref(), site.crate_name.as_deref());
    let module = krate.declaring_module(file, reference);
    let mut refs = Vec::new();
    for s in seeds {
        index::scan(s.clone(), &mut refs);
    }
    for p in paths {
        refs.push(index::Ref::from_path(p));
    }
    let reached = resolve::reach(&krate, module, refs);
    // The reference itself is not repeated: its own tokens come first in the code identity.
    let is_reference = |m: usize, i: usize| {
        let item = &krate.modules[m].items[i];
        m == module && item.name == reference && item.kind == index::Kind::Plain
    };
    let mut texts: Vec<&str> =
        reached.iter().filter(|&&(m, i)| !is_reference(m, i)).map(|&(m, i)| krate.modules[m].items[i].text.as_str()).collect();
    texts.extend(krate.unparsed.iter().map(String::as_str));
    texts.sort_unstable();
    texts.dedup();
    Closure { items: texts.len(), text: texts.join("\n"), files: krate.files.clone() }
}

#[cfg(test)]
mod tests;
