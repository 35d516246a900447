//! The pieces every generated shim is made of: a dtype's element type, user paths rebased into
//! the generated module, spans moved onto the user's tokens, the typed bindings that check a
//! user function against the signature, and the `OpDecl` fields the shims fill. Generates
//! tokens only; decides nothing.

use op_spec::contract::DType;
use op_spec::plan::ShimPlan;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// The element type of `d` in generated code (`f16`/`bf16` through `__private`).
pub(crate) fn dtype_tokens(d: DType) -> TokenStream {
    match d {
        DType::f16 => quote!(::op_runtime::__private::f16),
        DType::bf16 => quote!(::op_runtime::__private::bf16),
        other => {
            let id = format_ident!("{}", other.name());
            quote!(#id)
        }
    }
}

/// A user path as seen from the generated child module: `self::x` becomes `super::x`,
/// `super::x` becomes `super::super::x`; other paths resolve through `use super::*`.
pub(crate) fn rebase(p: &syn::Path) -> syn::Path {
    let mut p = p.clone();
    if let Some(first) = p.segments.first_mut() {
        if first.ident == "self" {
            first.ident = syn::Ident::new("super", first.ident.span());
            return p;
        }
        if first.ident == "super" {
            let sup: syn::PathSegment = syn::Ident::new("super", first.ident.span()).into();
            p.segments.insert(0, sup);
        }
    }
    p
}

/// `ts` with every token's span set to `span`, so a type error on a generated check points at
/// the user's path alone (not at the whole attribute).
pub(crate) fn respan(ts: TokenStream, span: Span) -> TokenStream {
    ts.into_iter()
        .map(|tt| match tt {
            proc_macro2::TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                ng.set_span(span);
                proc_macro2::TokenTree::Group(ng)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// `ts` with the top-level identifier `name` given `span`.
pub(crate) fn respan_ident(ts: TokenStream, name: &str, span: Span) -> TokenStream {
    ts.into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Ident(i) = &mut tt {
                if i == name {
                    i.set_span(span);
                }
            }
            tt
        })
        .collect()
}

/// `let __f: <fn type> = <path>;` with the user's span on the type check but a call-site
/// `__f`, so the binding resolves from the (call-site) shim body even inside `macro_rules!`.
pub(crate) fn typed_binding(span: Span, fty: &TokenStream, path: &TokenStream) -> TokenStream {
    let f = syn::Ident::new("__f", Span::call_site());
    quote_spanned!(span=> let #f: #fty = #path;)
}

/// The rebased user path `p`, its span, and the binding checking it against `fty` (spanned on
/// the path, so a type error lands there).
pub(crate) fn path_check(p: &syn::Path, fty: TokenStream) -> (Span, TokenStream) {
    let p = rebase(p);
    let span = path_span(&p);
    (span, typed_binding(span, &respan(fty, span), &quote!(#p)))
}

pub(crate) fn path_span(p: &syn::Path) -> Span {
    p.segments.last().map(|s| s.ident.span()).unwrap_or_else(Span::call_site)
}

/// Every shim of the declaration and the `OpDecl` fields that name them.
pub(crate) struct Shims {
    pub(crate) items: Vec<TokenStream>,
    pub(crate) fields: Fields,
}

/// `OpDecl` fields, `name: value,` each: a required field always, an optional one only where
/// the declaration has it (the description's `..__rt::DECL_BASE` has none of them).
#[derive(Default)]
pub(crate) struct Fields(Vec<TokenStream>);

impl Fields {
    pub(crate) fn set(&mut self, name: &str, value: TokenStream) {
        let name = format_ident!("{}", name);
        self.0.push(quote!(#name: #value,));
    }

    /// `name: Some(value)`, if there is a value.
    pub(crate) fn some(&mut self, name: &str, value: Option<TokenStream>) {
        if let Some(v) = value {
            self.set(name, quote!(__rt::Some(#v)));
        }
    }

    /// `name: &[values]`, if there are any.
    pub(crate) fn list(&mut self, name: &str, values: &[TokenStream]) {
        if !values.is_empty() {
            self.set(name, quote!(&[#(#values),*]));
        }
    }
}

impl quote::ToTokens for Fields {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(self.0.iter().cloned());
    }
}

pub(crate) fn option(v: Option<TokenStream>) -> TokenStream {
    match v {
        Some(v) => quote!(__rt::Some(#v)),
        None => quote!(__rt::None),
    }
}

/// `let __f: <fty> = super::<fname><targs>;` spanned on the function's name, `__f` at the call
/// site (see [`typed_binding`]).
pub(crate) fn reference_binding(fname: &syn::Ident, fty: &TokenStream, targs: TokenStream) -> TokenStream {
    let f = syn::Ident::new("__f", Span::call_site());
    quote_spanned!(fname.span()=> let #f: #fty = super::#fname #targs;)
}

/// The composite builder, typed where it is named.
pub(crate) fn composite(plan: &ShimPlan) -> Option<TokenStream> {
    plan.composite.as_ref().map(|p| {
        let p = rebase(p);
        let span = path_span(&p);
        quote_spanned!(span=> { let __g: ::op_runtime::__private::CompositeFn = #p; __g })
    })
}
