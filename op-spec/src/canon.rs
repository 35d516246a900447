//! Canonical encoding and identity. The identity of an op is
//!
//! ```text
//! blake3( "op-identity/1\n"
//!         ‖ frame(contract_json)          -- serde_json of `Contract`, fixed field order, no spaces
//!         ‖ frame(body_tokens)            -- the reference fn's signature and block, one token
//!                                            per space-separated word (see `canonical_tokens`)
//!         ‖ u64le(kernel count)
//!         ‖ for each kernel in declaration order:
//!               frame(path) ‖ frame(bytes) ‖ u64le(header count)
//!               ‖ for each `#include`d header, sorted by path: frame(path) ‖ frame(bytes) )
//! ```
//!
//! where `frame(b) = u64le(len(b)) ‖ b`. Whitespace, comments and attribute key order do not
//! change it (the contract is rebuilt from the parsed model; tokens carry no layout); any byte of
//! the contract, the reference body or a kernel does. Doc comments are the op's description and
//! are excluded, as are the bodies of the backward rules (gradcheck checks those at run time).
//! This module computes and must not decide anything.

use crate::contract::Contract;
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// Version tag of the identity encoding.
pub const IDENTITY_TAG: &[u8] = b"op-identity/1\n";

/// The canonical JSON text of a contract.
pub fn contract_json(c: &Contract) -> String {
    // Serialising plain structs and enums to a String cannot fail.
    serde_json::to_string(c).unwrap_or_default()
}

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

/// One kernel's bytes as hashed: (path, source bytes, sorted headers as (path, bytes)).
pub struct KernelBytes<'a> {
    /// The kernel path as declared.
    pub path: &'a str,
    /// The kernel source bytes.
    pub bytes: &'a [u8],
    /// Included headers as (path, bytes); sorted before hashing.
    pub headers: Vec<(&'a str, &'a [u8])>,
}

fn frame(h: &mut blake3::Hasher, b: &[u8]) {
    h.update(&(b.len() as u64).to_le_bytes());
    h.update(b);
}

/// The identity hash (see the module documentation for the exact encoding).
pub fn identity(contract_json: &str, body_tokens: &str, kernels: &[KernelBytes<'_>]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(IDENTITY_TAG);
    frame(&mut h, contract_json.as_bytes());
    frame(&mut h, body_tokens.as_bytes());
    h.update(&(kernels.len() as u64).to_le_bytes());
    for k in kernels {
        frame(&mut h, k.path.as_bytes());
        frame(&mut h, k.bytes);
        let mut headers = k.headers.clone();
        headers.sort_by(|a, b| a.0.cmp(b.0));
        h.update(&(headers.len() as u64).to_le_bytes());
        for (p, b) in headers {
            frame(&mut h, p.as_bytes());
            frame(&mut h, b);
        }
    }
    *h.finalize().as_bytes()
}

/// Lowercase hex of a hash.
pub fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
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

    #[test]
    fn identity_frames_every_part() {
        let k = |b: &'static [u8]| vec![KernelBytes { path: "k.wgsl", bytes: b, headers: vec![] }];
        let base = identity("{}", "fn f", &k(b"abc"));
        assert_eq!(base, identity("{}", "fn f", &k(b"abc")));
        assert_ne!(base, identity("{}", "fn f", &k(b"abd")));
        assert_ne!(base, identity("{} ", "fn f", &k(b"abc")));
        assert_ne!(base, identity("{}", "fn g", &k(b"abc")));
        // Framing: moving a byte across a boundary changes the hash.
        assert_ne!(identity("ab", "c", &[]), identity("a", "bc", &[]));
        let with_header = vec![KernelBytes { path: "k.cu", bytes: b"x", headers: vec![("h.cuh", b"1")] }];
        let other_header = vec![KernelBytes { path: "k.cu", bytes: b"x", headers: vec![("h.cuh", b"2")] }];
        assert_ne!(identity("{}", "", &with_header), identity("{}", "", &other_header));
    }
}
