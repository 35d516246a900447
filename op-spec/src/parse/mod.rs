//! Parsing of `#[op(...)]` tokens into the typed [`OpAttr`] model. Each top-level entry, and
//! inside `signature(...)` each argument, constraint and output, is parsed on its own, so every
//! malformed part is reported in one compile; this module checks syntax, unknown and duplicate
//! keys only, never cross-entry rules (see `check`).

mod dtypes;
mod expr;
mod kernel;
mod magnitude;
mod signature;
mod values;

pub(crate) use expr::expr_text;
pub use expr::{parse_constraint, parse_expr, MAX_EXPR_NODES};

use crate::contract::{Category, NanPolicy, Tolerance, Visibility};
use crate::ctxt::Ctxt;
use crate::model::*;
use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{Ident, LitInt, LitStr, Token};

/// Top-level keys of `#[op(...)]`.
pub mod keys {
    /// `name`.
    pub const NAME: &str = "name";
    /// `version`.
    pub const VERSION: &str = "version";
    /// `signature`.
    pub const SIGNATURE: &str = "signature";
    /// `category`.
    pub const CATEGORY: &str = "category";
    /// `tolerance`.
    pub const TOLERANCE: &str = "tolerance";
    /// `backward`.
    pub const BACKWARD: &str = "backward";
    /// `subgradient`.
    pub const SUBGRADIENT: &str = "subgradient";
    /// `nan`.
    pub const NAN: &str = "nan";
    /// `cpu`.
    pub const CPU: &str = "cpu";
    /// `output`.
    pub const OUTPUT: &str = "output";
    /// `kernel`.
    pub const KERNEL: &str = "kernel";
    /// `license`.
    pub const LICENSE: &str = "license";
    /// `visibility`.
    pub const VISIBILITY: &str = "visibility";
    /// `signed_zero`.
    pub const SIGNED_ZERO: &str = "signed_zero";
    /// `domain`.
    pub const DOMAIN: &str = "domain";
    /// `magnitude`.
    pub const MAGNITUDE: &str = "magnitude";
    /// `broadcast`.
    pub const BROADCAST: &str = "broadcast";
    /// `generated_tests`.
    pub const GENERATED_TESTS: &str = "generated_tests";
    /// Every key, in documentation order.
    pub const ALL: [&str; 18] = [
        NAME,
        VERSION,
        SIGNATURE,
        CATEGORY,
        TOLERANCE,
        SIGNED_ZERO,
        BACKWARD,
        SUBGRADIENT,
        NAN,
        DOMAIN,
        MAGNITUDE,
        BROADCAST,
        CPU,
        OUTPUT,
        KERNEL,
        LICENSE,
        VISIBILITY,
        GENERATED_TESTS,
    ];
    /// Keys of `kernel(...)`.
    pub const KERNEL_KEYS: [&str; 8] = ["wgsl", "cuda", "entry", "bindings", "threads", "block", "dtypes", "limits"];
}

/// The most levels of parentheses, brackets and braces an attribute entry may nest. Checked
/// before any parsing, without recursion: `syn` flattens a token tree recursively, so a deep
/// enough tree would exhaust the stack before any grammar rule could refuse it.
pub const MAX_GROUP_DEPTH: usize = 64;

/// An error at the first group nested deeper than `limit` in `tokens`, if any.
pub fn too_deep(tokens: &TokenStream, limit: usize) -> Option<syn::Error> {
    let mut stack: Vec<proc_macro2::token_stream::IntoIter> = vec![tokens.clone().into_iter()];
    while let Some(top) = stack.last_mut() {
        match top.next() {
            None => {
                stack.pop();
            }
            Some(TokenTree::Group(g)) => {
                if stack.len() > limit {
                    return Some(syn::Error::new(
                        g.span_open(),
                        format!("nested too deeply: more than {limit} levels of parentheses or brackets; no part of `#[op(...)]` needs that many (an expression nests at most {} levels), so simplify it", crate::contract::MAX_EXPR_DEPTH),
                    ));
                }
                stack.push(g.stream().into_iter());
            }
            Some(_) => {}
        }
    }
    None
}

fn sr(span: Span) -> SpanRange {
    SpanRange::single(span)
}

/// Splits a token stream at top-level commas; empty chunks are dropped. The commas of a dtype
/// variable list (`signature<T: f32, U: u32>`) are inside `<...>`, which is not a token group:
/// a `<` right after the ident `signature` opens such a list and the next `>` closes it.
fn split_commas(tokens: TokenStream) -> Vec<TokenStream> {
    let mut out = Vec::new();
    let mut cur = TokenStream::new();
    let (mut in_vars, mut after_signature) = (false, false);
    for tt in tokens {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' && !in_vars && !cur.is_empty() => out.push(std::mem::take(&mut cur)),
            TokenTree::Punct(p) if p.as_char() == '<' && after_signature => in_vars = true,
            TokenTree::Punct(p) if p.as_char() == '>' && in_vars => in_vars = false,
            _ => {}
        }
        after_signature = matches!(&tt, TokenTree::Ident(i) if i == keys::SIGNATURE);
        if !matches!(&tt, TokenTree::Punct(p) if p.as_char() == ',') || in_vars {
            cur.extend(std::iter::once(tt));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parses the attribute's tokens. Errors go to `cx`; what parsed is returned.
pub fn parse_attr(cx: &Ctxt, tokens: TokenStream) -> OpAttr {
    let mut attr = OpAttr { span: Some(Span::call_site()), ..OpAttr::default() };
    let mut seen: Vec<String> = Vec::new();
    for chunk in split_commas(tokens) {
        let key = match chunk.clone().into_iter().next() {
            Some(TokenTree::Ident(i)) => i,
            Some(other) => {
                cx.error(syn::Error::new(
                    other.span(),
                    format!("expected a key such as `name = \"...\"`; valid keys: {}", keys::ALL.join(", ")),
                ));
                continue;
            }
            None => continue,
        };
        let k = key.to_string();
        if !keys::ALL.contains(&k.as_str()) {
            let hint = suggest(&k, &keys::ALL).map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default();
            cx.error(syn::Error::new(key.span(), format!("unknown key `{k}`{hint}; valid keys: {}", keys::ALL.join(", "))));
            continue;
        }
        if !attr.keys_present.contains(&k) {
            attr.keys_present.push(k.clone());
        }
        // `kernel` and `cpu` may repeat: one entry per kernel (`check` refuses two serving one
        // instance).
        if k != keys::KERNEL && k != keys::CPU {
            if seen.contains(&k) {
                cx.error(syn::Error::new(key.span(), format!("duplicate key `{k}`: each key may appear once; remove this one")));
                continue;
            }
            seen.push(k.clone());
        }
        if let Some(e) = too_deep(&chunk, MAX_GROUP_DEPTH) {
            cx.error(e);
            continue;
        }
        if let Err(e) = parse_entry(cx, &mut attr, &k, chunk) {
            cx.error(e);
        }
    }
    attr
}

/// One entry `key = value` (or `signature(...)`, `kernel(...)`) into `attr`.
fn parse_entry(cx: &Ctxt, attr: &mut OpAttr, key: &str, chunk: TokenStream) -> syn::Result<()> {
    match key {
        keys::NAME => attr.name = Some(parse_kv(chunk, parse_name)?),
        keys::VERSION => attr.version = Some(parse_kv(chunk, parse_version)?),
        keys::SIGNATURE => attr.signature = Some(Parser::parse2(|i: ParseStream| signature::parse_signature(cx, i), chunk)?),
        keys::CATEGORY => attr.category = Some(parse_kv(chunk, parse_category)?),
        keys::TOLERANCE => attr.tolerance = Some(parse_kv(chunk, parse_tolerance)?),
        keys::BACKWARD => attr.backward = Some(parse_kv(chunk, |i| parse_backward(cx, i))?),
        keys::SUBGRADIENT => attr.subgradient = Some(parse_kv(chunk, parse_subgradient)?),
        keys::NAN => attr.nan = Some(parse_kv(chunk, parse_nan)?),
        keys::SIGNED_ZERO => attr.signed_zero = Some(parse_kv(chunk, values::parse_signed_zero)?),
        keys::DOMAIN => attr.domain = Parser::parse2(values::parse_domain, chunk)?,
        keys::MAGNITUDE => attr.magnitude = Parser::parse2(magnitude::parse_magnitude, chunk)?,
        keys::BROADCAST => attr.broadcast = Some(parse_kv(chunk, values::parse_broadcast)?),
        keys::CPU => attr.cpu.push(dtypes::parse_cpu(chunk)?),
        keys::OUTPUT => attr.output = Some(parse_kv(chunk, parse_shape_class)?),
        keys::KERNEL => {
            if let Some(k) = Parser::parse2(|i: ParseStream| kernel::parse_kernel(cx, i), chunk)? {
                attr.kernels.push(k);
            }
        }
        keys::LICENSE => {
            attr.license = Some(parse_kv(chunk, |i| {
                let s: LitStr = i.parse()?;
                Ok(Spanned::new(s.value(), sr(s.span())))
            })?)
        }
        keys::VISIBILITY => attr.visibility = Some(parse_kv(chunk, parse_visibility)?),
        keys::GENERATED_TESTS => {
            attr.generated_tests = Some(parse_kv(chunk, |i| {
                let b: syn::LitBool = i.parse().map_err(|e| {
                    syn::Error::new(e.span(), "`generated_tests` takes `true` (the default) or `false` (no conformance or gradcheck `#[test]` is generated: the fixture's own tests assert what it must do)")
                })?;
                Ok(Spanned::new(b.value, sr(b.span)))
            })?)
        }
        _ => {}
    }
    Ok(())
}

fn parse_subgradient(input: ParseStream) -> syn::Result<Spanned<String>> {
    let s: LitStr = input.parse()?;
    if s.value().trim().is_empty() {
        return Err(syn::Error::new(
            s.span(),
            "`subgradient` must describe the rule at kinks, e.g. \"cotangent routed to the selected element\"",
        ));
    }
    Ok(Spanned::new(s.value(), sr(s.span())))
}

/// The bare word a key takes (`category = elementwise`). A string literal, or any other token,
/// is refused naming the key and its valid values (`valid`, as documented: `ulp(k)` and the
/// like); a string holding a valid word says to drop the quotes.
pub(crate) fn parse_word(input: ParseStream, key: &str, valid: &[&str]) -> syn::Result<Ident> {
    let list = valid.join(", ");
    if input.peek(LitStr) {
        let s: LitStr = input.parse()?;
        let v = s.value();
        let word = valid.iter().find(|w| w.split('(').next() == Some(v.as_str()));
        let msg = match word {
            Some(w) => format!("`{key}` takes a bare word, not a string: write `{key} = {w}` without quotes (valid: {list})"),
            None => format!("`{key}` takes a bare word, not a string; valid: {list}"),
        };
        return Err(syn::Error::new(s.span(), msg));
    }
    if !input.peek(Ident::peek_any) {
        return Err(input.error(format!("expected a value for `{key}`; valid: {list}")));
    }
    // (Any identifier, keywords included: `output = static`.)
    input.call(Ident::parse_any)
}

fn parse_nan(input: ParseStream) -> syn::Result<Spanned<NanPolicy>> {
    let id = parse_word(input, keys::NAN, &["propagate", "ordered"])?;
    match id.to_string().as_str() {
        "propagate" => Ok(Spanned::new(NanPolicy::Propagate, sr(id.span()))),
        "ordered" => Ok(Spanned::new(NanPolicy::Ordered, sr(id.span()))),
        other => Err(syn::Error::new(
            id.span(),
            format!("unknown NaN policy `{other}`; valid: propagate (NaN in, NaN out), ordered (a selection op orders NaN like any value)"),
        )),
    }
}

fn parse_visibility(input: ParseStream) -> syn::Result<Spanned<Visibility>> {
    let id = parse_word(input, keys::VISIBILITY, &["private", "workspace", "public"])?;
    let v = match id.to_string().as_str() {
        "private" => Visibility::Private,
        "workspace" => Visibility::Workspace,
        "public" => Visibility::Public,
        other => return Err(syn::Error::new(id.span(), format!("unknown visibility `{other}`; valid: private, workspace, public"))),
    };
    Ok(Spanned::new(v, sr(id.span())))
}

/// Parses `key = <value>` with `f` for the value, requiring it to consume everything.
fn parse_kv<T>(chunk: TokenStream, f: impl FnOnce(ParseStream) -> syn::Result<T>) -> syn::Result<T> {
    Parser::parse2(
        |input: ParseStream| {
            let key: Ident = input.parse()?;
            if !input.peek(Token![=]) {
                return Err(syn::Error::new(key.span(), format!("expected `{key} = ...`")));
            }
            input.parse::<Token![=]>()?;
            if input.is_empty() {
                return Err(syn::Error::new(key.span(), format!("`{key}` needs a value after `=`")));
            }
            let v = f(input)?;
            if !input.is_empty() {
                return Err(input.error("unexpected tokens after the value; separate keys with `,`"));
            }
            Ok(v)
        },
        chunk,
    )
}

fn parse_name(input: ParseStream) -> syn::Result<Spanned<String>> {
    let s: LitStr = input.parse()?;
    let v = s.value();
    let ok_seg = |seg: &str| !seg.is_empty() && seg.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if v.is_empty() || !v.split('/').all(ok_seg) {
        return Err(syn::Error::new(
            s.span(),
            format!("invalid op name \"{v}\": use `/`-separated segments of lowercase letters, digits and `_`, e.g. \"user/example/windowed_median\""),
        ));
    }
    Ok(Spanned::new(v, sr(s.span())))
}

fn parse_version(input: ParseStream) -> syn::Result<Spanned<u32>> {
    let l: LitInt = input.parse()?;
    let v: u32 = l.base10_parse().map_err(|_| syn::Error::new(l.span(), "`version` must be an integer from 1 to 4294967295"))?;
    if v == 0 {
        return Err(syn::Error::new(l.span(), "`version` starts at 1; write `version = 1`"));
    }
    Ok(Spanned::new(v, sr(l.span())))
}

fn parse_category(input: ParseStream) -> syn::Result<Spanned<Category>> {
    let names: Vec<&str> = Category::ALL.iter().map(|(_, n)| *n).collect();
    let id = parse_word(input, keys::CATEGORY, &names)?;
    let s = id.to_string();
    match Category::ALL.iter().find(|(_, n)| *n == s) {
        Some((c, _)) => Ok(Spanned::new(*c, sr(id.span()))),
        None => {
            let names: Vec<&str> = Category::ALL.iter().map(|(_, n)| *n).collect();
            Err(syn::Error::new(id.span(), format!("unknown category `{s}`; valid categories: {}", names.join(", "))))
        }
    }
}

fn paren_content(input: ParseStream<'_>) -> syn::Result<syn::parse::ParseBuffer<'_>> {
    let content;
    syn::parenthesized!(content in input);
    Ok(content)
}

fn parse_tolerance(input: ParseStream) -> syn::Result<Spanned<Tolerance>> {
    let id = parse_word(input, keys::TOLERANCE, &["exact", "ulp(k)", "accum(k)", "loose(rtol, atol)"])?;
    let s = id.to_string();
    let span = sr(id.span());
    let need_paren = |what: &str| {
        syn::Error::new(id.span(), format!("`{s}` takes {what}, e.g. `{s}({})`", if s == "loose" { "1e-3, 1e-6" } else { "4" }))
    };
    let tol = match s.as_str() {
        "exact" => Tolerance::Exact,
        "ulp" | "accum" => {
            if !input.peek(syn::token::Paren) {
                return Err(need_paren("an integer"));
            }
            let c = paren_content(input)?;
            let l: LitInt = c.parse()?;
            let k: u32 = l.base10_parse().map_err(|_| syn::Error::new(l.span(), "expected a non-negative integer"))?;
            if !c.is_empty() {
                return Err(c.error(format!("`{s}` takes one integer")));
            }
            if s == "ulp" {
                Tolerance::Ulp(k)
            } else {
                if k == 0 {
                    return Err(syn::Error::new(l.span(), "`accum(0)` allows no rounding at all; use `accum(1)` or more"));
                }
                Tolerance::Accum(k)
            }
        }
        "loose" => {
            if !input.peek(syn::token::Paren) {
                return Err(need_paren("`rtol, atol`"));
            }
            let c = paren_content(input)?;
            let r = parse_float_lit(&c)?;
            c.parse::<Token![,]>()?;
            let a = parse_float_lit(&c)?;
            if !c.is_empty() {
                return Err(c.error("`loose` takes two numbers: `loose(rtol, atol)`"));
            }
            Tolerance::Loose { rtol: r, atol: a }
        }
        _ => {
            return Err(syn::Error::new(
                id.span(),
                format!("unknown tolerance class `{s}`; valid: exact, ulp(k), accum(k), loose(rtol, atol)"),
            ))
        }
    };
    Ok(Spanned::new(tol, span))
}

fn parse_float_lit(input: ParseStream) -> syn::Result<f64> {
    if input.peek(Token![-]) {
        let m: Token![-] = input.parse()?;
        return Err(syn::Error::new(
            m.span,
            "tolerances are non-negative: `loose(rtol, atol)` bounds the error's magnitude; remove the `-`",
        ));
    }
    if !input.peek(syn::Lit) {
        return Err(input.error("expected a non-negative number, e.g. `loose(1e-3, 1e-6)`"));
    }
    let lit: syn::Lit = input.parse()?;
    let v = match &lit {
        syn::Lit::Float(f) => f.base10_parse::<f64>()?,
        syn::Lit::Int(i) => i.base10_parse::<f64>()?,
        _ => return Err(syn::Error::new(lit.span(), "expected a non-negative number")),
    };
    if !(v >= 0.0 && v.is_finite()) {
        return Err(syn::Error::new(lit.span(), "tolerances must be finite and non-negative"));
    }
    Ok(v)
}

fn parse_backward(cx: &Ctxt, input: ParseStream) -> syn::Result<SBackward> {
    let id = parse_word(input, keys::BACKWARD, &["none", "composite", "composite(graph_fn)", "vjp(path)", "jvp(path, ...)"])?;
    let span = sr(id.span());
    match id.to_string().as_str() {
        "none" => Ok(SBackward::None(span)),
        "composite" => {
            let graph = if input.peek(syn::token::Paren) {
                let c = paren_content(input)?;
                let p: syn::Path = c.parse()?;
                if !c.is_empty() {
                    return Err(c.error("`composite` takes one path: the graph builder function"));
                }
                Some(p)
            } else {
                None
            };
            Ok(SBackward::Composite { span, graph })
        }
        "vjp" | "jvp" => {
            let mut vjp = None;
            let (mut vjp_kernels, mut vjp_cpu) = (Vec::new(), Vec::new());
            let mut jvp = None;
            let mut cur = id;
            loop {
                let kw = cur.to_string();
                if !input.peek(syn::token::Paren) {
                    return Err(syn::Error::new(cur.span(), format!("`{kw}` takes the rule function's path, e.g. `{kw}(my_op_{kw})`")));
                }
                let c = paren_content(input)?;
                if kw == "vjp" {
                    if vjp.is_some() {
                        return Err(syn::Error::new(cur.span(), "`vjp` is declared twice; keep one `vjp(path)`"));
                    }
                    let (path, kernels, cpu) = parse_vjp_content(cx, &cur, &c)?;
                    vjp = Some(path);
                    (vjp_kernels, vjp_cpu) = (kernels, cpu);
                } else {
                    let paths = c.parse_terminated(parse_jvp_rule, Token![,])?;
                    if jvp.is_some() {
                        return Err(syn::Error::new(cur.span(), "`jvp` is declared twice; list every rule in one `jvp(path, ...)`"));
                    }
                    if paths.is_empty() {
                        return Err(syn::Error::new(cur.span(), "`jvp` needs one rule per differentiable input"));
                    }
                    jvp = Some((sr(cur.span()), paths.into_iter().collect()));
                }
                if input.peek(Token![+]) {
                    input.parse::<Token![+]>()?;
                    cur = input.parse()?;
                    if cur != "vjp" && cur != "jvp" {
                        return Err(syn::Error::new(cur.span(), "only `vjp(..) + jvp(..)` may be combined"));
                    }
                } else {
                    break;
                }
            }
            Ok(SBackward::Declared { span, vjp, jvp, vjp_kernels, vjp_cpu })
        }
        other => Err(syn::Error::new(
            span.first,
            format!("unknown backward form `{other}`; valid: none, composite, composite(graph_fn), vjp(path), jvp(path, ...), vjp(path) + jvp(path, ...)"),
        )),
    }
}

/// One rule of `jvp(...)`: a path. A `kernel(...)` there is refused naming the rule (a JVP takes
/// rules only; the backward's GPU kernels are the VJP op's), and so is any other call.
fn parse_jvp_rule(input: ParseStream) -> syn::Result<syn::Path> {
    let p = syn::Path::parse_mod_style(input)?;
    if !input.peek(syn::token::Paren) {
        return Ok(p);
    }
    let at = p.segments.last().map_or_else(Span::call_site, |s| s.ident.span());
    Err(syn::Error::new(
        at,
        if p.is_ident(keys::KERNEL) {
            "`jvp(...)` takes rule functions only, one per differentiable input: GPU kernels for the backward are the VJP op's, declared in `vjp(rule, kernel(...))`; move the kernel there (with a VJP rule) or remove it".to_string()
        } else {
            "`jvp(...)` takes the rules' paths, not calls: write `jvp(my_op_jvp)`, one path per differentiable input".to_string()
        },
    ))
}

/// The rule and the VJP op's kernels of `vjp(...)`.
type VjpContent = (syn::Path, Vec<SKernel>, Vec<SCpuKernel>);

/// `vjp(path)` or `vjp(path, kernel(...), cpu(f, dtypes(...)), ...)`: the rule, then the VJP
/// op's GPU kernels (each parsed like a forward `kernel(...)`; a malformed one is reported and
/// dropped) and `cpu` kernels (each parsed like a forward `cpu` entry).
fn parse_vjp_content(cx: &Ctxt, kw: &Ident, c: ParseStream) -> syn::Result<VjpContent> {
    let tokens: TokenStream = c.parse()?;
    let mut chunks = split_commas(tokens).into_iter();
    let path = match chunks.next() {
        Some(first) => Parser::parse2(|i: ParseStream| syn::Path::parse_mod_style(i), first)?,
        None => return Err(syn::Error::new(kw.span(), "`vjp` takes the rule function's path, e.g. `vjp(my_op_vjp)`")),
    };
    let (mut kernels, mut cpu) = (Vec::new(), Vec::new());
    for chunk in chunks {
        match chunk.clone().into_iter().next() {
            Some(TokenTree::Ident(k)) if k == keys::KERNEL => {
                if let Some(k) = Parser::parse2(|i: ParseStream| kernel::parse_kernel(cx, i), chunk)? {
                    kernels.push(k);
                }
            }
            Some(TokenTree::Ident(k)) if k == keys::CPU => match dtypes::parse_cpu(chunk) {
                Ok(k) => cpu.push(k),
                Err(e) => cx.error(e),
            },
            Some(t) => {
                return Err(syn::Error::new(
                    t.span(),
                    "after the rule, `vjp(...)` takes only the VJP's kernels: `vjp(my_op_vjp, kernel(wgsl = \"...\", ...), cpu(my_op_vjp_cpu))`",
                ))
            }
            None => {}
        }
    }
    Ok((path, kernels, cpu))
}

fn parse_shape_class(input: ParseStream) -> syn::Result<SShapeClass> {
    let id = parse_word(input, keys::OUTPUT, &["static", "bounded(expr)", "dynamic"])?;
    let span = sr(id.span());
    match id.to_string().as_str() {
        "static" => Ok(SShapeClass::Static(span)),
        "dynamic" => Ok(SShapeClass::Dynamic(span)),
        "bounded" => {
            if !input.peek(syn::token::Paren) {
                return Err(syn::Error::new(id.span(), "`bounded` takes the upper bound of the data-dependent dims, e.g. `bounded(n)`"));
            }
            let c = paren_content(input)?;
            let e = parse_expr(&c)?;
            if !c.is_empty() {
                return Err(c.error("`bounded` takes one expression"));
            }
            Ok(SShapeClass::Bounded(span, e))
        }
        other => Err(syn::Error::new(id.span(), format!("unknown output-shape class `{other}`; valid: static, bounded(expr), dynamic"))),
    }
}

/// The closest valid key within edit distance 2, for "did you mean".
fn suggest<'a>(k: &str, valid: &[&'a str]) -> Option<&'a str> {
    fn dist(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                cur.push((prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1));
            }
            prev = cur;
        }
        prev[b.len()]
    }
    valid.iter().map(|v| (dist(k, v), *v)).filter(|(d, _)| *d <= 2).min_by_key(|(d, _)| *d).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn parse(ts: TokenStream) -> (OpAttr, Vec<String>) {
        let cx = Ctxt::new();
        let a = parse_attr(&cx, ts);
        let errs = cx.check().err().map(|e| e.into_iter().map(|e| e.to_string()).collect()).unwrap_or_default();
        (a, errs)
    }

    #[test]
    fn parses_the_median_signature() {
        let (a, errs) = parse(quote!(
            name = "user/example/windowed_median", version = 1,
            signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
            category = selection, tolerance = exact,
            backward = vjp(windowed_median_vjp),
        ));
        assert!(errs.is_empty(), "{errs:?}");
        let sig = a.signature.unwrap();
        assert_eq!(sig.args.len(), 2);
        assert_eq!(sig.constraints.len(), 3);
        let c = sig.constraints[1].to_constraint();
        assert_eq!(c.to_string(), "1 <= w <= 31");
        assert_eq!(sig.outputs[0].to_sig().dims[0].to_string(), "n - w + 1");
        assert_eq!(sig.outputs[0].name.to_string(), "out");
    }

    #[test]
    fn every_bad_entry_is_reported_once() {
        let (_, errs) = parse(quote!(nme = "x", version = 0, category = sorting, tolerance = ulp));
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(errs[0].contains("unknown key `nme` (did you mean `name`?)"), "{}", errs[0]);
        assert!(errs[1].contains("starts at 1"));
        assert!(errs[2].contains("unknown category `sorting`"));
        assert!(errs[3].contains("`ulp` takes an integer"));
    }

    #[test]
    fn fp8_is_refused_with_a_reason() {
        let (_, errs) = parse(quote!(signature(x: f8e4m3[n]) -> f32[n]));
        assert!(errs[0].contains("fp8 types would be reinterpreted as raw bytes"), "{errs:?}");
    }

    #[test]
    fn a_kernel_in_jvp_names_the_rule() {
        let (_, errs) = parse(quote!(backward = jvp(r, kernel(wgsl = "k.wgsl", bindings(x: read), threads = n))));
        assert_eq!(errs, ["`jvp(...)` takes rule functions only, one per differentiable input: GPU kernels for the backward are the VJP op's, declared in `vjp(rule, kernel(...))`; move the kernel there (with a VJP rule) or remove it"]);
        let (_, errs) = parse(quote!(backward = jvp(r(1))));
        assert_eq!(errs, ["`jvp(...)` takes the rules' paths, not calls: write `jvp(my_op_jvp)`, one path per differentiable input"]);
        let (a, errs) = parse(quote!(backward = vjp(v) + jvp(a, b::c)));
        assert!(errs.is_empty(), "{errs:?}");
        assert!(matches!(a.backward, Some(SBackward::Declared { jvp: Some((_, ref r)), .. }) if r.len() == 2));
    }

    #[test]
    fn a_word_written_as_a_string_says_so_for_every_word_key() {
        for (entry, msg) in [
            (
                quote!(signed_zero = "ignore"),
                "`signed_zero` takes a bare word, not a string: write `signed_zero = ignore` without quotes (valid: exact, ignore)",
            ),
            (quote!(category = "selection"), "`category` takes a bare word, not a string: write `category = selection` without quotes"),
            (quote!(tolerance = "ulp"), "`tolerance` takes a bare word, not a string: write `tolerance = ulp(k)` without quotes"),
            (quote!(backward = "none"), "`backward` takes a bare word, not a string: write `backward = none` without quotes"),
            (quote!(visibility = "public"), "`visibility` takes a bare word, not a string: write `visibility = public` without quotes"),
            (quote!(nan = "propagate"), "`nan` takes a bare word, not a string: write `nan = propagate` without quotes"),
            (quote!(output = "dynamic"), "`output` takes a bare word, not a string: write `output = dynamic` without quotes"),
            (quote!(category = 3), "expected a value for `category`; valid: selection"),
        ] {
            let (_, errs) = parse(entry.clone());
            assert_eq!(errs.len(), 1, "{entry}: {errs:?}");
            assert!(errs[0].starts_with(msg), "{entry}: {}", errs[0]);
        }
        // Keywords are words too.
        let (a, errs) = parse(quote!(output = static));
        assert!(errs.is_empty() && matches!(a.output, Some(SShapeClass::Static(_))), "{errs:?}");
    }

    #[test]
    fn cpu_may_repeat_and_each_entry_keeps_its_selection() {
        let (a, errs) = parse(quote!(cpu(f32_fn, dtypes(T: f32)), cpu(f64_fn, dtypes(T: f64)), cpu = all));
        assert!(errs.is_empty(), "{errs:?}");
        let paths: Vec<String> = a.cpu.iter().map(|k| k.path.segments[0].ident.to_string()).collect();
        assert_eq!(paths, ["f32_fn", "f64_fn", "all"]);
        assert_eq!(a.cpu.iter().map(|k| k.selection().len()).collect::<Vec<_>>(), [1, 1, 0]);
    }

    #[test]
    fn kernel_limits_are_known_names_above_the_defaults() {
        let k = |limits: TokenStream| quote!(kernel(wgsl = "k.wgsl", bindings(x: read), threads = n, #limits));
        let (a, errs) = parse(k(quote!(limits(max_compute_invocations_per_workgroup = 1024, max_compute_workgroup_size_x = 1024))));
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(a.kernels[0].limits.iter().map(|l| l.value.value).collect::<Vec<_>>(), [1024, 1024]);
        for (limits, msg) in [
            (
                quote!(limits(max_invocations = 1024)),
                "unknown WebGPU limit `max_invocations`; the workgroup limits are `max_compute_invocations_per_workgroup`",
            ),
            (quote!(limits(max_compute_workgroup_size_z = 64)), "`max_compute_workgroup_size_z = 64` is within WebGPU's default (64)"),
            (
                quote!(limits(max_compute_workgroup_size_x = 512, max_compute_workgroup_size_x = 512)),
                "limit `max_compute_workgroup_size_x` is declared twice",
            ),
            (quote!(limits()), "`limits()` declares nothing"),
        ] {
            let (_, errs) = parse(k(limits.clone()));
            assert_eq!(errs.len(), 1, "{limits}: {errs:?}");
            assert!(errs[0].starts_with(msg), "{limits}: {}", errs[0]);
        }
        let (_, errs) = parse(quote!(kernel(cuda = "k.cu", bindings(x: read), threads = n, limits(max_compute_workgroup_size_x = 512))));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].starts_with("`limits(...)` declares the WebGPU limits a WGSL kernel's workgroup needs"), "{}", errs[0]);
    }

    #[test]
    fn duplicate_key_points_at_second() {
        let (_, errs) = parse(quote!(version = 1, version = 2));
        assert_eq!(errs, vec!["duplicate key `version`: each key may appear once; remove this one".to_string()]);
    }
}
