//! One source file indexed as plain data (no spans, so it can be cached across macro
//! invocations): its modules (the file's own and inline ones), each with its items' canonical
//! text and the paths their tokens mention, its `use` imports and its out-of-line `mod`
//! declarations.

use super::light::{Light, Member};
use crate::canon::canonical_tokens;
use proc_macro2::{Spacing, TokenStream, TokenTree};
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

/// What kind of item, for resolving associated and macro paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A free function, const, static, type or trait.
    Plain,
    /// A method or associated const (of an `impl` or a trait).
    Assoc,
    /// A `macro_rules!`.
    Macro,
}

/// One indexed item.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Item {
    pub name: String,
    pub kind: Kind,
    /// Canonical tokens, attributes and doc comments removed.
    pub text: String,
    /// The paths its tokens mention.
    pub refs: Vec<Ref>,
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
    /// Out-of-line child modules: (name, `#[path]` if any).
    pub children: Vec<(String, Option<String>)>,
}

/// Indexes a file from its light parse (see [`super::light`]): the same modules as
/// [`index_file`] on the full parse.
pub(crate) fn index_light(items: Vec<Light>) -> Vec<Module> {
    let mut out = Vec::new();
    light_items(items, Vec::new(), &mut out);
    out
}

fn light_items(items: Vec<Light>, path: Vec<String>, out: &mut Vec<Module>) {
    let at = out.len();
    out.push(Module { path: path.clone(), ..Module::default() });
    for item in items {
        match item {
            Light::Fn(name, tokens) => out[at].items.push(entry(name.to_string(), Kind::Plain, tokens)),
            Light::Impl(header, members) => {
                for m in members {
                    let (name, body) = match m {
                        Member::Method(name, tokens) => (name, tokens),
                        Member::Other(other) => match *other {
                            syn::ImplItem::Const(c) => (c.ident.clone(), bare(&c, |c| c.attrs.clear())),
                            _ => continue,
                        },
                    };
                    out[at].items.push(entry(name.to_string(), Kind::Assoc, quote::quote!(#header { #body })));
                }
            }
            Light::Mod(name, _, Some(inner)) => {
                let mut p = path.clone();
                p.push(name.to_string());
                light_items(inner, p, out);
            }
            Light::Mod(name, attrs, None) => out[at].children.push((name.to_string(), path_attr(&attrs))),
            Light::Item(item) => match *item {
                syn::Item::Use(u) => use_tree(&u.tree, Vec::new(), &mut out[at]),
                other => index_item(&other, &mut out[at].items),
            },
        }
    }
}

/// Indexes a parsed file: its modules, outermost first.
pub(crate) fn index_file(file: &syn::File) -> Vec<Module> {
    let mut out = Vec::new();
    index_items(&file.items, Vec::new(), &mut out);
    out
}

fn index_items(items: &[syn::Item], path: Vec<String>, out: &mut Vec<Module>) {
    let at = out.len();
    out.push(Module { path: path.clone(), ..Module::default() });
    for item in items {
        match item {
            syn::Item::Mod(m) => match &m.content {
                Some((_, inner)) => {
                    let mut p = path.clone();
                    p.push(m.ident.to_string());
                    index_items(inner, p, out);
                }
                None => out[at].children.push((m.ident.to_string(), path_attr(&m.attrs))),
            },
            syn::Item::Use(u) => use_tree(&u.tree, Vec::new(), &mut out[at]),
            other => index_item(other, &mut out[at].items),
        }
    }
}

/// The `#[path = "..."]` of a module declaration.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn use_tree(t: &syn::UseTree, prefix: Vec<String>, m: &mut Module) {
    let with = |s: &syn::Ident| {
        let mut p = prefix.clone();
        p.push(s.to_string());
        p
    };
    match t {
        syn::UseTree::Path(p) => use_tree(&p.tree, with(&p.ident), m),
        syn::UseTree::Name(n) if n.ident == "self" => {
            if let Some(last) = prefix.last() {
                m.uses.push((last.clone(), prefix.clone()));
            }
        }
        syn::UseTree::Name(n) => m.uses.push((n.ident.to_string(), with(&n.ident))),
        syn::UseTree::Rename(r) => m.uses.push((r.rename.to_string(), with(&r.ident))),
        syn::UseTree::Glob(_) => m.globs.push(prefix),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_tree(t, prefix.clone(), m)),
    }
}

/// The canonical text of tokens and the paths they mention.
fn entry(name: String, kind: Kind, tokens: TokenStream) -> Item {
    let mut refs = Vec::new();
    scan(tokens.clone(), &mut refs);
    Item { name, kind, text: canonical_tokens(tokens), refs }
}

/// `item` without its outer attributes (doc comments included), as tokens.
fn bare<T: Clone + ToTokens>(item: &T, strip: impl FnOnce(&mut T)) -> TokenStream {
    let mut i = item.clone();
    strip(&mut i);
    i.into_token_stream()
}

fn index_item(item: &syn::Item, out: &mut Vec<Item>) {
    use syn::Item as I;
    let plain = |name: &syn::Ident, tokens: TokenStream| entry(name.to_string(), Kind::Plain, tokens);
    match item {
        I::Fn(f) => out.push(plain(&f.sig.ident, bare(f, |f| f.attrs.clear()))),
        I::Const(c) => out.push(plain(&c.ident, bare(c, |c| c.attrs.clear()))),
        I::Static(s) => out.push(plain(&s.ident, bare(s, |s| s.attrs.clear()))),
        I::Struct(s) => out.push(plain(&s.ident, bare(s, |s| s.attrs.clear()))),
        I::Enum(e) => out.push(plain(&e.ident, bare(e, |e| e.attrs.clear()))),
        I::Union(u) => out.push(plain(&u.ident, bare(u, |u| u.attrs.clear()))),
        I::Type(t) => out.push(plain(&t.ident, bare(t, |t| t.attrs.clear()))),
        I::Trait(t) => index_trait(t, out),
        I::Impl(i) => index_impl(i, out),
        I::Macro(m) => {
            if let (Some(name), true) = (&m.ident, m.mac.path.is_ident("macro_rules")) {
                out.push(entry(name.to_string(), Kind::Macro, bare(m, |m| m.attrs.clear())));
            }
        }
        _ => {}
    }
}

/// A trait: the whole trait by its name, and each default method by the method's name.
fn index_trait(t: &syn::ItemTrait, out: &mut Vec<Item>) {
    let whole = bare(t, |t| {
        t.attrs.clear();
        for i in &mut t.items {
            if let syn::TraitItem::Fn(f) = i {
                f.attrs.clear();
            }
        }
    });
    out.push(entry(t.ident.to_string(), Kind::Plain, whole));
    for i in &t.items {
        if let syn::TraitItem::Fn(f) = i {
            if f.default.is_some() {
                let (tr, sig, body) = (&t.ident, &f.sig, &f.default);
                out.push(entry(f.sig.ident.to_string(), Kind::Assoc, quote::quote!(trait #tr { #sig #body })));
            }
        }
    }
}

/// An impl block: each method and associated const by its name, with the impl's header.
fn index_impl(i: &syn::ItemImpl, out: &mut Vec<Item>) {
    let (generics, self_ty) = (&i.generics, &i.self_ty);
    let header = match &i.trait_ {
        Some((bang, path, _)) => quote::quote!(impl #generics #bang #path for #self_ty),
        None => quote::quote!(impl #generics #self_ty),
    };
    for item in &i.items {
        let (name, body) = match item {
            syn::ImplItem::Fn(f) => (&f.sig.ident, bare(f, |f| f.attrs.clear())),
            syn::ImplItem::Const(c) => (&c.ident, bare(c, |c| c.attrs.clear())),
            _ => continue,
        };
        out.push(entry(name.to_string(), Kind::Assoc, quote::quote!(#header { #body })));
    }
}

fn is_punct(t: Option<&TokenTree>, c: char) -> bool {
    matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == c)
}

/// Whether `toks[i..]` starts with `::` followed by an identifier.
fn path_sep(toks: &[TokenTree], i: usize) -> bool {
    matches!(toks.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
        && is_punct(toks.get(i + 1), ':')
        && matches!(toks.get(i + 2), Some(TokenTree::Ident(_)))
}

/// Collects every path the tokens mention (into groups too, iteratively: token trees of any
/// depth never recurse). A path after `::` that does not continue an identifier
/// (`<T as Tr>::name`, `Vec::<T>::name`) or after `.` is associated.
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
