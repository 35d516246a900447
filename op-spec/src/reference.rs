//! The reference function's Rust signature against the op's shape signature: one slice per
//! tensor input, one value per parameter, then optional `usize` dims, returning one `Vec` per
//! output. Owns [`RefFn`] (the item, with its body kept as unparsed tokens), that rule and the
//! facts the expansion needs; it generates no code.

use crate::contract::DType;
use crate::ctxt::Ctxt;
use crate::model::{SArg, SSignature, STensor};
use proc_macro2::{Delimiter, Group, TokenStream};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{FnArg, GenericParam, Pat, ReturnType, Type};

/// The annotated function: attributes, visibility and signature parsed, the body kept as the
/// braced token group (never parsed: it is the author's, and re-emitted unchanged).
#[derive(Clone, Debug)]
pub struct RefFn {
    /// Outer attributes (doc comments included).
    pub attrs: Vec<syn::Attribute>,
    /// Visibility.
    pub vis: syn::Visibility,
    /// The signature.
    pub sig: syn::Signature,
    /// The `{ ... }` body.
    pub body: Group,
}

impl RefFn {
    /// Parses an item without handing its body to `syn` (whose token buffer recurses into
    /// every group): the body is the last token tree, and the rest must nest no deeper than
    /// `parse::MAX_GROUP_DEPTH`.
    pub fn from_tokens(item: TokenStream) -> syn::Result<RefFn> {
        let mut trees: Vec<proc_macro2::TokenTree> = item.into_iter().collect();
        let body = match trees.pop() {
            Some(proc_macro2::TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => g,
            Some(other) => return Err(syn::Error::new(other.span(), "expected a function with a body `{ ... }`")),
            None => return Err(syn::Error::new(proc_macro2::Span::call_site(), "expected a function")),
        };
        let head: TokenStream = trees.into_iter().collect();
        if let Some(e) = crate::parse::too_deep(&head, crate::parse::MAX_GROUP_DEPTH) {
            return Err(e);
        }
        let (attrs, vis, sig) = syn::parse::Parser::parse2(
            |input: ParseStream| {
                let attrs = input.call(syn::Attribute::parse_outer)?;
                let vis: syn::Visibility = input.parse()?;
                let sig: syn::Signature = input.parse()?;
                if !input.is_empty() {
                    return Err(input.error("unexpected tokens before the function's body"));
                }
                Ok((attrs, vis, sig))
            },
            head,
        )?;
        Ok(RefFn { attrs, vis, sig, body })
    }
}

impl Parse for RefFn {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(syn::Attribute::parse_outer)?;
        let vis: syn::Visibility = input.parse()?;
        let sig: syn::Signature = input.parse()?;
        let body: Group = input.parse()?;
        if body.delimiter() != Delimiter::Brace {
            return Err(syn::Error::new(body.span(), "expected the function's body `{ ... }`"));
        }
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the function"));
        }
        Ok(RefFn { attrs, vis, sig, body })
    }
}

impl ToTokens for RefFn {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for a in &self.attrs {
            a.to_tokens(tokens);
        }
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        self.body.to_tokens(tokens);
    }
}

/// What the expansion needs to know about the reference function.
#[derive(Clone, Debug, Default)]
pub struct RefShape {
    /// The float type parameter (`T` in `fn f<T: Real>`), if the reference is generic over one
    /// float type of an op without dtype variables.
    pub float_generic: Option<syn::Ident>,
    /// The reference's type parameters in order: for an op with dtype variables, exactly the
    /// variables (by name).
    pub type_params: Vec<syn::Ident>,
    /// Trailing `usize` parameters naming dim symbols, in order.
    pub extra_dims: Vec<String>,
}

/// The Rust element type name of a dtype (last path segment).
pub fn rust_elem_name(d: DType) -> &'static str {
    d.name()
}

/// Type names the reference check knows: any other name may be an alias, which it accepts and
/// leaves to the generated type check (rustc then reports a mismatch on the function's name).
const KNOWN_TYPES: [&str; 22] = [
    "bool", "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32", "f64", "usize", "isize", "u128", "i128", "char",
    "str", "String", "Vec", "Box",
];

fn last_ident(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.to_string()),
        Type::Paren(p) => last_ident(&p.elem),
        Type::Group(g) => last_ident(&g.elem),
        _ => None,
    }
}

/// How a written type compares with the one the signature needs.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Fit {
    /// It names the right type.
    Yes,
    /// It names another type the check knows.
    No,
    /// A name the check does not know (an alias, e.g. `type Elem = u16;`): accepted here and
    /// type-checked by the generated code.
    Alias,
}

/// Whether `ty` names the element type for `dtype`: its dtype variable `var` if it has one,
/// else the generic parameter for floats if any, else the dtype's Rust type.
fn elem_fits(ty: &Type, dtype: DType, var: Option<&syn::Ident>, generic: Option<&syn::Ident>) -> Fit {
    let Some(name) = last_ident(ty) else { return Fit::No };
    if let Some(v) = var {
        return if *v == name {
            Fit::Yes
        } else if KNOWN_TYPES.contains(&name.as_str()) || name.len() == 1 {
            Fit::No
        } else {
            Fit::Alias
        };
    }
    if let Some(g) = generic {
        if *g == name {
            return if dtype.is_float() { Fit::Yes } else { Fit::No };
        }
    }
    if name == rust_elem_name(dtype) {
        Fit::Yes
    } else if KNOWN_TYPES.contains(&name.as_str()) || name == "Self" {
        Fit::No
    } else {
        Fit::Alias
    }
}

fn expected_elem(dtype: DType, var: Option<&syn::Ident>, generic: Option<&syn::Ident>) -> String {
    if let Some(v) = var {
        return v.to_string();
    }
    match generic {
        Some(g) if dtype.is_float() => g.to_string(),
        _ => rust_elem_name(dtype).to_string(),
    }
}

/// Checks the reference function against the signature: it must agree on parameter count,
/// order and types, and return one `Vec` per output.
pub fn check_reference_fn(cx: &Ctxt, func: &RefFn, sig: &SSignature, dim_symbols: &[String]) -> RefShape {
    let float_generic = if sig.vars.is_empty() { check_generics(cx, func, sig) } else { check_var_generics(cx, func, sig) };
    let generic = float_generic.as_ref();
    let type_params = type_params(func).into_iter().map(|t| t.ident.clone()).collect();
    if func.sig.receiver().is_some() {
        // A method: the placement rule says to declare the op at module level.
        return RefShape { float_generic, type_params, extra_dims: Vec::new() };
    }
    check_params(cx, func, sig, generic);
    let extra_dims = check_extra_params(cx, func, sig, dim_symbols);
    if !sig.gaps.outputs {
        check_return(cx, func, sig, generic);
    }
    RefShape { float_generic, type_params, extra_dims }
}

// Rule: at most one type parameter, the float element type, used only if the signature has a
// float; no const generics; not `async`. With the type parameter, every float of the signature
// has one dtype (the parameter is instantiated once, at it).
fn check_generics(cx: &Ctxt, func: &RefFn, sig: &SSignature) -> Option<syn::Ident> {
    let fname = &func.sig.ident;
    let types = type_params(func);
    if types.len() > 1 {
        cx.error(syn::Error::new(
            types[1].ident.span(),
            format!(
                "reference `{fname}` may have one type parameter, the float element type (e.g. `<T: Real>`); remove `{}`",
                types[1].ident
            ),
        ));
    }
    if let Some(c) = func.sig.generics.params.iter().find(|g| matches!(g, GenericParam::Const(_))) {
        cx.error(syn::Error::new(
            c.span(),
            format!("reference `{fname}` cannot take const generics; declare a parameter in the signature instead"),
        ));
    }
    if let Some(a) = &func.sig.asyncness {
        cx.error(syn::Error::new(a.span, format!("reference `{fname}` must be a plain function, not `async`")));
    }
    let g = types.first().map(|t| t.ident.clone())?;
    let floats: Vec<(String, DType)> = sig
        .args
        .iter()
        .filter_map(|a| match a {
            SArg::Tensor(t) => Some((t.name.to_string(), t.dtype.value)),
            SArg::Param(p) => Some((p.name.to_string(), p.dtype.value)),
            SArg::Broken(_) => None,
        })
        .chain(sig.outputs.iter().map(|o| (o.name.to_string(), o.dtype.value)))
        .filter(|(_, d)| d.is_float())
        .collect();
    if floats.is_empty() && !sig.gaps.args && !sig.gaps.outputs {
        cx.error(syn::Error::new(
            g.span(),
            format!("reference `{fname}` is generic over `{g}` but the signature has no float tensor; remove the type parameter"),
        ));
    }
    if let Some((name, d)) = floats.iter().find(|(_, d)| *d != floats[0].1) {
        cx.error(syn::Error::new(
            g.span(),
            format!("reference `{fname}` is generic over one float type `{g}`, but the signature mixes `{}` (`{}`) and `{d}` (`{name}`); give every float the same dtype, or make the reference non-generic with explicit types", floats[0].1, floats[0].0),
        ));
    }
    Some(g)
}

fn type_params(func: &RefFn) -> Vec<&syn::TypeParam> {
    func.sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            GenericParam::Type(t) => Some(t),
            _ => None,
        })
        .collect()
}

// Rule: with dtype variables, the reference is generic over exactly them, each a type parameter
// of the same name (it is instantiated once per member); no const generics; not `async`.
fn check_var_generics(cx: &Ctxt, func: &RefFn, sig: &SSignature) -> Option<syn::Ident> {
    let fname = &func.sig.ident;
    let types = type_params(func);
    for v in &sig.vars {
        if !types.iter().any(|t| t.ident == v.name) {
            let bound = if v.members.iter().all(|m| m.value.is_float()) { "Real" } else { "Copy" };
            cx.error(syn::Error::new(
                fname.span(),
                format!(
                    "reference `{fname}` must be generic over dtype variable `{}` (it is instantiated once per member): write `fn {fname}<{}: {bound}>(...)` and use `{}` where the signature does",
                    v.name, v.name, v.name
                ),
            ));
        }
    }
    for t in &types {
        if !sig.vars.iter().any(|v| v.name == t.ident) {
            let vars: Vec<String> = sig.vars.iter().map(|v| format!("`{}`", v.name)).collect();
            cx.error(syn::Error::new(
                t.ident.span(),
                format!(
                    "type parameter `{}` of reference `{fname}` is not a dtype variable of the signature ({}); a reference's type parameters are the declared variables",
                    t.ident,
                    vars.join(", ")
                ),
            ));
        }
    }
    if let Some(c) = func.sig.generics.params.iter().find(|g| matches!(g, GenericParam::Const(_))) {
        cx.error(syn::Error::new(
            c.span(),
            format!("reference `{fname}` cannot take const generics; declare a parameter in the signature instead"),
        ));
    }
    if let Some(a) = &func.sig.asyncness {
        cx.error(syn::Error::new(a.span, format!("reference `{fname}` must be a plain function, not `async`")));
    }
    None
}

// Rule: parameter `i` of the reference is `&[E]` for tensor input `i` and `E` for parameter `i`,
// `E` the dtype's Rust type (the type parameter for floats of a generic reference).
fn check_params(cx: &Ctxt, func: &RefFn, sig: &SSignature, generic: Option<&syn::Ident>) {
    let fname = &func.sig.ident;
    let params: Vec<&FnArg> = func.sig.inputs.iter().collect();
    for (i, arg) in sig.args.iter().enumerate() {
        let Some(fa) = params.get(i) else {
            let missing: Vec<String> = sig.args[i..].iter().map(|a| format!("`{}`", a.ident())).collect();
            cx.error(syn::Error::new(
                func.sig.paren_token.span.close(),
                format!(
                    "reference `{fname}` takes {} parameter(s) but the signature declares {}; add {} (a slice per tensor input, a value per parameter, in signature order)",
                    params.len(),
                    sig.args.len(),
                    missing.join(", ")
                ),
            ));
            return;
        };
        let FnArg::Typed(pt) = fa else { continue };
        let (want, fits, what) = match arg {
            SArg::Tensor(t) => {
                let fits = match &*pt.ty {
                    Type::Reference(r) if r.mutability.is_none() => match &*r.elem {
                        Type::Slice(s) => elem_fits(&s.elem, t.dtype.value, t.var.as_ref(), generic),
                        _ => Fit::No,
                    },
                    _ => Fit::No,
                };
                (
                    format!("&[{}]", expected_elem(t.dtype.value, t.var.as_ref(), generic)),
                    fits,
                    format!(
                        "tensor input `{}: {}[..]`",
                        t.name,
                        t.var.as_ref().map_or_else(|| t.dtype.value.to_string(), |v| v.to_string())
                    ),
                )
            }
            SArg::Param(p) => {
                let fits =
                    if matches!(&*pt.ty, Type::Reference(_)) { Fit::No } else { elem_fits(&pt.ty, p.dtype.value, p.var.as_ref(), generic) };
                (
                    expected_elem(p.dtype.value, p.var.as_ref(), generic),
                    fits,
                    format!(
                        "scalar parameter `{}: {}`",
                        p.name,
                        p.var.as_ref().map_or_else(|| p.dtype.value.to_string(), |v| v.to_string())
                    ),
                )
            }
            SArg::Broken(_) => continue,
        };
        if fits == Fit::No {
            cx.error(syn::Error::new_spanned(&pt.ty, format!("parameter {} of reference `{fname}` is {what} and must be `{want}`", i + 1)));
        }
    }
}

// Rule: extra trailing parameters are `usize` dims named after bound dim symbols.
fn check_extra_params(cx: &Ctxt, func: &RefFn, sig: &SSignature, dim_symbols: &[String]) -> Vec<String> {
    let fname = &func.sig.ident;
    let expected = sig.args.len();
    let mut extra = Vec::new();
    for fa in func.sig.inputs.iter().skip(expected) {
        let FnArg::Typed(pt) = fa else { continue };
        let name = match &*pt.pat {
            Pat::Ident(pi) => Some(pi.ident.to_string()),
            _ => None,
        };
        let is_usize = last_ident(&pt.ty).as_deref() == Some("usize");
        match name {
            Some(n) if is_usize && dim_symbols.contains(&n) => extra.push(n),
            Some(n) if is_usize => cx.error(syn::Error::new(
                pt.pat.span(),
                format!(
                    "reference `{fname}` has an extra parameter `{n}`, which is not a dim symbol of the inputs ({}); extra parameters must be `usize` dims named after a symbol",
                    dim_symbols.join(", ")
                ),
            )),
            _ => cx.error(syn::Error::new(
                fa.span(),
                format!("reference `{fname}` takes more parameters than the signature declares ({expected}); extra parameters must be `usize` dims named after a symbol, e.g. `n: usize`"),
            )),
        }
    }
    extra
}

/// How `ty` compares with `Vec<E>` for output `o`.
fn vec_fits(ty: &Type, o: &STensor, generic: Option<&syn::Ident>) -> Fit {
    let Type::Path(p) = ty else { return Fit::No };
    let Some(seg) = p.path.segments.last() else { return Fit::No };
    if seg.ident != "Vec" {
        return if KNOWN_TYPES.contains(&seg.ident.to_string().as_str()) { Fit::No } else { Fit::Alias };
    }
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(ab) => match ab.args.first() {
            Some(syn::GenericArgument::Type(t)) => elem_fits(t, o.dtype.value, o.var.as_ref(), generic),
            _ => Fit::No,
        },
        _ => Fit::No,
    }
}

// Rule: the return type is one `Vec` per output (a tuple of them for several), in order.
fn check_return(cx: &Ctxt, func: &RefFn, sig: &SSignature, generic: Option<&syn::Ident>) {
    let fname = &func.sig.ident;
    let want_one = |o: &STensor| format!("Vec<{}>", expected_elem(o.dtype.value, o.var.as_ref(), generic));
    let want_all = if sig.outputs.len() == 1 {
        want_one(&sig.outputs[0])
    } else {
        format!("({})", sig.outputs.iter().map(want_one).collect::<Vec<_>>().join(", "))
    };
    let ReturnType::Type(_, ty) = &func.sig.output else {
        cx.error(syn::Error::new(
            func.sig.ident.span(),
            format!("reference `{fname}` returns nothing but the signature declares output(s); return `{want_all}`"),
        ));
        return;
    };
    let fit = match (&**ty, sig.outputs.as_slice()) {
        (ty, [one]) => vec_fits(ty, one, generic),
        (Type::Tuple(t), outs) if t.elems.len() == outs.len() => {
            let fits: Vec<Fit> = t.elems.iter().zip(outs).map(|(e, o)| vec_fits(e, o, generic)).collect();
            if fits.contains(&Fit::No) {
                Fit::No
            } else {
                Fit::Yes
            }
        }
        (Type::Path(_), _) if last_ident(ty).is_some_and(|n| !KNOWN_TYPES.contains(&n.as_str())) => Fit::Alias,
        _ => Fit::No,
    };
    if fit == Fit::No {
        cx.error(syn::Error::new_spanned(
            ty,
            format!("reference `{fname}` must return `{want_all}` (one `Vec` per declared output), in output order"),
        ));
    }
}
