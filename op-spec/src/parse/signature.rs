//! Grammar 1: `signature(args) -> outputs`. Each argument, constraint and output is parsed on
//! its own, so one malformed part is reported where it is and the others still parse (the
//! signature records the gap in [`Gaps`], and the rules that would need the part skip it).

use super::dtypes::parse_elem;
use super::expr::{parse_constraint, parse_expr};
use super::{split_commas, sr};
use crate::ctxt::Ctxt;
use crate::model::*;
use proc_macro2::{Span, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::{Ident, Token};

/// `signature(args) -> outputs`. Errors in single parts go to `cx` (and become gaps); an
/// error here means the signature as a whole is unusable.
pub(super) fn parse_signature(cx: &Ctxt, input: ParseStream) -> syn::Result<SSignature> {
    let kw: Ident = input.parse()?;
    let vars = if input.peek(Token![<]) { super::dtypes::parse_vars(cx, input)? } else { Vec::new() };
    if !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(kw.span(), "expected `signature(args) -> outputs`"));
    }
    let args_group: proc_macro2::Group = input.parse()?;
    let mut sig =
        SSignature { span: sr(kw.span()), vars, args: Vec::new(), constraints: Vec::new(), outputs: Vec::new(), gaps: Gaps::default() };
    parse_args(cx, args_group.stream(), &mut sig);
    if !input.peek(Token![->]) {
        return Err(syn::Error::new(kw.span(), "the signature needs outputs: `signature(args) -> f32[dims]`"));
    }
    input.parse::<Token![->]>()?;
    if input.peek(syn::token::Paren) {
        let g: proc_macro2::Group = input.parse()?;
        let chunks = split_commas(g.stream());
        let n = chunks.len();
        for (i, chunk) in chunks.into_iter().enumerate() {
            match Parser::parse2(|c: ParseStream| parse_output(c, out_name(i, n), &sig.vars), chunk) {
                Ok(o) => sig.outputs.push(o),
                Err(e) => {
                    cx.error(e);
                    sig.gaps.outputs = true;
                }
            }
        }
        if n == 0 {
            return Err(syn::Error::new(g.span(), "the signature declares no outputs"));
        }
    } else {
        let out = parse_output(input, out_name(0, 1), &sig.vars)?;
        sig.outputs.push(out);
    }
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after the outputs; separate keys with `,`"));
    }
    Ok(sig)
}

/// The name of unnamed output `i` of `n`: `out`, or `out0`, `out1`, ...
fn out_name(i: usize, n: usize) -> String {
    if n == 1 {
        "out".to_string()
    } else {
        format!("out{i}")
    }
}

/// Whether a comma-separated chunk starts a new argument (`name :`, not `name ::`).
fn starts_argument(chunk: &TokenStream) -> bool {
    let mut it = chunk.clone().into_iter();
    match (it.next(), it.next(), it.next()) {
        (Some(TokenTree::Ident(_)), Some(TokenTree::Punct(p)), next) if p.as_char() == ':' => {
            !matches!(next, Some(TokenTree::Punct(q)) if q.as_char() == ':') && p.spacing() == proc_macro2::Spacing::Alone
        }
        _ => false,
    }
}

/// The arguments and their `where` constraints, one comma-separated chunk at a time: a chunk
/// starting with `name:` is an argument, any other continues the last argument's `where` list.
fn parse_args(cx: &Ctxt, stream: TokenStream, sig: &mut SSignature) {
    let mut in_where = false;
    for chunk in split_commas(stream) {
        if starts_argument(&chunk) {
            let has_where = chunk.clone().into_iter().any(|t| matches!(&t, TokenTree::Ident(i) if i == "where"));
            let name = match chunk.clone().into_iter().next() {
                Some(TokenTree::Ident(i)) => i,
                _ => continue,
            };
            match Parser::parse2(|c: ParseStream| parse_arg(c, &sig.vars), chunk) {
                Ok((arg, rest)) => {
                    sig.args.push(arg);
                    in_where = rest.is_some();
                    if let Some(rest) = rest {
                        push_constraint(cx, rest, sig);
                    }
                }
                Err(e) => {
                    cx.error(e);
                    sig.args.push(SArg::Broken(name));
                    sig.gaps.args = true;
                    // Its own `where` constraint is lost with it; later chunks still parse.
                    sig.gaps.constraints |= has_where;
                    in_where = has_where;
                }
            }
        } else if in_where {
            push_constraint(cx, chunk, sig);
        } else {
            let at = chunk.into_iter().next().map_or_else(Span::call_site, |t| t.span());
            cx.error(syn::Error::new(
                at,
                "expected an argument `name: dtype[dims]` or `name: dtype`; constraints follow `where` (e.g. `w: u32 where w <= n`)",
            ));
            sig.gaps.args = true;
        }
    }
}

fn push_constraint(cx: &Ctxt, chunk: TokenStream, sig: &mut SSignature) {
    let parsed = Parser::parse2(
        |c: ParseStream| {
            if c.is_empty() {
                return Err(c.error("expected a constraint after `where`, e.g. `w <= n`"));
            }
            parse_constraint(c)
        },
        chunk,
    );
    match parsed {
        Ok(c) => sig.constraints.push(c),
        Err(e) => {
            cx.error(e);
            sig.gaps.constraints = true;
        }
    }
}

/// `name: dtype[dims]` or `name: dtype`, then optionally `where` and the first constraint's
/// tokens.
fn parse_arg(input: ParseStream, vars: &[SDTypeVar]) -> syn::Result<(SArg, Option<TokenStream>)> {
    let name: Ident = input.parse()?;
    input.parse::<Token![:]>()?;
    let (dtype, var) = parse_elem(input, vars)?;
    let arg = if input.peek(syn::token::Bracket) {
        let dims = parse_dims(input)?;
        SArg::Tensor(STensor { name: name.clone(), named: true, dtype, var, dims })
    } else {
        SArg::Param(SParam { name: name.clone(), dtype, var })
    };
    if input.peek(Token![where]) {
        input.parse::<Token![where]>()?;
        let rest: TokenStream = input.parse()?;
        return Ok((arg, Some(rest)));
    }
    if !input.is_empty() {
        return Err(input
            .error(format!("unexpected tokens after argument `{name}`; separate arguments with `,` and start constraints with `where`")));
    }
    Ok((arg, None))
}

fn parse_dims(input: ParseStream) -> syn::Result<Vec<SExpr>> {
    let content;
    syn::bracketed!(content in input);
    let dims = content.parse_terminated(parse_expr, Token![,])?;
    Ok(dims.into_iter().collect())
}

/// `[name:] dtype[dims]`; an unnamed output is called `default_name`, at its dtype.
fn parse_output(input: ParseStream, default_name: String, vars: &[SDTypeVar]) -> syn::Result<STensor> {
    let named = input.peek(Ident) && input.peek2(Token![:]);
    let name = if named {
        let n: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        Some(n)
    } else {
        None
    };
    let (dtype, var) = parse_elem(input, vars)?;
    if !input.peek(syn::token::Bracket) {
        let t = var.as_ref().map_or_else(|| dtype.value.to_string(), |v| v.to_string());
        return Err(syn::Error::new(dtype.span.first, format!("outputs are tensors: write `{t}[dims]` (`{t}[]` for a scalar)")));
    }
    let dims = parse_dims(input)?;
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after the output; separate outputs with `,`"));
    }
    let name = name.unwrap_or_else(|| Ident::new(&default_name, dtype.span.first));
    Ok(STensor { name, named, dtype, var, dims })
}
