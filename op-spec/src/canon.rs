//! Canonical tokens: the reference function's code as whitespace- and comment-free text, and
//! the doc comment. The identity that hashes them (and its exact encoding) lives in
//! `op_contract::identity` and is re-exported here. This module computes and must not decide
//! anything.

pub use op_contract::identity::{contract_json, hex, identity, KernelBytes, IDENTITY_TAG};
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// Canonical text of a token stream: tokens separated by single spaces, joint punctuation
/// kept together, groups as their delimiters; independent of whitespace and comments.
pub fn canonical_tokens(ts: TokenStream) -> String {
    let mut out = String::new();
    write_tokens(ts, &mut out);
    out
}

fn write_tokens(ts: TokenStream, out: &mut String) {
    let mut joint = false;
    for tt in ts {
        if !out.is_empty() && !joint && !out.ends_with(' ') {
            out.push(' ');
        }
        joint = false;
        match tt {
            TokenTree::Group(g) => {
                let (o, c) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(o);
                let mut inner = String::new();
                write_tokens(g.stream(), &mut inner);
                out.push_str(&inner);
                out.push_str(c);
            }
            TokenTree::Ident(i) => out.push_str(&i.to_string()),
            TokenTree::Punct(p) => {
                out.push(p.as_char());
                joint = p.spacing() == Spacing::Joint;
            }
            TokenTree::Literal(l) => out.push_str(&l.to_string()),
        }
    }
}

/// The reference body's canonical tokens: signature and block, without outer attributes.
pub fn body_tokens(func: &syn::ItemFn) -> String {
    let sig = &func.sig;
    let block = &func.block;
    canonical_tokens(quote::quote!(#sig #block))
}

/// The doc comment of an item, lines joined with `\n`, common leading space removed.
pub fn doc_comment(attrs: &[syn::Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let strip = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
    lines
        .iter()
        .map(|l| if l.len() >= strip { l[strip..].to_string() } else { String::new() })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn tokens_ignore_layout_but_not_content() {
        let a: syn::ItemFn = syn::parse2(quote!(
            fn f(x: &[f32]) -> Vec<f32> {
                x.iter().map(|v| v * 2.0).collect()
            }
        ))
        .unwrap();
        let b: syn::ItemFn =
            syn::parse_str("/// doc\nfn f(x:&[f32])->Vec<f32>{\n  // comment\n  x.iter()\n   .map(|v|v*2.0).collect()\n}").unwrap();
        let c: syn::ItemFn = syn::parse2(quote!(
            fn f(x: &[f32]) -> Vec<f32> {
                x.iter().map(|v| v * 3.0).collect()
            }
        ))
        .unwrap();
        assert_eq!(body_tokens(&a), body_tokens(&b));
        assert_ne!(body_tokens(&a), body_tokens(&c));
        assert!(body_tokens(&a).contains("-> Vec < f32 >"), "{}", body_tokens(&a));
    }
}
