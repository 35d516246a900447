//! One source file indexed as plain data (no spans, so it can be cached across macro
//! invocations): its modules (the file's own and inline ones), each with its items' canonical
//! text (attributes included, doc comments not), the paths their tokens mention, the names an
//! `impl` header or an item-level macro call mentions, the `cfg`s they test, its `use` imports
//! and its out-of-line `mod` declarations.

use super::light::{Light, LightItem};
use crate::canon::canonical_code;
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;

/// A path mentioned in code: `a::b::c`, with how it was used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ref {
    /// The segments, e.g. `["crate", "helpers", "scale"]`.
    pub segs: Vec<String>,
    /// Reached as `.name` or `X::name` after a type or generic: an associated item.
    pub assoc: bool,
    /// Followed by `!`: a macro call.
    pub mac: bool,
}

impl Ref {
    /// A path as written in the attribute (a rule or kernel path).
    pub(crate) fn from_path(p: &syn::Path) -> Ref {
        Ref { segs: p.segments.iter().map(|s| s.ident.to_string()).collect(), assoc: false, mac: false }
    }
}

/// What kind of item, for resolving paths to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A free function, const, static, type, trait or foreign item, by its name.
    Plain,
    /// An `impl` block (trait or inherent), reached by its members' names and by the names its
    /// header mentions.
    Impl,
    /// A `macro_rules!`, by its name.
    Macro,
    /// An item-level macro call (it may define items and impls), reached by the names it and
    /// the macro it calls mention.
    MacroCall,
}

/// One indexed item.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Item {
    /// Its name (`""` for an impl; the macro's name for a macro call).
    pub name: String,
    pub kind: Kind,
    /// Canonical tokens, attributes included, doc comments removed.
    pub text: String,
    /// The paths its tokens mention.
    pub refs: Vec<Ref>,
    /// The names of its associated items (a trait's or an impl's).
    pub members: Vec<String>,
    /// The identifiers an impl's header (its generics, trait and type) or a macro call
    /// mentions; for a `macro_rules!`, the names its body may define (after `fn`, `struct`,
    /// `impl`, `for`, ...).
    pub mentions: Vec<String>,
    /// A struct, enum, union, type alias or trait: what impls and the syntax's calls are for.
    pub typelike: bool,
    /// The `cfg` atoms its tokens test (`feature="x"`, `test`), spaces removed.
    pub cfgs: Vec<String>,
}

/// An out-of-line `mod name;` declaration.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Child {
    pub name: String,
    /// Its `#[path]` files: a plain `#[path]` alone, else every `cfg_attr(.., path = ..)` one
    /// and the default file.
    pub paths: Vec<String>,
    /// Whether a plain `#[path]` decides the file.
    pub fixed: bool,
    /// The `cfg` atoms its attributes test.
    pub cfgs: Vec<String>,
}

/// One module of a file: the file's own (`path` empty) or an inline `mod x { .. }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Module {
    /// Path relative to the file's module, e.g. `["inner"]`.
    pub path: Vec<String>,
    pub items: Vec<Item>,
    /// `use` imports: (name in scope, full path as written). A rename is `(alias, path)`.
    pub uses: Vec<(String, Vec<String>)>,
    /// Glob imports, `use a::b::*`.
    pub globs: Vec<Vec<String>>,
    /// Out-of-line child modules.
    pub children: Vec<Child>,
    /// The `cfg` atoms its declaration's and its inner attributes test.
    pub cfgs: Vec<String>,
}

/// Indexes a file from its light parse (see [`super::light`]): the same modules as the full
/// parse gives (`index_file`, which the tests compare).
pub(crate) fn index_light(file: Light) -> Vec<Module> {
    let mut out = Vec::new();
    // (items, module path, cfg atoms): an explicit stack, outermost module first.
    let mut pending: Vec<(Vec<LightItem>, Vec<String>, Vec<String>)> = vec![(file.items, Vec::new(), attr_cfgs(&file.inner))];
    while let Some((items, path, cfgs)) = pending.pop() {
        let at = out.len();
        out.push(Module { path: path.clone(), cfgs, ..Module::default() });
        for item in items {
            match item {
                LightItem::Fn(name, tokens) => out[at].items.push(entry(name.to_string(), Kind::Plain, tokens)),
                LightItem::Impl(tokens, members) => out[at].items.push(impl_entry(tokens, members)),
                LightItem::Mod(name, attrs, Some(inner)) => {
                    let mut p = path.clone();
                    p.push(name.to_string());
                    let mut cfgs = attr_cfgs(&attrs);
                    cfgs.extend(attr_cfgs(&inner.inner));
                    pending.push((inner.items, p, cfgs));
                }
                LightItem::Mod(name, attrs, None) => out[at].children.push(child(&name, &attrs)),
                LightItem::Item(item) => match *item {
                    syn::Item::Use(u) => use_tree(&u.tree, &mut out[at]),
                    other => index_item(&other, &mut out[at].items),
                },
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Indexes a parsed file: its modules, sorted by path (the full parse, to test the light one).
#[cfg(test)]
pub(crate) fn index_file(file: &syn::File) -> Vec<Module> {
    let mut out = Vec::new();
    let mut pending: Vec<(&[syn::Item], Vec<String>, Vec<String>)> = vec![(&file.items, Vec::new(), attr_cfgs(&file.attrs))];
    while let Some((items, path, cfgs)) = pending.pop() {
        let at = out.len();
        out.push(Module { path: path.clone(), cfgs, ..Module::default() });
        for item in items {
            match item {
                syn::Item::Mod(m) => match &m.content {
                    Some((_, inner)) => {
                        let mut p = path.clone();
                        p.push(m.ident.to_string());
                        pending.push((inner, p, attr_cfgs(&m.attrs)));
                    }
                    None => out[at].children.push(child(&m.ident, &m.attrs)),
                },
                syn::Item::Use(u) => use_tree(&u.tree, &mut out[at]),
                other => index_item(other, &mut out[at].items),
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// A `mod name;` declaration with its attributes.
fn child(name: &syn::Ident, attrs: &[syn::Attribute]) -> Child {
    let lit = |e: &syn::Expr| match e {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
        _ => None,
    };
    let plain = attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
        syn::Meta::NameValue(nv) => lit(&nv.value),
        _ => None,
    });
    let mut c = Child { name: name.to_string(), cfgs: attr_cfgs(attrs), ..Child::default() };
    match plain {
        Some(p) => {
            c.paths.push(p);
            c.fixed = true;
        }
        None => {
            // `#[cfg_attr(pred, path = "..")]`: every such file may be the module's.
            for a in attrs.iter().filter(|a| a.path().is_ident("cfg_attr")) {
                let Ok(list) = a.meta.require_list() else { continue };
                let parsed = list.parse_args_with(syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated);
                for m in parsed.into_iter().flatten().skip(1) {
                    if let syn::Meta::NameValue(nv) = m {
                        if nv.path.is_ident("path") {
                            c.paths.extend(lit(&nv.value));
                        }
                    }
                }
            }
        }
    }
    c
}

fn use_tree(t: &syn::UseTree, m: &mut Module) {
    // An explicit stack of (tree, prefix): use trees of any depth never recurse.
    let mut pending: Vec<(&syn::UseTree, Vec<String>)> = vec![(t, Vec::new())];
    while let Some((t, prefix)) = pending.pop() {
        let with = |s: &syn::Ident| {
            let mut p = prefix.clone();
            p.push(s.to_string());
            p
        };
        match t {
            syn::UseTree::Path(p) => pending.push((&p.tree, with(&p.ident))),
            syn::UseTree::Name(n) if n.ident == "self" => {
                if let Some(last) = prefix.last() {
                    m.uses.push((last.clone(), prefix.clone()));
                }
            }
            syn::UseTree::Name(n) => m.uses.push((n.ident.to_string(), with(&n.ident))),
            syn::UseTree::Rename(r) => m.uses.push((r.rename.to_string(), with(&r.ident))),
            syn::UseTree::Glob(_) => m.globs.push(prefix),
            syn::UseTree::Group(g) => pending.extend(g.items.iter().rev().map(|t| (t, prefix.clone()))),
        }
    }
}

/// The canonical text of an item's tokens, the paths they mention and the cfgs they test.
fn entry(name: String, kind: Kind, tokens: TokenStream) -> Item {
    let mut refs = Vec::new();
    scan(tokens.clone(), &mut refs);
    let cfgs = cfg_atoms(tokens.clone());
    let mentions = match kind {
        Kind::MacroCall => idents(tokens.clone()),
        Kind::Macro => defined_names(tokens.clone()),
        _ => Vec::new(),
    };
    Item { name, kind, text: canonical_code(tokens), refs, members: Vec::new(), mentions, cfgs, typelike: false }
}

/// An impl block: its whole tokens, its members' names and the names its header mentions.
fn impl_entry(tokens: TokenStream, members: Vec<String>) -> Item {
    let header: TokenStream = tokens
        .clone()
        .into_iter()
        .take_while(|t| !matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace))
        .filter(|t| !matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket))
        .collect();
    let mut item = entry(String::new(), Kind::Impl, tokens);
    item.members = members;
    item.mentions = idents(header);
    item
}

/// The names of a trait's or an impl's associated items.
fn impl_members(items: &[syn::ImplItem]) -> Vec<String> {
    items
        .iter()
        .filter_map(|i| match i {
            syn::ImplItem::Fn(f) => Some(f.sig.ident.to_string()),
            syn::ImplItem::Const(c) => Some(c.ident.to_string()),
            syn::ImplItem::Type(t) => Some(t.ident.to_string()),
            _ => None,
        })
        .collect()
}

pub(crate) fn index_item(item: &syn::Item, out: &mut Vec<Item>) {
    use syn::Item as I;
    let plain = |name: &syn::Ident| entry(name.to_string(), Kind::Plain, item.to_token_stream());
    let typelike = |name: &syn::Ident| Item { typelike: true, ..plain(name) };
    match item {
        I::Fn(f) => out.push(plain(&f.sig.ident)),
        I::Const(c) => out.push(plain(&c.ident)),
        I::Static(s) => out.push(plain(&s.ident)),
        I::Struct(s) => out.push(typelike(&s.ident)),
        I::Enum(e) => out.push(typelike(&e.ident)),
        I::Union(u) => out.push(typelike(&u.ident)),
        I::Type(t) => out.push(typelike(&t.ident)),
        I::TraitAlias(t) => out.push(typelike(&t.ident)),
        I::Trait(t) => {
            let mut e = typelike(&t.ident);
            e.members = t
                .items
                .iter()
                .filter_map(|i| match i {
                    syn::TraitItem::Fn(f) => Some(f.sig.ident.to_string()),
                    syn::TraitItem::Const(c) => Some(c.ident.to_string()),
                    syn::TraitItem::Type(t) => Some(t.ident.to_string()),
                    _ => None,
                })
                .collect();
            out.push(e);
        }
        I::Impl(i) => out.push(impl_entry(item.to_token_stream(), impl_members(&i.items))),
        I::ForeignMod(f) => {
            for fi in &f.items {
                let name = match fi {
                    syn::ForeignItem::Fn(f) => &f.sig.ident,
                    syn::ForeignItem::Static(s) => &s.ident,
                    syn::ForeignItem::Type(t) => &t.ident,
                    _ => continue,
                };
                out.push(plain(name));
            }
        }
        I::Macro(m) => match (&m.ident, m.mac.path.is_ident("macro_rules")) {
            (Some(name), true) => out.push(entry(name.to_string(), Kind::Macro, item.to_token_stream())),
            _ => {
                let name = m.mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                out.push(entry(name, Kind::MacroCall, item.to_token_stream()));
            }
        },
        _ => {}
    }
}

/// The `cfg` atoms of attributes (`#[cfg(..)]`, `#[cfg_attr(pred, ..)]`).
fn attr_cfgs(attrs: &[syn::Attribute]) -> Vec<String> {
    attrs.iter().flat_map(|a| cfg_atoms(a.to_token_stream())).collect()
}

fn is_punct(t: Option<&TokenTree>, c: char) -> bool {
    matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

/// Every identifier in the tokens, at any depth (iteratively), sorted and deduplicated.
pub(crate) fn idents(ts: TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![ts];
    while let Some(ts) = pending.pop() {
        for t in ts {
            match t {
                TokenTree::Group(g) => pending.push(g.stream()),
                TokenTree::Ident(i) => out.push(i.to_string()),
                _ => {}
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The cfg atoms the tokens test, at any depth: in `cfg(..)`, `cfg!(..)` and the predicate of
/// `cfg_attr(pred, ..)`, each `name` or `name="value"` other than `all`, `any` and `not`.
pub(crate) fn cfg_atoms(ts: TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![ts];
    while let Some(ts) = pending.pop() {
        let toks: Vec<TokenTree> = ts.into_iter().collect();
        for (i, t) in toks.iter().enumerate() {
            match t {
                TokenTree::Group(g) => pending.push(g.stream()),
                TokenTree::Ident(id) if id == "cfg" || id == "cfg_attr" => {
                    let k = if is_punct(toks.get(i + 1), '!') { i + 2 } else { i + 1 };
                    if let Some(TokenTree::Group(g)) = toks.get(k) {
                        let mut pred: Vec<TokenTree> = g.stream().into_iter().collect();
                        if id == "cfg_attr" {
                            let comma = pred.iter().position(|t| is_punct(Some(t), ',')).unwrap_or(pred.len());
                            pred.truncate(comma);
                        }
                        predicate_atoms(pred, &mut out);
                    }
                }
                _ => {}
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn predicate_atoms(pred: Vec<TokenTree>, out: &mut Vec<String>) {
    let mut pending = vec![pred];
    while let Some(toks) = pending.pop() {
        for (i, t) in toks.iter().enumerate() {
            match t {
                TokenTree::Group(g) => pending.push(g.stream().into_iter().collect()),
                TokenTree::Ident(id) if !matches!(id.to_string().as_str(), "all" | "any" | "not") => {
                    match (is_punct(toks.get(i + 1), '='), toks.get(i + 2)) {
                        (true, Some(TokenTree::Literal(l))) => out.push(format!("{id}={l}")),
                        _ => out.push(id.to_string()),
                    }
                }
                _ => {}
            }
        }
    }
}

/// The names a `macro_rules!` body may define or implement for: each identifier after an item
/// keyword (`fn`, `struct`, `enum`, `union`, `type`, `trait`, `const`, `static`, `mod`,
/// `macro_rules !`) or in an impl header (after `impl` and `for`), at any depth.
fn defined_names(ts: TokenStream) -> Vec<String> {
    const KEYWORDS: [&str; 11] = ["fn", "struct", "enum", "union", "type", "trait", "const", "static", "mod", "impl", "for"];
    let mut out = Vec::new();
    let mut pending = vec![ts];
    while let Some(ts) = pending.pop() {
        let mut after_keyword = false;
        for t in ts {
            match t {
                TokenTree::Group(g) => {
                    pending.push(g.stream());
                    after_keyword = false;
                }
                TokenTree::Ident(i) => {
                    let word = i.to_string();
                    if after_keyword && !KEYWORDS.contains(&word.as_str()) {
                        out.push(word.clone());
                    }
                    after_keyword = KEYWORDS.contains(&word.as_str()) || (after_keyword && word == "dyn");
                }
                // `impl<T> Tr<T> for W`: generics and paths keep the header going.
                TokenTree::Punct(p) => after_keyword = after_keyword && matches!(p.as_char(), '<' | '>' | ':' | ',' | '$' | '\'' | '&'),
                TokenTree::Literal(_) => after_keyword = false,
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether `toks[i..]` starts with `::` followed by an identifier.
fn path_sep(toks: &[TokenTree], i: usize) -> bool {
    matches!(toks.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
        && is_punct(toks.get(i + 1), ':')
        && matches!(toks.get(i + 2), Some(TokenTree::Ident(_)))
}

/// Keywords after which an identifier is a name being defined, not a path used.
const DEFINING: [&str; 9] = ["fn", "struct", "enum", "union", "trait", "type", "mod", "static", "let"];

/// Collects every path the tokens mention (into groups too, iteratively: token trees of any
/// depth never recurse). A path after `::` that does not continue an identifier
/// (`<T as Tr>::name`, `Vec::<T>::name`) or after `.` is associated. A name being defined
/// (`fn name`, `type Output`, `let x`) is not a path.
pub(crate) fn scan(ts: TokenStream, out: &mut Vec<Ref>) {
    let mut pending: Vec<TokenStream> = vec![ts];
    while let Some(ts) = pending.pop() {
        let toks: Vec<TokenTree> = ts.into_iter().collect();
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                TokenTree::Group(g) => {
                    pending.push(g.stream());
                    i += 1;
                }
                TokenTree::Ident(_) if matches!(i.checked_sub(1).and_then(|k| toks.get(k)), Some(TokenTree::Ident(k)) if DEFINING.contains(&k.to_string().as_str())) =>
                {
                    i += 1;
                }
                TokenTree::Ident(id) => {
                    let after_sep = i >= 2 && is_punct(toks.get(i - 1), ':') && is_punct(toks.get(i - 2), ':');
                    let assoc = is_punct(i.checked_sub(1).and_then(|k| toks.get(k)), '.') || after_sep;
                    let mut segs = vec![id.to_string()];
                    let mut j = i + 1;
                    while path_sep(&toks, j) {
                        if let Some(TokenTree::Ident(n)) = toks.get(j + 2) {
                            segs.push(n.to_string());
                        }
                        j += 3;
                    }
                    let mac = is_punct(toks.get(j), '!') && !is_punct(toks.get(j + 1), '=');
                    out.push(Ref { segs, assoc, mac });
                    i = j;
                }
                _ => i += 1,
            }
        }
    }
}
