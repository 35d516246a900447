//! Dtype variables: the list after `signature` (`signature<T: f16 | f32, U: u32>(...)`), the
//! `dtypes(T: f32)` selections of kernels and of `cpu(path, dtypes(...))`, and element types
//! that name a variable (`x: T[n]`). Syntax only: which sets and selections are legal is
//! `check::dtypes`'s.

use super::{parse_kv, split_commas, sr};
use crate::contract::{refused_dtype, DType};
use crate::ctxt::Ctxt;
use crate::model::*;
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::{Ident, Token};

/// `<T: f16 | f32, U: u32>` after the `signature` keyword. Each variable parses on its own:
/// a malformed one is reported and dropped, the others are kept.
pub(super) fn parse_vars(cx: &Ctxt, input: ParseStream) -> syn::Result<Vec<SDTypeVar>> {
    let open = input.parse::<Token![<]>()?;
    let mut inner = TokenStream::new();
    loop {
        if input.is_empty() {
            return Err(syn::Error::new(open.span, "unclosed dtype variable list: write `signature<T: f32 | f64>(args) -> outputs`"));
        }
        if input.peek(Token![>]) {
            input.parse::<Token![>]>()?;
            break;
        }
        let tt: TokenTree = input.parse()?;
        inner.extend([tt]);
    }
    let mut vars = Vec::new();
    for chunk in split_commas(inner) {
        match Parser::parse2(parse_var, chunk) {
            Ok(v) => vars.push(v),
            Err(e) => cx.error(e),
        }
    }
    Ok(vars)
}

/// `T: f16 | f32` (the members may be empty: `check` reports an empty set on the name).
fn parse_var(input: ParseStream) -> syn::Result<SDTypeVar> {
    let name: Ident = input.call(syn::ext::IdentExt::parse_any)?;
    if !input.peek(Token![:]) {
        return Err(syn::Error::new(name.span(), format!("expected `{name}: f32 | f64`: a dtype variable lists its members after `:`")));
    }
    input.parse::<Token![:]>()?;
    let mut members = Vec::new();
    let mut last = name.span();
    while !input.is_empty() {
        if !members.is_empty() {
            input.parse::<Token![|]>().map_err(|e| syn::Error::new(e.span(), "separate the members of a dtype variable with `|`"))?;
        }
        let d = parse_dtype(input)?;
        last = d.span.last;
        members.push(d);
    }
    Ok(SDTypeVar { span: SpanRange { first: name.span(), last }, name, members })
}

/// `dtypes(T: f32 | f16, U: u32)`: the members a kernel serves.
pub(super) fn parse_selection(input: ParseStream) -> syn::Result<(SpanRange, Vec<SDTypeVar>)> {
    let kw: Ident = input.parse()?;
    if !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(kw.span(), "expected `dtypes(T: f32 | f16)`: the members of each dtype variable this kernel serves"));
    }
    let g: proc_macro2::Group = input.parse()?;
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after `dtypes(...)`"));
    }
    let mut sel = Vec::new();
    for chunk in split_commas(g.stream()) {
        sel.push(Parser::parse2(parse_var, chunk)?);
    }
    if sel.is_empty() {
        return Err(syn::Error::new(
            g.span(),
            "`dtypes()` selects nothing; list members, e.g. `dtypes(T: f32)`, or remove it to serve every member",
        ));
    }
    Ok((SpanRange { first: kw.span(), last: g.span_close() }, sel))
}

/// `cpu = path` (every member) or `cpu(path, dtypes(T: f32))`.
pub(super) fn parse_cpu(chunk: TokenStream) -> syn::Result<SCpuKernel> {
    let mut it = chunk.clone().into_iter();
    let first = it.next();
    let kw = first.as_ref().map_or_else(proc_macro2::Span::call_site, TokenTree::span);
    let group = match (it.next(), it.next()) {
        (Some(TokenTree::Group(g)), None) if g.delimiter() == Delimiter::Parenthesis => g,
        _ => {
            let path = parse_kv(chunk, |i| i.parse::<syn::Path>())?;
            let last = path.segments.last().map_or(kw, |s| s.ident.span());
            return Ok(SCpuKernel { path, dtypes: None, span: SpanRange { first: kw, last } });
        }
    };
    let parts = split_commas(group.stream());
    let [path, sel] = parts.as_slice() else {
        return Err(syn::Error::new(group.span(), "expected `cpu(path, dtypes(T: f32))`, or `cpu = path` for every member"));
    };
    let path: syn::Path = syn::parse2(path.clone())?;
    let dtypes = Parser::parse2(parse_selection, sel.clone())?;
    Ok(SCpuKernel { path, dtypes: Some(dtypes), span: SpanRange { first: kw, last: group.span_close() } })
}

/// An element type: a dtype, or a declared dtype variable (its first member stands for it in
/// the model until the op is instantiated). An unknown name says how to declare a variable.
pub(super) fn parse_elem(input: ParseStream, vars: &[SDTypeVar]) -> syn::Result<(Spanned<DType>, Option<Ident>)> {
    let fork = input.fork();
    let id: Ident = fork.call(syn::ext::IdentExt::parse_any)?;
    if let Some(v) = vars.iter().find(|v| v.name == id) {
        let _: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        let first = v.members.first().map_or(DType::f32, |m| m.value);
        return Ok((Spanned::new(first, sr(id.span())), Some(id)));
    }
    let name = id.to_string();
    if DType::from_name(&name).is_none() && crate::contract::refused_dtype(&name).is_none() {
        let declared: Vec<String> = vars.iter().map(|v| format!("`{}`", v.name)).collect();
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        let looks_like_var = name.starts_with(|c: char| c.is_ascii_uppercase());
        let hint = match (declared.is_empty(), looks_like_var) {
            (true, true) => {
                format!("; to make the op generic over a set of dtypes, declare a variable: `signature<{name}: f32 | f64>(...)`")
            }
            (true, false) => String::new(),
            (false, _) => format!("; the declared dtype variables are {}", declared.join(", ")),
        };
        return Err(syn::Error::new(id.span(), format!("unknown dtype `{name}`; valid dtypes: {}{hint}", names.join(", "))));
    }
    Ok((parse_dtype(input)?, None))
}

/// A dtype name; sub-byte and fp8 dtypes are refused with the reason, unknown names list the
/// valid ones.
fn parse_dtype(input: ParseStream) -> syn::Result<Spanned<DType>> {
    let id: Ident = input.call(syn::ext::IdentExt::parse_any)?;
    let s = id.to_string();
    if let Some(why) = refused_dtype(&s) {
        return Err(syn::Error::new(
            id.span(),
            format!("dtype `{s}` is not supported: {why}; use a byte-addressable dtype such as u8 or f16"),
        ));
    }
    match DType::from_name(&s) {
        Some(d) => Ok(Spanned::new(d, sr(id.span()))),
        None => {
            let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
            Err(syn::Error::new(id.span(), format!("unknown dtype `{s}`; valid dtypes: {}", names.join(", "))))
        }
    }
}
