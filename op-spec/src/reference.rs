//! The reference function's Rust signature against the op's shape signature: one slice per
//! tensor input, one value per parameter, then optional `usize` dims, returning one `Vec` per
//! output. Owns that rule and the facts the expansion needs; it generates no code.

use crate::contract::DType;
use crate::ctxt::Ctxt;
use crate::model::{SArg, SSignature};
use syn::spanned::Spanned;
use syn::{FnArg, GenericParam, Pat, ReturnType, Type};

/// What the expansion needs to know about the reference function.
#[derive(Clone, Debug, Default)]
pub struct RefShape {
    /// The float type parameter (`T` in `fn f<T: Real>`), if the reference is generic.
    pub float_generic: Option<syn::Ident>,
    /// Trailing `usize` parameters naming dim symbols, in order.
    pub extra_dims: Vec<String>,
}

/// The Rust element type name of a dtype (last path segment).
pub fn rust_elem_name(d: DType) -> &'static str {
    d.name()
}

fn last_ident(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.to_string()),
        Type::Paren(p) => last_ident(&p.elem),
        Type::Group(g) => last_ident(&g.elem),
        _ => None,
    }
}

/// Whether `ty` names the element type for `dtype` (the generic parameter for floats if any).
fn elem_matches(ty: &Type, dtype: DType, generic: Option<&syn::Ident>) -> bool {
    let Some(name) = last_ident(ty) else { return false };
    if dtype.is_float() {
        if let Some(g) = generic {
            if *g == name {
                return true;
            }
        }
    }
    name == rust_elem_name(dtype)
}

fn expected_elem(dtype: DType, generic: Option<&syn::Ident>) -> String {
    match generic {
        Some(g) if dtype.is_float() => g.to_string(),
        _ => rust_elem_name(dtype).to_string(),
    }
}

/// Checks the reference function against the signature: it must agree on parameter count,
/// order and types, and return one `Vec` per output.
pub fn check_reference_fn(cx: &Ctxt, func: &syn::ItemFn, sig: &SSignature, dim_symbols: &[String]) -> RefShape {
    let fname = &func.sig.ident;
    let mut shape = RefShape::default();
    // Rule: at most one type parameter, the float element type.
    let types: Vec<&syn::TypeParam> = func
        .sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            GenericParam::Type(t) => Some(t),
            _ => None,
        })
        .collect();
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
    shape.float_generic = types.first().map(|t| t.ident.clone());
    let generic = shape.float_generic.as_ref();
    if let Some(g) = generic {
        let any_float = sig.args.iter().any(|a| match a {
            SArg::Tensor(t) => t.dtype.value.is_float(),
            SArg::Param(p) => p.dtype.value.is_float(),
        }) || sig.outputs.iter().any(|o| o.dtype.value.is_float());
        if !any_float {
            cx.error(syn::Error::new(
                g.span(),
                format!("reference `{fname}` is generic over `{g}` but the signature has no float tensor; remove the type parameter"),
            ));
        }
    }
    if let Some(a) = &func.sig.asyncness {
        cx.error(syn::Error::new(a.span, format!("reference `{fname}` must be a plain function, not `async`")));
    }

    let params: Vec<&FnArg> = func.sig.inputs.iter().collect();
    let expected = sig.args.len();
    for (i, arg) in sig.args.iter().enumerate() {
        let Some(fa) = params.get(i) else {
            let missing: Vec<String> = sig.args[i..].iter().map(|a| format!("`{}`", a.ident())).collect();
            cx.error(syn::Error::new(
                func.sig.paren_token.span.close(),
                format!(
                    "reference `{fname}` takes {} parameter(s) but the signature declares {expected}; add {} (a slice per tensor input, a value per parameter, in signature order)",
                    params.len(),
                    missing.join(", ")
                ),
            ));
            break;
        };
        let FnArg::Typed(pt) = fa else {
            cx.error(syn::Error::new(fa.span(), format!("reference `{fname}` must be a free function, not a method")));
            continue;
        };
        match arg {
            SArg::Tensor(t) => {
                let want = format!("&[{}]", expected_elem(t.dtype.value, generic));
                let ok = match &*pt.ty {
                    Type::Reference(r) if r.mutability.is_none() => match &*r.elem {
                        Type::Slice(s) => elem_matches(&s.elem, t.dtype.value, generic),
                        _ => false,
                    },
                    _ => false,
                };
                if !ok {
                    cx.error(syn::Error::new_spanned(
                        &pt.ty,
                        format!(
                            "parameter {} of reference `{fname}` is tensor input `{}: {}[..]` and must be `{want}`",
                            i + 1,
                            t.name,
                            t.dtype.value
                        ),
                    ));
                }
            }
            SArg::Param(p) => {
                let want = expected_elem(p.dtype.value, generic);
                if !elem_matches(&pt.ty, p.dtype.value, generic) || matches!(&*pt.ty, Type::Reference(_)) {
                    cx.error(syn::Error::new_spanned(
                        &pt.ty,
                        format!(
                            "parameter {} of reference `{fname}` is scalar parameter `{}: {}` and must be `{want}`",
                            i + 1,
                            p.name,
                            p.dtype.value
                        ),
                    ));
                }
            }
        }
    }
    // Rule: extra trailing parameters are `usize` dims named after bound dim symbols.
    for fa in params.iter().skip(expected) {
        let FnArg::Typed(pt) = fa else { continue };
        let name = match &*pt.pat {
            Pat::Ident(pi) => Some(pi.ident.to_string()),
            _ => None,
        };
        let is_usize = last_ident(&pt.ty).as_deref() == Some("usize");
        match name {
            Some(n) if is_usize && dim_symbols.contains(&n) => shape.extra_dims.push(n),
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
    // Rule: the return type is one `Vec` per output.
    let want_one = |o: &crate::model::STensor| format!("Vec<{}>", expected_elem(o.dtype.value, generic));
    let vec_ok = |ty: &Type, o: &crate::model::STensor| -> bool {
        if let Type::Path(p) = ty {
            if let Some(seg) = p.path.segments.last() {
                if seg.ident == "Vec" {
                    if let syn::PathArguments::AngleBracketed(ab) = &seg.arguments {
                        if let Some(syn::GenericArgument::Type(t)) = ab.args.first() {
                            return elem_matches(t, o.dtype.value, generic);
                        }
                    }
                }
            }
        }
        false
    };
    let want_all = if sig.outputs.len() == 1 {
        want_one(&sig.outputs[0])
    } else {
        format!("({})", sig.outputs.iter().map(want_one).collect::<Vec<_>>().join(", "))
    };
    match &func.sig.output {
        ReturnType::Default => cx.error(syn::Error::new(
            func.sig.ident.span(),
            format!("reference `{fname}` returns nothing but the signature declares output(s); return `{want_all}`"),
        )),
        ReturnType::Type(_, ty) => {
            let ok = if sig.outputs.len() == 1 {
                vec_ok(ty, &sig.outputs[0])
            } else if let Type::Tuple(t) = &**ty {
                t.elems.len() == sig.outputs.len() && t.elems.iter().zip(&sig.outputs).all(|(e, o)| vec_ok(e, o))
            } else {
                false
            };
            if !ok {
                cx.error(syn::Error::new_spanned(
                    ty,
                    format!("reference `{fname}` must return `{want_all}` (one `Vec` per declared output), in output order"),
                ));
            }
        }
    }
    shape
}
