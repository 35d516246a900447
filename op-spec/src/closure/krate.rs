//! The data of the declaring crate's module tree, as `tree` assembles it and `resolve` reads
//! it: its modules, the files read, and the crate-wide name indices (built once per tree).
//! Types and the index build only; no file is read here.

use super::index::Kind;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A module of the crate with its absolute module path (from the crate root).
#[derive(Debug)]
pub(crate) struct CrateModule {
    pub path: Vec<String>,
    /// The file it is written in, and its path inside that file (inline modules).
    pub file: PathBuf,
    pub inline: Vec<String>,
    pub items: Vec<super::index::Item>,
    pub uses: Vec<(String, Vec<String>)>,
    pub globs: Vec<Vec<String>>,
    /// The `cfg` atoms its declaration and its ancestors' test.
    pub cfgs: Vec<String>,
}

/// The crate's modules, the files read, and files that did not parse (by digest).
#[derive(Debug, Default)]
pub(crate) struct Crate {
    pub modules: Vec<CrateModule>,
    /// Modules by path (several where `cfg`s choose between declarations of one module).
    pub by_path: HashMap<Vec<String>, Vec<usize>>,
    /// Every file the walk read, with the digest of its bytes.
    pub files: Vec<(PathBuf, [u8; 32])>,
    /// Files that did not parse: their modules (and any file only they declare) are unknown.
    pub unparsed: Vec<PathBuf>,
    /// The crate-wide name indices resolution builds, once per tree.
    pub names: OnceLock<Names>,
}

impl Crate {
    /// The modules written in `file` at inline path `inline` (one per place the file is
    /// mounted in the tree).
    pub(crate) fn modules_at(&self, file: &Path, inline: &[String]) -> Vec<usize> {
        (0..self.modules.len()).filter(|&m| self.modules[m].file == file && self.modules[m].inline == inline).collect()
    }
}

/// An item: (module index, item index).
pub(crate) type Id = (usize, usize);

/// Crate-wide indices by name (built once per tree, kept in [`Crate::names`]).
#[derive(Debug, Default)]
pub(crate) struct Names {
    /// Plain items by name, and traits and impls by their members' names (the fallback).
    pub(super) any: HashMap<String, Vec<Id>>,
    /// Traits and impls by their members' names.
    pub(super) assoc: HashMap<String, Vec<Id>>,
    /// `macro_rules!` by name.
    pub(super) macros: HashMap<String, Vec<Id>>,
    /// Impls by the names their headers mention.
    pub(super) impls: HashMap<String, Vec<Id>>,
    /// Item-level macro calls by the names they, and the macros they call, mention.
    pub(super) calls: HashMap<String, Vec<Id>>,
}

impl Names {
    pub(super) fn new(k: &Crate) -> Names {
        let mut n = Names::default();
        let push = |map: &mut HashMap<String, Vec<Id>>, name: &str, id: Id| map.entry(name.to_string()).or_default().push(id);
        for (m, module) in k.modules.iter().enumerate() {
            for (i, item) in module.items.iter().enumerate() {
                let id = (m, i);
                match item.kind {
                    Kind::Macro => push(&mut n.macros, &item.name, id),
                    Kind::Plain => push(&mut n.any, &item.name, id),
                    Kind::Impl => item.mentions.iter().for_each(|x| push(&mut n.impls, x, id)),
                    Kind::MacroCall => item.mentions.iter().for_each(|x| push(&mut n.calls, x, id)),
                }
                for member in &item.members {
                    push(&mut n.assoc, member, id);
                    push(&mut n.any, member, id);
                }
            }
        }
        // A macro call also mentions what the macro it calls may define.
        let mut extra: Vec<(String, Id)> = Vec::new();
        for (m, module) in k.modules.iter().enumerate() {
            for (i, item) in module.items.iter().enumerate().filter(|(_, it)| it.kind == Kind::MacroCall) {
                for &(dm, di) in n.macros.get(&item.name).into_iter().flatten() {
                    extra.extend(k.modules[dm].items[di].mentions.iter().map(|s| (s.clone(), (m, i))));
                }
            }
        }
        for (name, id) in extra {
            push(&mut n.calls, &name, id);
        }
        n
    }
}
