//! A light parse of a source file for the index: items as `syn` parses them, except that the
//! body of every function (free functions, methods of `impl` blocks) stays an unparsed brace
//! group. The index needs a body's tokens, never its expressions, and parsing those was most of
//! the macro's time on a crate of many ops. The tokens are the ones the full parse re-emits, so
//! the index is the same either way (a test compares them). Anything this parse does not take
//! (a shebang, an inner attribute at the top of a body, `default`/`const` impls, a visibility
//! on an impl) makes it fail, and the caller parses the file with `syn::parse_file` instead.

use proc_macro2::{Group, TokenStream, TokenTree};
use quote::quote;
use syn::parse::discouraged::Speculative;
use syn::parse::{ParseStream, Parser};
use syn::{Attribute, Ident, Token, Visibility};

/// One item of the light parse.
pub(crate) enum Light {
    /// A free function: its name and tokens without outer attributes (visibility, signature,
    /// body).
    Fn(Ident, TokenStream),
    /// An `impl` block: its header (`impl<..> Trait for Type`) and its items in order.
    Impl(TokenStream, Vec<Member>),
    /// A module: its name, its `#[path]`-carrying attributes, and its items if inline.
    Mod(Ident, Vec<Attribute>, Option<Vec<Light>>),
    /// Anything else, as `syn` parses it.
    Item(Box<syn::Item>),
}

/// One item of an `impl` block.
pub(crate) enum Member {
    /// A method: its name and tokens without outer attributes.
    Method(Ident, TokenStream),
    /// Anything else (an associated const, a type, a macro), as `syn` parses it.
    Other(Box<syn::ImplItem>),
}

/// The file's items, or an error where the light parse does not apply.
pub(crate) fn parse_file(text: &str) -> syn::Result<Vec<Light>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.starts_with("#!") && !text.starts_with("#![") {
        return Err(syn::Error::new(proc_macro2::Span::call_site(), "a shebang: left to the full parse"));
    }
    (|input: ParseStream| {
        input.call(Attribute::parse_inner)?;
        items(input)
    })
    .parse_str(text)
}

fn items(input: ParseStream) -> syn::Result<Vec<Light>> {
    let mut out = Vec::new();
    while !input.is_empty() {
        out.push(item(input)?);
    }
    Ok(out)
}

fn item(input: ParseStream) -> syn::Result<Light> {
    let ahead = input.fork();
    let attrs = ahead.call(Attribute::parse_outer)?;
    let vis: Visibility = ahead.parse()?;
    if let Some((name, tokens)) = function(&ahead, &vis, None)? {
        input.advance_to(&ahead);
        return Ok(Light::Fn(name, tokens));
    }
    if ahead.peek(Token![mod]) || ahead.peek(Token![unsafe]) && ahead.peek2(Token![mod]) {
        ahead.parse::<Option<Token![unsafe]>>()?;
        ahead.parse::<Token![mod]>()?;
        let name: Ident = ahead.parse()?;
        if ahead.peek(syn::token::Brace) {
            let content;
            syn::braced!(content in ahead);
            content.call(Attribute::parse_inner)?;
            let inner = items(&content)?;
            input.advance_to(&ahead);
            return Ok(Light::Mod(name, attrs, Some(inner)));
        }
    }
    let ahead = input.fork();
    ahead.call(Attribute::parse_outer)?;
    if ahead.peek(Token![impl]) || ahead.peek(Token![unsafe]) && ahead.peek2(Token![impl]) {
        let parsed = impl_block(&ahead)?;
        input.advance_to(&ahead);
        return Ok(parsed);
    }
    match input.parse::<syn::Item>()? {
        syn::Item::Mod(m) if m.content.is_none() => Ok(Light::Mod(m.ident, m.attrs, None)),
        other => Ok(Light::Item(Box::new(other))),
    }
}

/// `[vis] [default] <signature> { body }` at `input` (consumed only if it is one), as the name
/// and the tokens the full parse re-emits once outer attributes are cleared.
fn function(input: ParseStream, vis: &Visibility, default: Option<&Token![default]>) -> syn::Result<Option<(Ident, TokenStream)>> {
    let ahead = input.fork();
    let Ok(sig) = ahead.parse::<syn::Signature>() else { return Ok(None) };
    if !ahead.peek(syn::token::Brace) {
        return Ok(None);
    }
    let body: Group = ahead.parse()?;
    if starts_with_inner_attribute(&body) {
        // The full parse moves it into the attributes, which the index clears.
        return Err(syn::Error::new(body.span(), "an inner attribute in a body: left to the full parse"));
    }
    input.advance_to(&ahead);
    Ok(Some((sig.ident.clone(), quote!(#vis #default #sig #body))))
}

fn starts_with_inner_attribute(body: &Group) -> bool {
    let mut toks = body.stream().into_iter();
    matches!((toks.next(), toks.next()), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == '#' && b.as_char() == '!')
}

/// An `impl` block the way `syn` parses one (its header rules copied from `syn::ItemImpl`),
/// methods' bodies left unparsed.
fn impl_block(input: ParseStream) -> syn::Result<Light> {
    input.parse::<Option<Token![unsafe]>>()?;
    input.parse::<Token![impl]>()?;
    let mut generics: syn::Generics = if generics_over_qpath(input) { input.parse()? } else { syn::Generics::default() };
    if input.peek(Token![const]) || input.peek(Token![?]) && input.peek2(Token![const]) {
        return Err(input.error("a const impl: left to the full parse"));
    }
    let polarity: Option<Token![!]> = if input.peek(Token![!]) && !input.peek2(syn::token::Brace) { Some(input.parse()?) } else { None };
    let first: syn::Type = input.parse()?;
    let header = if input.peek(Token![for]) {
        input.parse::<Token![for]>()?;
        let syn::Type::Path(syn::TypePath { qself: None, path }) = first else {
            return Err(input.error("expected a trait path: left to the full parse"));
        };
        let self_ty: syn::Type = input.parse()?;
        quote!(impl #generics #polarity #path for #self_ty)
    } else if polarity.is_some() {
        return Err(input.error("an inherent impl cannot be negative"));
    } else {
        quote!(impl #generics #first)
    };
    generics.where_clause = input.parse()?;
    let content;
    syn::braced!(content in input);
    content.call(Attribute::parse_inner)?;
    let mut members = Vec::new();
    while !content.is_empty() {
        let ahead = content.fork();
        ahead.call(Attribute::parse_outer)?;
        let vis: Visibility = ahead.parse()?;
        let default: Option<Token![default]> = if ahead.peek(Token![default]) && !ahead.peek2(Token![!]) { ahead.parse()? } else { None };
        match function(&ahead, &vis, default.as_ref())? {
            Some((name, tokens)) => {
                content.advance_to(&ahead);
                members.push(Member::Method(name, tokens));
            }
            None => members.push(Member::Other(Box::new(content.parse()?))),
        }
    }
    Ok(Light::Impl(header, members))
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
