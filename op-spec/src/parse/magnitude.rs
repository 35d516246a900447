//! Parsing of `magnitude(x: 1e-3..30, y: 0.1..10)`: the range of `|value|` each float input is
//! meant for, where gradcheck draws its values. Syntax and the range's own sense only: which names are float inputs,
//! and whether a range meets the input's domain, is `check`'s.

use crate::model::{SMagnitude, SpanRange};
use syn::parse::ParseStream;
use syn::{Ident, Token};

/// A positive finite number: an integer or float literal.
fn parse_bound(input: ParseStream, what: &str) -> syn::Result<(f64, proc_macro2::Span)> {
    if input.peek(Token![-]) {
        return Err(input.error(format!(
            "the {what} magnitude is negative: a magnitude range bounds `|x|` (both signs are drawn), e.g. `x: 1e-3..10`"
        )));
    }
    let lit: syn::Lit =
        input.parse().map_err(|e| syn::Error::new(e.span(), format!("expected the {what} magnitude, a number, e.g. `x: 1e-3..10`")))?;
    let v = match &lit {
        syn::Lit::Float(f) => f.base10_parse::<f64>()?,
        syn::Lit::Int(i) => i.base10_parse::<f64>()?,
        _ => return Err(syn::Error::new(lit.span(), format!("expected the {what} magnitude, a number, e.g. `x: 1e-3..10`"))),
    };
    if !(v > 0.0 && v.is_finite()) {
        return Err(syn::Error::new(
            lit.span(),
            format!("the {what} magnitude must be above 0 and finite: a magnitude range bounds `|x|` away from 0, e.g. `x: 1e-3..10`"),
        ));
    }
    Ok((v, lit.span()))
}

/// One entry, `x: lo..hi`.
fn parse_entry(input: ParseStream) -> syn::Result<SMagnitude> {
    let name: Ident = input.parse().map_err(|e| syn::Error::new(e.span(), "expected an input name, e.g. `magnitude(x: 1e-3..10)`"))?;
    if !input.peek(Token![:]) {
        return Err(syn::Error::new(name.span(), format!("expected `{name}: lo..hi`, e.g. `{name}: 1e-3..10`")));
    }
    input.parse::<Token![:]>()?;
    let (lo, lo_span) = parse_bound(input, "smallest")?;
    if !input.peek(Token![..]) || input.peek(Token![..=]) {
        return Err(input.error(format!("expected `..` and the largest magnitude, e.g. `{name}: 1e-3..10`")));
    }
    input.parse::<Token![..]>()?;
    let (hi, hi_span) = parse_bound(input, "largest")?;
    let span = SpanRange { first: name.span(), last: hi_span };
    if lo > hi {
        return Err(syn::Error::new(
            lo_span,
            format!("the magnitude range of `{name}` is empty: {lo:e} is above {hi:e}; write the smaller first"),
        ));
    }
    Ok(SMagnitude { input: name, lo, hi, span })
}

/// The content of `magnitude(...)`: one range per input, comma-separated.
pub fn parse_magnitude(input: ParseStream) -> syn::Result<Vec<SMagnitude>> {
    let kw: Ident = input.parse()?;
    if !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(kw.span(), "expected `magnitude(x: 1e-3..10)`: one range of `|x|` per float input"));
    }
    let content;
    syn::parenthesized!(content in input);
    let entries = content.parse_terminated(parse_entry, Token![,])?;
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after `magnitude(...)`; separate keys with `,`"));
    }
    let mut out: Vec<SMagnitude> = Vec::new();
    for m in entries {
        if out.iter().any(|o| o.input == m.input) {
            return Err(syn::Error::new(m.input.span(), format!("the magnitude range of `{}` is declared twice; write it once", m.input)));
        }
        out.push(m);
    }
    if out.is_empty() {
        return Err(syn::Error::new(kw.span(), "`magnitude()` is empty: name at least one input, e.g. `magnitude(x: 1e-3..10)`"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;
    use syn::parse::Parser;

    fn ranges(t: proc_macro2::TokenStream) -> syn::Result<Vec<String>> {
        Ok(parse_magnitude.parse2(t)?.iter().map(|m| m.to_magnitude().to_string()).collect())
    }

    #[test]
    fn entries_become_ranges() {
        assert_eq!(ranges(quote!(magnitude(x: 1e-3..30))).unwrap(), ["x: 1e-3..3e1"]);
        assert_eq!(ranges(quote!(magnitude(x: 1..30, y: 0.5..0.5,))).unwrap(), ["x: 1e0..3e1", "y: 5e-1..5e-1"]);
    }

    #[test]
    fn malformed_ranges_say_why() {
        let err = |t| ranges(t).unwrap_err().to_string();
        assert!(err(quote!(magnitude(x: 0..10))).contains("above 0"));
        assert!(err(quote!(magnitude(x: -1..10))).contains("negative"));
        assert!(err(quote!(magnitude(x: 10..1))).contains("empty"));
        assert!(err(quote!(magnitude(x: 1..=10))).contains("expected `..`"));
        assert!(err(quote!(magnitude(x 1..10))).contains("expected `x: lo..hi`"));
        assert!(err(quote!(magnitude(x: 1..2, x: 1..3))).contains("declared twice"));
        assert!(err(quote!(magnitude())).contains("empty"));
        assert!(err(quote!(magnitude(x: "a"..2))).contains("a number"));
        assert!(err(quote!(magnitude(x: 1e400..1e401))).contains("finite"));
    }
}
