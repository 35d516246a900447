//! Parsing of `#[op(...)]` tokens into the typed [`OpAttr`] model. Each top-level entry is
//! parsed on its own so that every malformed entry is reported in one compile; this module
//! checks syntax, unknown and duplicate keys only, never cross-entry rules (see `check`).

use crate::contract::{refused_dtype, Access, BinOp, Category, CmpOp, DType, KernelLang, NanPolicy, Tolerance, Visibility};
use crate::ctxt::Ctxt;
use crate::model::*;
use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
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
    /// Every key, in documentation order.
    pub const ALL: [&str; 15] = [
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
        CPU,
        OUTPUT,
        KERNEL,
        LICENSE,
        VISIBILITY,
    ];
    /// Keys of `kernel(...)`.
    pub const KERNEL_KEYS: [&str; 6] = ["wgsl", "cuda", "entry", "bindings", "threads", "block"];
}

fn sr(span: Span) -> SpanRange {
    SpanRange::single(span)
}

/// Splits a token stream at top-level commas; empty chunks are dropped.
fn split_commas(tokens: TokenStream) -> Vec<TokenStream> {
    let mut out = Vec::new();
    let mut cur = TokenStream::new();
    for tt in tokens {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.extend(std::iter::once(tt)),
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
    let mut seen: Vec<(String, Span)> = Vec::new();
    for chunk in split_commas(tokens) {
        let first = chunk.clone().into_iter().next();
        let key = match &first {
            Some(TokenTree::Ident(i)) => i.clone(),
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
        if k != keys::KERNEL {
            if seen.iter().any(|(s, _)| *s == k) {
                cx.error(syn::Error::new(key.span(), format!("duplicate key `{k}`: each key may appear once; remove this one")));
                continue;
            }
            seen.push((k.clone(), key.span()));
        }
        let res = match k.as_str() {
            keys::NAME => parse_kv(chunk, parse_name).map(|v| attr.name = Some(v)),
            keys::VERSION => parse_kv(chunk, parse_version).map(|v| attr.version = Some(v)),
            keys::SIGNATURE => Parser::parse2(|i: ParseStream| parse_signature(cx, i), chunk).map(|v| attr.signature = Some(v)),
            keys::CATEGORY => parse_kv(chunk, parse_category).map(|v| attr.category = Some(v)),
            keys::TOLERANCE => parse_kv(chunk, parse_tolerance).map(|v| attr.tolerance = Some(v)),
            keys::BACKWARD => parse_kv(chunk, parse_backward).map(|v| attr.backward = Some(v)),
            keys::SUBGRADIENT => parse_kv(chunk, |i| {
                let s: LitStr = i.parse()?;
                if s.value().trim().is_empty() {
                    return Err(syn::Error::new(
                        s.span(),
                        "`subgradient` must describe the rule at kinks, e.g. \"cotangent routed to the selected element\"",
                    ));
                }
                Ok(Spanned::new(s.value(), sr(s.span())))
            })
            .map(|v| attr.subgradient = Some(v)),
            keys::NAN => parse_kv(chunk, |i| {
                let id: Ident = i.parse()?;
                match id.to_string().as_str() {
                    "propagate" => Ok(Spanned::new(NanPolicy::Propagate, sr(id.span()))),
                    other => Err(syn::Error::new(id.span(), format!("unknown NaN policy `{other}`; the valid one is `propagate`"))),
                }
            })
            .map(|v| attr.nan = Some(v)),
            keys::SIGNED_ZERO => parse_kv(chunk, crate::parse_values::parse_signed_zero).map(|v| attr.signed_zero = Some(v)),
            keys::DOMAIN => Parser::parse2(crate::parse_values::parse_domain, chunk).map(|v| attr.domain = v),
            keys::CPU => parse_kv(chunk, |i| i.parse::<syn::Path>()).map(|v| attr.cpu = Some(v)),
            keys::OUTPUT => parse_kv(chunk, parse_shape_class).map(|v| attr.output = Some(v)),
            keys::KERNEL => Parser::parse2(|i: ParseStream| parse_kernel(cx, i), chunk).map(|v| {
                if let Some(v) = v {
                    attr.kernels.push(v)
                }
            }),
            keys::LICENSE => parse_kv(chunk, |i| {
                let s: LitStr = i.parse()?;
                Ok(Spanned::new(s.value(), sr(s.span())))
            })
            .map(|v| attr.license = Some(v)),
            keys::VISIBILITY => parse_kv(chunk, |i| {
                let id: Ident = i.parse()?;
                let v = match id.to_string().as_str() {
                    "private" => Visibility::Private,
                    "workspace" => Visibility::Workspace,
                    "public" => Visibility::Public,
                    other => {
                        return Err(syn::Error::new(id.span(), format!("unknown visibility `{other}`; valid: private, workspace, public")))
                    }
                };
                Ok(Spanned::new(v, sr(id.span())))
            })
            .map(|v| attr.visibility = Some(v)),
            _ => Ok(()),
        };
        if let Err(e) = res {
            cx.error(e);
        }
    }
    attr
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
    let id: Ident = input.parse()?;
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
    let id: Ident = input.parse()?;
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

fn parse_backward(input: ParseStream) -> syn::Result<SBackward> {
    let id: Ident = input.parse()?;
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
            let mut jvp = None;
            let mut cur = id;
            loop {
                let kw = cur.to_string();
                if !input.peek(syn::token::Paren) {
                    return Err(syn::Error::new(cur.span(), format!("`{kw}` takes the rule function's path, e.g. `{kw}(my_op_{kw})`")));
                }
                let c = paren_content(input)?;
                let paths = c.parse_terminated(syn::Path::parse_mod_style, Token![,])?;
                if kw == "vjp" {
                    if vjp.is_some() {
                        return Err(syn::Error::new(cur.span(), "`vjp` is declared twice; keep one `vjp(path)`"));
                    }
                    if paths.len() != 1 {
                        return Err(syn::Error::new(cur.span(), format!("`vjp` takes exactly one path, found {}", paths.len())));
                    }
                    vjp = paths.into_iter().next();
                } else {
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
            Ok(SBackward::Declared { span, vjp, jvp })
        }
        other => Err(syn::Error::new(
            span.first,
            format!("unknown backward form `{other}`; valid: none, composite, composite(graph_fn), vjp(path), jvp(path, ...), vjp(path) + jvp(path, ...)"),
        )),
    }
}

fn parse_shape_class(input: ParseStream) -> syn::Result<SShapeClass> {
    let id: Ident = input.parse()?;
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

// ---------------------------------------------------------------------------------------------
// Grammar 1: the shape signature.

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

fn parse_dims(input: ParseStream) -> syn::Result<Vec<SExpr>> {
    let content;
    syn::bracketed!(content in input);
    let dims = content.parse_terminated(parse_expr, Token![,])?;
    Ok(dims.into_iter().collect())
}

fn parse_signature(cx: &Ctxt, input: ParseStream) -> syn::Result<SSignature> {
    let kw: Ident = input.parse()?;
    if !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(kw.span(), "expected `signature(args) -> outputs`"));
    }
    let content;
    syn::parenthesized!(content in input);
    let mut args = Vec::new();
    let mut constraints = Vec::new();
    while !content.is_empty() {
        let name: Ident = content.parse()?;
        if !content.peek(Token![:]) {
            return Err(syn::Error::new(
                name.span(),
                format!("expected `{name}: dtype[dims]` for a tensor or `{name}: dtype` for a parameter"),
            ));
        }
        content.parse::<Token![:]>()?;
        let dtype = parse_dtype(&content)?;
        if content.peek(syn::token::Bracket) {
            let dims = parse_dims(&content)?;
            args.push(SArg::Tensor(STensor { name, named: true, dtype, dims }));
        } else {
            args.push(SArg::Param(SParam { name, dtype }));
        }
        if content.peek(Token![where]) {
            content.parse::<Token![where]>()?;
            loop {
                match parse_constraint(&content) {
                    Ok(c) => constraints.push(c),
                    Err(e) => {
                        cx.error(e);
                        // Skip to the next comma so the remaining constraints are still seen.
                        while !content.is_empty() && !content.peek(Token![,]) {
                            content.parse::<TokenTree>()?;
                        }
                    }
                }
                if content.is_empty() {
                    break;
                }
                content.parse::<Token![,]>()?;
                // `ident :` starts the next argument; anything else is another constraint.
                if content.is_empty() || (content.peek(Ident) && content.peek2(Token![:])) {
                    break;
                }
            }
        } else if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    if !input.peek(Token![->]) {
        return Err(syn::Error::new(kw.span(), "the signature needs outputs: `signature(args) -> f32[dims]`"));
    }
    input.parse::<Token![->]>()?;
    let mut outputs = Vec::new();
    if input.peek(syn::token::Paren) {
        let c;
        syn::parenthesized!(c in input);
        let outs = c.parse_terminated(parse_output, Token![,])?;
        outputs.extend(outs);
    } else {
        outputs.push(parse_output(input)?);
    }
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after the outputs; separate keys with `,`"));
    }
    if outputs.is_empty() {
        return Err(syn::Error::new(kw.span(), "the signature declares no outputs"));
    }
    let n = outputs.len();
    for (i, o) in outputs.iter_mut().enumerate() {
        if !o.named {
            let name = if n == 1 { "out".to_string() } else { format!("out{i}") };
            o.name = Ident::new(&name, o.dtype.span.first);
        }
    }
    Ok(SSignature { span: sr(kw.span()), args, constraints, outputs })
}

fn parse_output(input: ParseStream) -> syn::Result<STensor> {
    let (name, named) = if input.peek(Ident) && input.peek2(Token![:]) {
        let n: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        (n, true)
    } else {
        (Ident::new("out", Span::call_site()), false)
    };
    let dtype = parse_dtype(input)?;
    if !input.peek(syn::token::Bracket) {
        return Err(syn::Error::new(
            dtype.span.first,
            format!("outputs are tensors: write `{}[dims]` (`{}[]` for a scalar)", dtype.value, dtype.value),
        ));
    }
    let dims = parse_dims(input)?;
    Ok(STensor { name, named, dtype, dims })
}

fn parse_cmp(input: ParseStream) -> syn::Result<Option<CmpOp>> {
    Ok(Some(if input.peek(Token![<=]) {
        input.parse::<Token![<=]>()?;
        CmpOp::Le
    } else if input.peek(Token![>=]) {
        input.parse::<Token![>=]>()?;
        CmpOp::Ge
    } else if input.peek(Token![==]) {
        input.parse::<Token![==]>()?;
        CmpOp::Eq
    } else if input.peek(Token![!=]) {
        input.parse::<Token![!=]>()?;
        CmpOp::Ne
    } else if input.peek(Token![<]) {
        input.parse::<Token![<]>()?;
        CmpOp::Lt
    } else if input.peek(Token![>]) {
        input.parse::<Token![>]>()?;
        CmpOp::Gt
    } else {
        return Ok(None);
    }))
}

/// A constraint: `expr (cmp expr)+`.
pub fn parse_constraint(input: ParseStream) -> syn::Result<SConstraint> {
    let first = parse_expr(input)?;
    let mut terms = vec![first];
    let mut ops = Vec::new();
    while let Some(op) = parse_cmp(input)? {
        ops.push(op);
        terms.push(parse_expr(input)?);
    }
    if ops.is_empty() {
        return Err(terms[0].span.error(format!(
            "`{}` is not a constraint: a constraint compares expressions with `<`, `<=`, `==`, `!=`, `>` or `>=`, e.g. `w % 2 == 1` or `1 <= w <= 31`",
            terms[0].to_expr()
        )));
    }
    let span = terms[0].span.to(terms[terms.len() - 1].span);
    Ok(SConstraint { terms, ops, span })
}

/// An integer expression: `+ - * / %`, unary `-`, `min(a, b)`, `max(a, b)`, parentheses.
pub fn parse_expr(input: ParseStream) -> syn::Result<SExpr> {
    parse_binary(input, 0)
}

fn parse_binary(input: ParseStream, min_prec: u8) -> syn::Result<SExpr> {
    let mut lhs = parse_unary(input)?;
    loop {
        let (op, prec) = if input.peek(Token![+]) && !input.peek(Token![+=]) {
            (BinOp::Add, 1)
        } else if input.peek(Token![-]) && !input.peek(Token![->]) && !input.peek(Token![-=]) {
            (BinOp::Sub, 1)
        } else if input.peek(Token![*]) {
            (BinOp::Mul, 2)
        } else if input.peek(Token![/]) {
            (BinOp::Div, 2)
        } else if input.peek(Token![%]) {
            (BinOp::Rem, 2)
        } else {
            break;
        };
        if prec < min_prec {
            break;
        }
        input.parse::<TokenTree>()?;
        let rhs = parse_binary(input, prec + 1)?;
        let span = lhs.span.to(rhs.span);
        lhs = SExpr { kind: SExprKind::Bin(op, Box::new(lhs), Box::new(rhs)), span };
    }
    Ok(lhs)
}

fn parse_unary(input: ParseStream) -> syn::Result<SExpr> {
    if input.peek(Token![-]) {
        let m: Token![-] = input.parse()?;
        let e = parse_unary(input)?;
        let span = sr(m.span).to(e.span);
        return Ok(SExpr { kind: SExprKind::Neg(Box::new(e)), span });
    }
    if input.peek(syn::token::Paren) {
        let g: proc_macro2::Group = input.parse()?;
        let e = Parser::parse2(
            |c: ParseStream| {
                let e = parse_expr(c)?;
                if !c.is_empty() {
                    return Err(c.error("expected `)` after the expression"));
                }
                Ok(e)
            },
            g.stream(),
        )
        .map_err(|e| if g.stream().is_empty() { syn::Error::new(g.span(), "empty parentheses: expected an expression") } else { e })?;
        return Ok(SExpr { kind: e.kind, span: SpanRange { first: g.span_open(), last: g.span_close() } });
    }
    if input.peek(LitInt) {
        let l: LitInt = input.parse()?;
        if !l.suffix().is_empty() && l.suffix() != "u" {
            return Err(syn::Error::new(l.span(), format!("dim literals have no type suffix: write `{}`", l.base10_digits())));
        }
        let v: i64 = l.base10_digits().parse().map_err(|_| syn::Error::new(l.span(), "integer literal too large"))?;
        return Ok(SExpr { kind: SExprKind::Lit(v), span: sr(l.span()) });
    }
    if input.peek(syn::Lit) {
        let l: syn::Lit = input.parse()?;
        return Err(syn::Error::new(l.span(), "dims and constraints are integer expressions; expected an integer literal or a symbol"));
    }
    if input.peek(Ident) {
        let id: Ident = input.parse()?;
        let s = id.to_string();
        if (s == "min" || s == "max") && input.peek(syn::token::Paren) {
            let g: proc_macro2::Group = input.parse()?;
            let (a, b) = Parser::parse2(
                |c: ParseStream| {
                    let a = parse_expr(c)?;
                    c.parse::<Token![,]>()?;
                    let b = parse_expr(c)?;
                    if !c.is_empty() {
                        return Err(c.error(format!("`{s}` takes two arguments")));
                    }
                    Ok((a, b))
                },
                g.stream(),
            )
            .map_err(|e| {
                if g.stream().is_empty() {
                    syn::Error::new(g.span(), format!("`{s}` takes two arguments"))
                } else {
                    e
                }
            })?;
            let span = SpanRange { first: id.span(), last: g.span_close() };
            let kind = if s == "min" { SExprKind::Min(Box::new(a), Box::new(b)) } else { SExprKind::Max(Box::new(a), Box::new(b)) };
            return Ok(SExpr { kind, span });
        }
        return Ok(SExpr { kind: SExprKind::Sym(id.clone()), span: sr(id.span()) });
    }
    if input.is_empty() {
        return Err(input.error("expected an expression"));
    }
    let tt: TokenTree = input.parse()?;
    Err(syn::Error::new(tt.span(), format!("malformed expression: expected a symbol, an integer or `(`, found `{tt}`; expressions are built from symbols, integers, `+ - * / %`, `min(a, b)`, `max(a, b)` and parentheses")))
}

// ---------------------------------------------------------------------------------------------
// Grammar 2: kernels and their binding descriptors.

fn parse_kernel(cx: &Ctxt, input: ParseStream) -> syn::Result<Option<SKernel>> {
    let kw: Ident = input.parse()?;
    if !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(kw.span(), "expected `kernel(wgsl = \"path\", bindings(...), threads = expr)`"));
    }
    let g: proc_macro2::Group = input.parse()?;
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after `kernel(...)`"));
    }
    if g.delimiter() != Delimiter::Parenthesis {
        return Err(syn::Error::new(g.span(), "expected `kernel(...)`"));
    }
    let span = SpanRange { first: kw.span(), last: g.span_close() };
    let mut lang_path: Option<(KernelLang, LitStr)> = None;
    let mut entry = None;
    let mut bindings = Vec::new();
    let mut bindings_span = None;
    let mut threads = None;
    let mut block = None;
    let mut seen: Vec<String> = Vec::new();
    let mut ok = true;
    for chunk in split_commas(g.stream()) {
        let key = match chunk.clone().into_iter().next() {
            Some(TokenTree::Ident(i)) => i,
            Some(t) => {
                cx.error(syn::Error::new(t.span(), format!("expected a kernel key; valid: {}", keys::KERNEL_KEYS.join(", "))));
                ok = false;
                continue;
            }
            None => continue,
        };
        let k = key.to_string();
        if !keys::KERNEL_KEYS.contains(&k.as_str()) {
            let alias = if k == "params" { " (CUDA parameters are listed with `bindings(...)` too)" } else { "" };
            cx.error(syn::Error::new(key.span(), format!("unknown kernel key `{k}`{alias}; valid: {}", keys::KERNEL_KEYS.join(", "))));
            ok = false;
            continue;
        }
        let group = if k == "cuda" { "wgsl".to_string() } else { k.clone() };
        if seen.contains(&group) {
            let msg = if group == "wgsl" {
                format!("duplicate kernel source `{k}`: a kernel has one source; declare another `kernel(...)` for a second one")
            } else {
                format!("duplicate kernel key `{k}`: each key of `kernel(...)` may appear once; remove this one")
            };
            cx.error(syn::Error::new(key.span(), msg));
            ok = false;
            continue;
        }
        seen.push(group);
        let r = match k.as_str() {
            "wgsl" | "cuda" => parse_kv(chunk, |i| i.parse::<LitStr>()).map(|p| {
                lang_path = Some((if k == "wgsl" { KernelLang::Wgsl } else { KernelLang::Cuda }, p));
            }),
            "entry" => parse_kv(chunk, |i| i.parse::<LitStr>()).map(|e| entry = Some(e)),
            "threads" => parse_kv(chunk, parse_expr).map(|e| threads = Some(e)),
            "block" => parse_kv(chunk, |i| {
                let l: LitInt = i.parse()?;
                let v: u32 = l.base10_parse()?;
                if v == 0 || v > 1024 {
                    return Err(syn::Error::new(l.span(), "`block` must be between 1 and 1024 threads"));
                }
                Ok(Spanned::new(v, sr(l.span())))
            })
            .map(|b| block = Some(b)),
            "bindings" => Parser::parse2(
                |i: ParseStream| {
                    let kw: Ident = i.parse()?;
                    bindings_span = Some(sr(kw.span()));
                    let c;
                    syn::parenthesized!(c in i);
                    let items = c.parse_terminated(parse_binding, Token![,])?;
                    if !i.is_empty() {
                        return Err(i.error("unexpected tokens after `bindings(...)`"));
                    }
                    Ok(items.into_iter().collect::<Vec<_>>())
                },
                chunk,
            )
            .map(|b| bindings = b),
            _ => Ok(()),
        };
        if let Err(e) = r {
            cx.error(e);
            ok = false;
        }
    }
    if !ok {
        // A malformed entry was reported where it is; checking the rest of this kernel against
        // a half-parsed descriptor would only add follow-on errors.
        return Ok(None);
    }
    let Some((lang, path)) = lang_path else {
        return Err(syn::Error::new(kw.span(), "a kernel needs its source: `wgsl = \"kernels/x.wgsl\"` or `cuda = \"kernels/x.cu\"`"));
    };
    if bindings_span.is_none() {
        cx.error(syn::Error::new(kw.span(), "a kernel needs its binding descriptor: `bindings(x: read, out: read_write, uniform(n))`"));
    }
    if threads.is_none() {
        cx.error(syn::Error::new(
            kw.span(),
            "a kernel needs its launch geometry: `threads = expr` (one invocation per output element, usually)",
        ));
    }
    if lang == KernelLang::Wgsl {
        if let Some(b) = &block {
            cx.error(syn::Error::new(
                b.span.first,
                "`block` is for CUDA kernels; a WGSL kernel's workgroup size comes from its `@workgroup_size`",
            ));
        }
    }
    Ok(Some(SKernel { span, lang, path, entry, bindings, bindings_span, threads, block }))
}

fn parse_binding(input: ParseStream) -> syn::Result<SBinding> {
    let name: Ident = input.parse()?;
    if name == "uniform" && input.peek(syn::token::Paren) {
        let c;
        let p = syn::parenthesized!(c in input);
        let fields = c.parse_terminated(Ident::parse, Token![,])?;
        return Ok(SBinding::Uniform {
            span: SpanRange { first: name.span(), last: p.span.close() },
            fields: fields.into_iter().collect(),
        });
    }
    if !input.peek(Token![:]) {
        return Err(syn::Error::new(name.span(), format!("expected `{name}: read` or `{name}: read_write`, or `uniform(fields...)`")));
    }
    input.parse::<Token![:]>()?;
    let acc: Ident = input.parse()?;
    let access = match acc.to_string().as_str() {
        "read" => Access::Read,
        "read_write" => Access::ReadWrite,
        other => return Err(syn::Error::new(acc.span(), format!("unknown access `{other}`; valid: read, read_write"))),
    };
    Ok(SBinding::Buffer { name, access: Spanned::new(access, sr(acc.span())) })
}

use syn::parse::Parse;

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

#[allow(dead_code)]
fn _assert_spanned(x: &Ident) -> Span {
    x.span()
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
    fn expression_precedence_and_printing() {
        let e = Parser::parse2(parse_expr, quote!(a - (b - c) * 2 + min(a, b) % 3)).unwrap().to_expr();
        assert_eq!(e.to_string(), "a - (b - c) * 2 + min(a, b) % 3");
        let v = e
            .eval(&|s| {
                Some(match s {
                    "a" => 10,
                    "b" => 4,
                    _ => 1,
                })
            })
            .unwrap();
        assert_eq!(v, 10 - 3 * 2 + 4 % 3);
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
    fn duplicate_key_points_at_second() {
        let (_, errs) = parse(quote!(version = 1, version = 2));
        assert_eq!(errs, vec!["duplicate key `version`: each key may appear once; remove this one".to_string()]);
    }
}
