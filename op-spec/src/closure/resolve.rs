//! Name resolution over the indexed crate, and the transitive walk from the seeds. Resolution
//! follows Rust's rules where the sources say enough (items and child modules of a module, its
//! `use` imports and renames, glob imports, `crate::`, `self::`, `super::`); anything it cannot
//! resolve adds every crate item of that last name (over-approximation, never omission).

use super::index::{Kind, Ref};
use super::tree::Crate;
use std::collections::{BTreeSet, HashMap, HashSet};

/// An item: (module index, item index).
type Id = (usize, usize);

/// Crate-wide indices by name, for associated items, macros and the fallback (built once per
/// tree, kept in [`Crate::names`]).
#[derive(Debug)]
pub(crate) struct Names {
    any: HashMap<String, Vec<Id>>,
    assoc: HashMap<String, Vec<Id>>,
    macros: HashMap<String, Vec<Id>>,
}

impl Names {
    fn new(k: &Crate) -> Names {
        let mut n = Names { any: HashMap::new(), assoc: HashMap::new(), macros: HashMap::new() };
        for (m, module) in k.modules.iter().enumerate() {
            for (i, item) in module.items.iter().enumerate() {
                let map = match item.kind {
                    Kind::Macro => &mut n.macros,
                    Kind::Assoc => &mut n.assoc,
                    Kind::Plain => &mut n.any,
                };
                map.entry(item.name.clone()).or_default().push((m, i));
                if item.kind == Kind::Assoc {
                    n.any.entry(item.name.clone()).or_default().push((m, i));
                }
            }
        }
        n
    }
}

/// Every item reachable from `refs` (resolved in module `start`), transitively.
pub(crate) fn reach(k: &Crate, start: usize, refs: Vec<Ref>) -> BTreeSet<Id> {
    let names = k.names.get_or_init(|| Names::new(k));
    let mut seen: BTreeSet<Id> = BTreeSet::new();
    let mut done: HashSet<(usize, Vec<String>, bool, bool)> = HashSet::new();
    let mut queue: Vec<(usize, Ref)> = refs.into_iter().map(|r| (start, r)).collect();
    while let Some((m, r)) = queue.pop() {
        if !done.insert((m, r.segs.clone(), r.assoc, r.mac)) {
            continue;
        }
        let mut found = Vec::new();
        Resolver { k, names }.resolve(m, &r, &mut found);
        for id in found {
            if seen.insert(id) {
                queue.extend(k.modules[id.0].items[id.1].refs.iter().map(|r| (id.0, r.clone())));
            }
        }
    }
    seen
}

struct Resolver<'a> {
    k: &'a Crate,
    names: &'a Names,
}

impl Resolver<'_> {
    fn resolve(&self, m: usize, r: &Ref, out: &mut Vec<Id>) {
        let Some(last) = r.segs.last() else { return };
        if r.mac {
            out.extend(self.names.macros.get(last).into_iter().flatten());
            return;
        }
        if r.assoc {
            out.extend(self.names.assoc.get(last).into_iter().flatten());
            return;
        }
        let before = out.len();
        self.path(m, &r.segs, &mut HashSet::new(), out);
        if out.len() == before {
            // Unresolved (a generic's `T::name`, an import the sources do not show, a local
            // that shares a name): everything of that name.
            out.extend(self.names.any.get(last).into_iter().flatten());
        }
    }

    /// Resolves `segs` as written in module `m` (a path in code or in a `use`).
    fn path(&self, m: usize, segs: &[String], seen: &mut HashSet<(usize, Vec<String>)>, out: &mut Vec<Id>) {
        let Some(first) = segs.first() else { return };
        let here = &self.k.modules[m].path;
        match first.as_str() {
            "crate" => self.within_module(&[], &segs[1..], seen, out),
            "self" => self.within_module(&here.clone(), &segs[1..], seen, out),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let base = &here[..here.len().saturating_sub(ups)];
                self.within_module(base, &segs[ups..], seen, out)
            }
            "Self" if segs.len() > 1 => out.extend(self.names.assoc.get(&segs[segs.len() - 1]).into_iter().flatten()),
            _ => self.in_scope(m, segs, seen, out),
        }
    }

    fn within_module(&self, base: &[String], rest: &[String], seen: &mut HashSet<(usize, Vec<String>)>, out: &mut Vec<Id>) {
        if rest.is_empty() {
            return;
        }
        if let Some(&m) = self.k.by_path.get(base) {
            self.in_scope(m, rest, seen, out);
        }
    }

    /// `segs` looked up in module `m`'s scope: its items, child modules, imports and globs.
    fn in_scope(&self, m: usize, segs: &[String], seen: &mut HashSet<(usize, Vec<String>)>, out: &mut Vec<Id>) {
        if !seen.insert((m, segs.to_vec())) {
            return;
        }
        let module = &self.k.modules[m];
        let name = &segs[0];
        if segs.len() == 1 {
            out.extend(module.items.iter().enumerate().filter(|(_, i)| &i.name == name && i.kind == Kind::Plain).map(|(i, _)| (m, i)));
        } else {
            let mut child = module.path.clone();
            child.push(name.clone());
            if let Some(&c) = self.k.by_path.get(&child) {
                self.in_scope(c, &segs[1..], seen, out);
            }
            // `Type::item`: the type, and the associated items of that name.
            if module.items.iter().any(|i| &i.name == name && i.kind == Kind::Plain) {
                out.extend(module.items.iter().enumerate().filter(|(_, i)| &i.name == name && i.kind == Kind::Plain).map(|(i, _)| (m, i)));
                out.extend(self.names.assoc.get(&segs[segs.len() - 1]).into_iter().flatten());
            }
        }
        for (alias, target) in &module.uses {
            if alias == name {
                let mut full = target.clone();
                full.extend(segs[1..].iter().cloned());
                self.path(m, &full, seen, out);
            }
        }
        for g in &module.globs {
            if let Some(gm) = self.module_of(m, g) {
                self.in_scope(gm, segs, seen, out);
            }
        }
    }

    /// The module a `use` path names (relative to module `m`), if it is one of the crate's.
    fn module_of(&self, m: usize, segs: &[String]) -> Option<usize> {
        let here = &self.k.modules[m].path;
        let (base, rest): (Vec<String>, &[String]) = match segs.first().map(String::as_str) {
            Some("crate") => (Vec::new(), &segs[1..]),
            Some("self") => (here.clone(), &segs[1..]),
            Some("super") => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                (here[..here.len().saturating_sub(ups)].to_vec(), &segs[ups..])
            }
            _ => (here.clone(), segs),
        };
        let mut path = base;
        path.extend(rest.iter().cloned());
        self.k.by_path.get(&path).copied()
    }
}
