//! Name resolution over the indexed crate, and the transitive walk from the seeds. Resolution
//! follows Rust's rules where the sources say enough (items and child modules of a module, its
//! `use` imports and renames, glob imports, `crate::`, `self::`, `super::`); anything it cannot
//! resolve adds every crate item of that last name and every item-level macro call that
//! mentions it (over-approximation, never omission). What the syntax calls without naming it
//! (an operator, `*x`, `x[i]`, `for`, `==`, `.into()`) is covered by the types: every `impl`
//! block whose header mentions a reached item (a type or trait), and every item-level macro
//! call that does, enters with it. The first segment of every path that leaves the crate is
//! recorded, so the caller can pin the crates the code names.

use super::index::{Kind, Ref};
use super::krate::{Crate, Id, Names};
use std::collections::{BTreeSet, HashSet};

/// What the walk reached: items, and the first segments of paths that left the crate.
#[derive(Debug, Default)]
pub(crate) struct Reach {
    pub items: BTreeSet<Id>,
    pub outside: BTreeSet<String>,
}

/// Every item reachable from `refs` (resolved in each of the modules `starts`), transitively.
pub(crate) fn reach(k: &Crate, starts: &[usize], refs: Vec<super::index::Ref>) -> Reach {
    let names = k.names.get_or_init(|| Names::new(k));
    let mut out = Reach::default();
    let mut done: HashSet<(usize, Vec<String>, bool, bool)> = HashSet::new();
    let mut queue: Vec<(usize, Ref)> = starts.iter().flat_map(|&s| refs.iter().map(move |r| (s, r.clone()))).collect();
    let resolver = Resolver { k, names };
    while let Some((m, r)) = queue.pop() {
        if !done.insert((m, r.segs.clone(), r.assoc, r.mac)) {
            continue;
        }
        let mut found = Vec::new();
        resolver.resolve(m, &r, &mut found, &mut out.outside);
        while let Some(id) = found.pop() {
            if !out.items.insert(id) {
                continue;
            }
            let item = &k.modules[id.0].items[id.1];
            queue.extend(item.refs.iter().map(|r| (id.0, r.clone())));
            // What the syntax calls on a reached type or trait: the impls naming it, and the
            // macro calls that may write one.
            if item.typelike {
                found.extend(names.impls.get(&item.name).into_iter().flatten());
                found.extend(names.calls.get(&item.name).into_iter().flatten());
            }
        }
    }
    out
}

struct Resolver<'a> {
    k: &'a Crate,
    names: &'a Names,
}

/// Modules and paths already looked up in one resolution (cycles of imports end).
type Seen = HashSet<(usize, Vec<String>)>;

impl Resolver<'_> {
    fn resolve(&self, m: usize, r: &Ref, out: &mut Vec<Id>, outside: &mut BTreeSet<String>) {
        let Some(last) = r.segs.last() else { return };
        if r.mac {
            out.extend(self.names.macros.get(last).into_iter().flatten());
            if r.segs.len() > 1 {
                outside.insert(r.segs[0].clone());
            }
            return;
        }
        if r.assoc {
            out.extend(self.names.assoc.get(last).into_iter().flatten());
            return;
        }
        let before = out.len();
        self.path(m, &r.segs, &mut HashSet::new(), out, outside);
        if out.len() == before {
            // Unresolved (a generic's `T::name`, an import the sources do not show, a local
            // that shares a name, an item a macro call defines): everything of that name.
            out.extend(self.names.any.get(last).into_iter().flatten());
            out.extend(self.names.calls.get(last).into_iter().flatten());
        }
    }

    /// Resolves `segs` as written in module `m` (a path in code or in a `use`).
    fn path(&self, m: usize, segs: &[String], seen: &mut Seen, out: &mut Vec<Id>, outside: &mut BTreeSet<String>) {
        let Some(first) = segs.first() else { return };
        let here = self.k.modules[m].path.clone();
        match first.as_str() {
            "crate" => self.within_module(&[], &segs[1..], seen, out, outside),
            "self" => self.within_module(&here, &segs[1..], seen, out, outside),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let base = &here[..here.len().saturating_sub(ups)];
                self.within_module(base, &segs[ups..], seen, out, outside)
            }
            "Self" if segs.len() > 1 => out.extend(self.names.assoc.get(&segs[segs.len() - 1]).into_iter().flatten()),
            _ => {
                if segs.len() > 1 {
                    // It may name another crate (`dep::f`): recorded for the caller to pin.
                    outside.insert(first.clone());
                }
                self.in_scope(m, segs, seen, out, outside)
            }
        }
    }

    fn within_module(&self, base: &[String], rest: &[String], seen: &mut Seen, out: &mut Vec<Id>, outside: &mut BTreeSet<String>) {
        if rest.is_empty() {
            return;
        }
        for &m in self.k.by_path.get(base).into_iter().flatten() {
            self.in_scope(m, rest, seen, out, outside);
        }
    }

    /// `segs` looked up in module `m`'s scope: its items, child modules, imports and globs.
    fn in_scope(&self, m: usize, segs: &[String], seen: &mut Seen, out: &mut Vec<Id>, outside: &mut BTreeSet<String>) {
        if !seen.insert((m, segs.to_vec())) {
            return;
        }
        let module = &self.k.modules[m];
        let name = &segs[0];
        let named = |i: &&super::index::Item| &i.name == name && i.kind == Kind::Plain;
        if segs.len() == 1 {
            out.extend(module.items.iter().enumerate().filter(|(_, i)| named(i)).map(|(i, _)| (m, i)));
        } else {
            let mut child = module.path.clone();
            child.push(name.clone());
            for &c in self.k.by_path.get(&child).into_iter().flatten() {
                self.in_scope(c, &segs[1..], seen, out, outside);
            }
            // `Type::item`: the type, and the associated items of that name.
            if module.items.iter().any(|i| named(&i)) {
                out.extend(module.items.iter().enumerate().filter(|(_, i)| named(i)).map(|(i, _)| (m, i)));
                out.extend(self.names.assoc.get(&segs[segs.len() - 1]).into_iter().flatten());
            }
        }
        for (alias, target) in &module.uses {
            if alias == name {
                let mut full = target.clone();
                full.extend(segs[1..].iter().cloned());
                self.path(m, &full, seen, out, outside);
            }
        }
        for g in &module.globs {
            let found = self.modules_of(m, g);
            if found.is_empty() {
                // A glob of another crate's module (`use dep::*`): the name may come from it.
                outside.extend(g.first().cloned());
            }
            for gm in found {
                self.in_scope(gm, segs, seen, out, outside);
            }
        }
    }

    /// The modules a `use` path names (relative to module `m`), if they are the crate's.
    fn modules_of(&self, m: usize, segs: &[String]) -> Vec<usize> {
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
        self.k.by_path.get(&path).cloned().unwrap_or_default()
    }
}
