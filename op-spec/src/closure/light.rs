//! A light parse of a source file for the index: items as `syn` parses them, except that the
//! body of every function (free functions, methods of `impl` blocks) stays an unparsed brace
//! group. The index needs a body's tokens, never its expressions, and parsing those was most of
//! the macro's time on a crate of many ops. Functions and impl blocks are kept as the tokens
//! they were written as (attributes included), the ones the full parse re-emits, so the index
//! is the same either way (a test compares them). What this parse does not take (`default` or
//! `const` impls, a visibility on an impl: unstable forms)
//! makes it fail; the file is then not indexed (the closure covers the whole package instead).

use proc_macro2::{Group, TokenStream};
use syn::buffer::Cursor;
use syn::parse::discouraged::Speculative;
use syn::parse::{ParseStream, Parser};
use syn::{Attribute, Ident, Token, Visibility};

/// A file's (or an inline module's) inner attributes and items.
pub(crate) struct Light {
    pub inner: Vec<Attribute>,
    pub items: Vec<LightItem>,
}

/// One item of the light parse.
pub(crate) enum LightItem {
    /// A free function: its name and its tokens (attributes, visibility, signature, body).
    Fn(Ident, TokenStream),
    /// An `impl` block: its tokens and its members' names.
    Impl(TokenStream, Vec<String>),
    /// A module: its name, its outer attributes, and its contents if inline.
    Mod(Ident, Vec<Attribute>, Option<Light>),
    /// Anything else, as `syn` parses it.
    Item(Box<syn::Item>),
}

/// The tokens from `begin` up to `end` (two cursors of one buffer, `end` after `begin`).
fn between(begin: Cursor, end: Cursor) -> TokenStream {
    let mut out = TokenStream::new();
    let mut c = begin;
    while c != end {
        let Some((tt, next)) = c.token_tree() else { break };
        out.extend([tt]);
        c = next;
    }
    out
}

/// The file's items, or an error where the light parse does not apply.
pub(crate) fn parse_file(text: &str) -> syn::Result<Light> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // A shebang line is not Rust (the compiler skips it too).
    let text = match text.starts_with("#!") && !text.starts_with("#![") {
        true => text.find('\n').map_or("", |n| &text[n..]),
        false => text,
    };
    (|input: ParseStream| Ok(Light { inner: input.call(Attribute::parse_inner)?, items: items(input)? })).parse_str(text)
}

fn items(input: ParseStream) -> syn::Result<Vec<LightItem>> {
    let mut out = Vec::new();
    while !input.is_empty() {
        out.push(item(input)?);
    }
    Ok(out)
}

fn item(input: ParseStream) -> syn::Result<LightItem> {
    let begin = input.cursor();
    let ahead = input.fork();
    let attrs = ahead.call(Attribute::parse_outer)?;
    let vis: Visibility = ahead.parse()?;
    if let Some(name) = function(&ahead, None)? {
        input.advance_to(&ahead);
        return Ok(LightItem::Fn(name, between(begin, input.cursor())));
    }
    if ahead.peek(Token![mod]) || ahead.peek(Token![unsafe]) && ahead.peek2(Token![mod]) {
        ahead.parse::<Option<Token![unsafe]>>()?;
        ahead.parse::<Token![mod]>()?;
        let name: Ident = ahead.parse()?;
        if ahead.peek(syn::token::Brace) {
            let content;
            syn::braced!(content in ahead);
            let inner = content.call(Attribute::parse_inner)?;
            let items = items(&content)?;
            input.advance_to(&ahead);
            return Ok(LightItem::Mod(name, attrs, Some(Light { inner, items })));
        }
    }
    let _ = vis;
    let ahead = input.fork();
    ahead.call(Attribute::parse_outer)?;
    if ahead.peek(Token![impl]) || ahead.peek(Token![unsafe]) && ahead.peek2(Token![impl]) {
        let members = impl_block(&ahead)?;
        input.advance_to(&ahead);
        return Ok(LightItem::Impl(between(begin, input.cursor()), members));
    }
    match input.parse::<syn::Item>()? {
        syn::Item::Mod(m) if m.content.is_none() => Ok(LightItem::Mod(m.ident, m.attrs, None)),
        other => Ok(LightItem::Item(Box::new(other))),
    }
}

/// `<signature> { body }` at `input` (consumed only if it is one): the function's name.
fn function(input: ParseStream, _default: Option<&Token![default]>) -> syn::Result<Option<Ident>> {
    let ahead = input.fork();
    let Ok(sig) = ahead.parse::<syn::Signature>() else { return Ok(None) };
    if !ahead.peek(syn::token::Brace) {
        return Ok(None);
    }
    ahead.parse::<Group>()?;
    input.advance_to(&ahead);
    Ok(Some(sig.ident.clone()))
}

/// An `impl` block the way `syn` parses one (its header rules copied from `syn::ItemImpl`),
/// methods' bodies left unparsed: its members' names.
fn impl_block(input: ParseStream) -> syn::Result<Vec<String>> {
    input.parse::<Option<Token![unsafe]>>()?;
    input.parse::<Token![impl]>()?;
    let mut generics: syn::Generics = if generics_over_qpath(input) { input.parse()? } else { syn::Generics::default() };
    if input.peek(Token![const]) || input.peek(Token![?]) && input.peek2(Token![const]) {
        return Err(input.error("a const impl: left to the full parse"));
    }
    let polarity: Option<Token![!]> = if input.peek(Token![!]) && !input.peek2(syn::token::Brace) { Some(input.parse()?) } else { None };
    let first: syn::Type = input.parse()?;
    if input.peek(Token![for]) {
        input.parse::<Token![for]>()?;
        let syn::Type::Path(syn::TypePath { qself: None, .. }) = first else {
            return Err(input.error("expected a trait path: left to the full parse"));
        };
        input.parse::<syn::Type>()?;
    } else if polarity.is_some() {
        return Err(input.error("an inherent impl cannot be negative"));
    }
    generics.where_clause = input.parse()?;
    let content;
    syn::braced!(content in input);
    content.call(Attribute::parse_inner)?;
    let mut members = Vec::new();
    while !content.is_empty() {
        let ahead = content.fork();
        ahead.call(Attribute::parse_outer)?;
        let _: Visibility = ahead.parse()?;
        let default: Option<Token![default]> = if ahead.peek(Token![default]) && !ahead.peek2(Token![!]) { ahead.parse()? } else { None };
        match function(&ahead, default.as_ref())? {
            Some(name) => {
                content.advance_to(&ahead);
                members.push(name.to_string());
            }
            None => match content.parse::<syn::ImplItem>()? {
                syn::ImplItem::Fn(f) => members.push(f.sig.ident.to_string()),
                syn::ImplItem::Const(c) => members.push(c.ident.to_string()),
                syn::ImplItem::Type(t) => members.push(t.ident.to_string()),
                _ => {}
            },
        }
    }
    Ok(members)
}

/// `syn`'s rule for `impl <`: generics rather than a qualified path (copied from
/// `syn::generics::parsing::choose_generics_over_qpath`, which is private).
fn generics_over_qpath(input: ParseStream) -> bool {
    input.peek(Token![<])
        && (input.peek2(Token![>])
            || input.peek2(Token![#])
            || (input.peek2(syn::Lifetime) || input.peek2(Ident))
                && (input.peek3(Token![>])
                    || input.peek3(Token![,])
                    || input.peek3(Token![:]) && !input.peek3(Token![::])
                    || input.peek3(Token![=]))
            || input.peek2(Token![const]))
}
