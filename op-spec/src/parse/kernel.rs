//! Grammar 2: `kernel(...)` and its buffer-binding descriptor. Each key of a kernel is parsed
//! on its own (all malformed keys are reported); a kernel with a malformed key is dropped, so
//! its source is never compared with a half-parsed descriptor.

use super::expr::parse_expr;
use super::{keys, parse_kv, split_commas, sr};
use crate::contract::{Access, KernelLang};
use crate::ctxt::Ctxt;
use crate::model::*;
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream, Parser};
use syn::{Ident, LitInt, LitStr, Token};

/// What the keys of one `kernel(...)` set, before the kernel is assembled.
#[derive(Default)]
struct KernelParts {
    lang_path: Option<(KernelLang, LitStr)>,
    entry: Option<LitStr>,
    bindings: Vec<SBinding>,
    bindings_span: Option<SpanRange>,
    threads: Option<Vec<SExpr>>,
    block: Option<Vec<Spanned<u32>>>,
    dtypes: Option<(SpanRange, Vec<SDTypeVar>)>,
    /// `limits(...)`: its keyword and the limits.
    limits: Option<(proc_macro2::Span, Vec<SLimit>)>,
    /// Key groups seen (`wgsl` and `cuda` are one group: the source).
    seen: Vec<String>,
}

pub(super) fn parse_kernel(cx: &Ctxt, input: ParseStream) -> syn::Result<Option<SKernel>> {
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
    let mut parts = KernelParts::default();
    let mut ok = true;
    for chunk in split_commas(g.stream()) {
        if let Err(e) = parse_kernel_key(&mut parts, chunk) {
            cx.error(e);
            ok = false;
        }
    }
    if !ok {
        // A malformed entry was reported where it is; checking the rest of this kernel against
        // a half-parsed descriptor would only add follow-on errors.
        return Ok(None);
    }
    let span = SpanRange { first: kw.span(), last: g.span_close() };
    assemble(cx, kw, span, parts).map(Some)
}

/// One `key = value` (or `bindings(...)`) of a kernel.
fn parse_kernel_key(parts: &mut KernelParts, chunk: TokenStream) -> syn::Result<()> {
    let key = match chunk.clone().into_iter().next() {
        Some(TokenTree::Ident(i)) => i,
        Some(t) => return Err(syn::Error::new(t.span(), format!("expected a kernel key; valid: {}", keys::KERNEL_KEYS.join(", ")))),
        None => return Ok(()),
    };
    let k = key.to_string();
    if !keys::KERNEL_KEYS.contains(&k.as_str()) {
        let alias = if k == "params" { " (CUDA parameters are listed with `bindings(...)` too)" } else { "" };
        return Err(syn::Error::new(key.span(), format!("unknown kernel key `{k}`{alias}; valid: {}", keys::KERNEL_KEYS.join(", "))));
    }
    let source = KernelLang::from_name(&k);
    let group = if source.is_some() { "source".to_string() } else { k.clone() };
    if parts.seen.contains(&group) {
        let msg = if source.is_some() {
            format!("duplicate kernel source `{k}`: a kernel has one source; declare another `kernel(...)` for a second one")
        } else {
            format!("duplicate kernel key `{k}`: each key of `kernel(...)` may appear once; remove this one")
        };
        return Err(syn::Error::new(key.span(), msg));
    }
    parts.seen.push(group);
    if let Some(lang) = source {
        parts.lang_path = Some((lang, parse_kv(chunk, |i| i.parse::<LitStr>())?));
        return Ok(());
    }
    match k.as_str() {
        "entry" => parts.entry = Some(parse_kv(chunk, |i| i.parse::<LitStr>())?),
        "threads" => parts.threads = Some(parse_kv(chunk, |i| parse_extents(i, "threads", parse_expr))?),
        "block" => parts.block = Some(parse_kv(chunk, |i| parse_extents(i, "block", parse_block))?),
        "dtypes" => parts.dtypes = Some(Parser::parse2(super::dtypes::parse_selection, chunk)?),
        "limits" => parts.limits = Some(Parser::parse2(parse_limits, chunk)?),
        _ => {
            let (span, bindings) = Parser::parse2(parse_bindings, chunk)?;
            parts.bindings_span = Some(span);
            parts.bindings = bindings;
        }
    }
    Ok(())
}

/// One extent, or a 2-D / 3-D launch's `(x, y)` / `(x, y, z)`: a parenthesised list of two or
/// three, each parsed with `one` (a single parenthesised value is one extent).
fn parse_extents<T>(input: ParseStream, key: &str, one: fn(ParseStream) -> syn::Result<T>) -> syn::Result<Vec<T>> {
    let tokens: TokenStream = input.parse()?;
    let mut it = tokens.clone().into_iter();
    if let (Some(TokenTree::Group(g)), None) = (it.next(), it.next()) {
        let parts = split_commas(g.stream());
        if g.delimiter() == Delimiter::Parenthesis && parts.len() > 1 {
            if parts.len() > 3 {
                return Err(syn::Error::new(g.span(), format!("`{key}` has at most three extents, `({key}_x, {key}_y, {key}_z)`")));
            }
            return parts.into_iter().map(|p| Parser::parse2(one, p)).collect();
        }
    }
    Ok(vec![Parser::parse2(one, tokens)?])
}

fn parse_block(input: ParseStream) -> syn::Result<Spanned<u32>> {
    let l: LitInt = input.parse()?;
    let v: u32 = l.base10_parse()?;
    if v == 0 || v > 1024 {
        return Err(syn::Error::new(l.span(), "`block` must be between 1 and 1024 threads"));
    }
    Ok(Spanned::new(v, sr(l.span())))
}

fn parse_bindings(input: ParseStream) -> syn::Result<(SpanRange, Vec<SBinding>)> {
    let kw: Ident = input.parse()?;
    let c;
    syn::parenthesized!(c in input);
    let items = c.parse_terminated(parse_binding, Token![,])?;
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after `bindings(...)`"));
    }
    Ok((sr(kw.span()), items.into_iter().collect()))
}

/// The kernel from its keys: the source is required; a missing descriptor or launch geometry
/// is reported, but the kernel is kept (its other rules still run).
fn assemble(cx: &Ctxt, kw: Ident, span: SpanRange, parts: KernelParts) -> syn::Result<SKernel> {
    let KernelParts { lang_path, entry, bindings, bindings_span, threads, block, dtypes, limits, .. } = parts;
    let (threads, threads_yz) = split_first(threads);
    let (block, block_yz) = split_first(block);
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
    if let (KernelLang::Wgsl, Some(b)) = (lang, &block) {
        cx.error(syn::Error::new(
            b.span.first,
            "`block` is for CUDA kernels; a WGSL kernel's workgroup size comes from its `@workgroup_size`",
        ));
    }
    if let (KernelLang::Cuda, Some((at, _))) = (lang, &limits) {
        cx.error(syn::Error::new(
            *at,
            "`limits(...)` declares the WebGPU limits a WGSL kernel's workgroup needs; a CUDA kernel's block is set with `block = ...` (at most 1024 threads); remove it",
        ));
    }
    check_block_shape(cx, block.as_ref(), &block_yz, threads_yz.len());
    let limits = limits.map(|(_, l)| l).unwrap_or_default();
    Ok(SKernel { span, lang, path, entry, bindings, bindings_span, threads, threads_yz, block, block_yz, dtypes, limits })
}

/// Rules: a CUDA block has at most 1024 threads in all, and no more dimensions than the launch
/// (`block = (16, 16)` needs `threads = (x, y)`: the grid's y extent comes from `threads`).
fn check_block_shape(cx: &Ctxt, block: Option<&Spanned<u32>>, block_yz: &[Spanned<u32>], launch_yz: usize) {
    let Some(b) = block else { return };
    let total: u64 = block_yz.iter().fold(u64::from(b.value), |t, d| t * u64::from(d.value));
    if total > 1024 {
        cx.error(syn::Error::new(b.span.first, format!("`block` has {total} threads in all; a CUDA block holds at most 1024")));
    }
    if let Some(extra) = block_yz.get(launch_yz) {
        let dims = block_yz.len() + 1;
        cx.error(syn::Error::new(
            extra.span.first,
            format!(
                "`block` has {dims} extents but the launch has {}: a {dims}-D block needs a {dims}-D launch, `threads = (x, y{})`",
                launch_yz + 1,
                if dims == 3 { ", z" } else { "" }
            ),
        ));
    }
}

/// The x extent and the rest, of extents parsed with `parse_extents`.
fn split_first<T>(v: Option<Vec<T>>) -> (Option<T>, Vec<T>) {
    let mut v = v.unwrap_or_default().into_iter();
    (v.next(), v.collect())
}

/// `limits(max_compute_invocations_per_workgroup = 1024, max_compute_workgroup_size_x = 1024)`:
/// each a WebGPU limit a WGSL kernel needs above its default (see `crate::wgsl::DEFAULT_LIMITS`).
fn parse_limits(input: ParseStream) -> syn::Result<(proc_macro2::Span, Vec<SLimit>)> {
    use crate::wgsl::DEFAULT_LIMITS;
    let kw: Ident = input.parse()?;
    let names = || DEFAULT_LIMITS.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    if !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(
            kw.span(),
            format!("expected `limits(max_compute_invocations_per_workgroup = 1024)`: the WebGPU limits above the defaults this kernel needs ({})", names()),
        ));
    }
    let c;
    let p = syn::parenthesized!(c in input);
    let mut out: Vec<SLimit> = Vec::new();
    while !c.is_empty() {
        let name: Ident = c.parse()?;
        let Some((_, default)) = DEFAULT_LIMITS.iter().find(|(n, _)| name == n) else {
            return Err(syn::Error::new(name.span(), format!("unknown WebGPU limit `{name}`; the workgroup limits are {}", names())));
        };
        if out.iter().any(|l| l.name == name) {
            return Err(syn::Error::new(name.span(), format!("limit `{name}` is declared twice; declare it once")));
        }
        if !c.peek(Token![=]) {
            return Err(syn::Error::new(name.span(), format!("expected `{name} = <count>`")));
        }
        c.parse::<Token![=]>()?;
        let lit: LitInt = c.parse()?;
        let value: u32 = lit.base10_parse().map_err(|_| syn::Error::new(lit.span(), "expected a count from 1 to 4294967295"))?;
        if value <= *default {
            return Err(syn::Error::new(
                lit.span(),
                format!("`{name} = {value}` is within WebGPU's default ({default}), which every device meets; declare only limits the kernel needs above the defaults, or remove it"),
            ));
        }
        out.push(SLimit { name, value: Spanned::new(value, sr(lit.span())) });
        if !c.is_empty() {
            c.parse::<Token![,]>()?;
        }
    }
    if out.is_empty() {
        return Err(syn::Error::new(p.span.join(), format!("`limits()` declares nothing; name a limit ({}) or remove it", names())));
    }
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after `limits(...)`"));
    }
    Ok((kw.span(), out))
}

/// `name: read`, `name: read_write`, `name: accumulate` (optionally `as global`) or
/// `uniform(fields...)`.
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
        "accumulate" => Access::Accumulate,
        other => return Err(syn::Error::new(acc.span(), format!("unknown access `{other}`; valid: read, read_write, accumulate"))),
    };
    let global = if input.peek(Token![as]) {
        input.parse::<Token![as]>()?;
        Some(input.parse::<Ident>()?)
    } else {
        None
    };
    Ok(SBinding::Buffer { name, access: Spanned::new(access, sr(acc.span())), global })
}
