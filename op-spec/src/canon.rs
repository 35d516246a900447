//! Canonical tokens: the reference function's code as whitespace- and comment-free text, and
//! the doc comment. The identity that hashes them (and its exact encoding) lives in
//! `op_contract::identity` and is re-exported here. This module computes and must not decide
//! anything.

use crate::reference::RefFn;
pub use op_contract::identity::{contract_json, hex, identity, KernelBytes, IDENTITY_TAG};
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// Canonical text of a token stream: tokens separated by single spaces, joint punctuation
/// kept together, groups as their delimiters; independent of whitespace and comments. Walks
/// nested groups with an explicit stack, so no nesting depth can exhaust the macro's stack.
pub fn canonical_tokens(ts: TokenStream) -> String {
    canonical(ts, false)
}

/// [`canonical_tokens`] without doc comments (`#[doc = ..]` and `#![doc = ..]` at any depth):
/// an item's code, attributes included, whose documentation does not count.
pub fn canonical_code(ts: TokenStream) -> String {
    canonical(ts, true)
}

/// Whether `iter` continues with a doc attribute after a `#`: `[doc ..]` or `![doc ..]`; if so,
/// it is consumed.
fn skip_doc(iter: &mut std::iter::Peekable<proc_macro2::token_stream::IntoIter>) -> bool {
    let is_doc = |t: Option<&TokenTree>| match t {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket => {
            matches!(g.stream().into_iter().next(), Some(TokenTree::Ident(i)) if i == "doc")
        }
        _ => false,
    };
    let mut ahead = iter.clone();
    if matches!(ahead.peek(), Some(TokenTree::Punct(p)) if p.as_char() == '!') {
        ahead.next();
    }
    if !is_doc(ahead.peek()) {
        return false;
    }
    ahead.next();
    *iter = ahead;
    true
}

fn canonical(ts: TokenStream, skip_docs: bool) -> String {
    let mut out = String::new();
    // Each frame: the remaining tokens of a group and its closing delimiter.
    type Frame = (std::iter::Peekable<proc_macro2::token_stream::IntoIter>, &'static str);
    let mut stack: Vec<Frame> = vec![(ts.into_iter().peekable(), "")];
    let mut joint = false;
    while let Some((iter, close)) = stack.last_mut() {
        let Some(tt) = iter.next() else {
            out.push_str(close);
            stack.pop();
            joint = false;
            continue;
        };
        if skip_docs && matches!(&tt, TokenTree::Punct(p) if p.as_char() == '#') && skip_doc(iter) {
            continue;
        }
        if !out.is_empty() && !joint && !out.ends_with(' ') && !out.ends_with(['(', '{', '[']) {
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
                stack.push((g.stream().into_iter().peekable(), c));
            }
            TokenTree::Ident(i) => out.push_str(&i.to_string()),
            TokenTree::Punct(p) => {
                out.push(p.as_char());
                joint = p.spacing() == Spacing::Joint;
            }
            TokenTree::Literal(l) => out.push_str(&l.to_string()),
        }
    }
    out
}

/// The reference body's canonical tokens: signature and block, without outer attributes.
pub fn body_tokens(func: &RefFn) -> String {
    let sig = &func.sig;
    let body = &func.body;
    canonical_tokens(quote::quote!(#sig #body))
}

/// The doc comment of an item, lines joined with `\n`, common leading whitespace removed
/// (counted in characters, so any Unicode whitespace is removed whole).
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
    let indent = |l: &str| l.chars().take_while(|c| c.is_whitespace()).count();
    let strip = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| indent(l)).min().unwrap_or(0);
    lines.iter().map(|l| l.chars().skip(strip.min(indent(l))).collect::<String>()).collect::<Vec<_>>().join("\n").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn tokens_ignore_layout_but_not_content() {
        let a: RefFn = syn::parse2(quote!(
            fn f(x: &[f32]) -> Vec<f32> {
                x.iter().map(|v| v * 2.0).collect()
            }
        ))
        .unwrap();
        let b: RefFn =
            syn::parse_str("/// doc\nfn f(x:&[f32])->Vec<f32>{\n  // comment\n  x.iter()\n   .map(|v|v*2.0).collect()\n}").unwrap();
        let c: RefFn = syn::parse2(quote!(
            fn f(x: &[f32]) -> Vec<f32> {
                x.iter().map(|v| v * 3.0).collect()
            }
        ))
        .unwrap();
        assert_eq!(body_tokens(&a), body_tokens(&b));
        assert_ne!(body_tokens(&a), body_tokens(&c));
        assert!(body_tokens(&a).contains("-> Vec < f32 >"), "{}", body_tokens(&a));
    }

    #[test]
    fn doc_comments_with_unicode_indentation() {
        let f: RefFn = syn::parse_str("/// \u{3000}Ideographic space first.\n///  \u{3000}b\n/// \n fn f() {}").unwrap();
        // `///` leaves one space; the lines share two characters of indentation, the second has a third.
        assert_eq!(doc_comment(&f.attrs), "Ideographic space first.\n\u{3000}b");
        let deep: TokenStream = format!("{}x{}", "(".repeat(20_000), ")".repeat(20_000)).parse().unwrap();
        assert_eq!(canonical_tokens(deep).len(), 40_001);
    }
}
