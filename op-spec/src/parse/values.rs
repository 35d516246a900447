//! Parsing of the keys about values: `signed_zero = exact | ignore`, `domain(x > 0, -1 <= y <= 1, ...)`, each input's
//! interval of admissible values, and `broadcast = numpy`, how operands of different shapes
//! combine. Syntax only: which names are float inputs, and which signatures broadcast, is `check`'s.

use crate::contract::{Broadcast, CmpOp, DomainBound, SignedZero};
use crate::model::{SDomain, SpanRange, Spanned};
use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::{Ident, Token};

/// The value of `signed_zero = ...`.
pub fn parse_signed_zero(input: ParseStream) -> syn::Result<Spanned<SignedZero>> {
    let id = super::parse_word(input, "signed_zero", &["exact", "ignore"])?;
    let v = match id.to_string().as_str() {
        "exact" => SignedZero::Exact,
        "ignore" => SignedZero::Ignore,
        other => {
            return Err(syn::Error::new(
                id.span(),
                format!(
                "unknown `signed_zero` value `{other}`; valid: exact (the default: -0 and +0 differ), ignore (compared by IEEE equality)"
            ),
            ))
        }
    };
    Ok(Spanned::new(v, SpanRange::single(id.span())))
}

/// The value of `broadcast = ...`.
pub fn parse_broadcast(input: ParseStream) -> syn::Result<Spanned<Broadcast>> {
    let id = super::parse_word(input, "broadcast", &["numpy"])?;
    match id.to_string().as_str() {
        "numpy" => Ok(Spanned::new(Broadcast::Numpy, SpanRange::single(id.span()))),
        other => Err(syn::Error::new(
            id.span(),
            format!(
                "unknown `broadcast` value `{other}`; valid: numpy (operands broadcast by numpy's rules; omit the key for equal shapes)"
            ),
        )),
    }
}

/// One term of a domain chain: the input's name or a number (optionally negated).
enum Term {
    Name(Ident),
    Num(f64, Span),
}

fn parse_term(input: ParseStream) -> syn::Result<Term> {
    if input.peek(Ident) {
        return Ok(Term::Name(input.parse()?));
    }
    let neg = if input.peek(Token![-]) {
        input.parse::<Token![-]>()?;
        true
    } else {
        false
    };
    let lit: syn::Lit = input.parse().map_err(|e| syn::Error::new(e.span(), "expected an input name or a number, e.g. `x > 0`"))?;
    let v = match &lit {
        syn::Lit::Float(f) => f.base10_parse::<f64>()?,
        syn::Lit::Int(i) => i.base10_parse::<f64>()?,
        _ => return Err(syn::Error::new(lit.span(), "expected a number, e.g. `x > 0` or `-1 <= x <= 1`")),
    };
    if !v.is_finite() {
        return Err(syn::Error::new(lit.span(), "a domain bound must be finite"));
    }
    Ok(Term::Num(if neg { -v } else { v }, lit.span()))
}

fn parse_cmp(input: ParseStream) -> syn::Result<Option<(CmpOp, Span)>> {
    let span = input.span();
    let op = if input.peek(Token![<=]) {
        input.parse::<Token![<=]>()?;
        CmpOp::Le
    } else if input.peek(Token![>=]) {
        input.parse::<Token![>=]>()?;
        CmpOp::Ge
    } else if input.peek(Token![==]) || input.peek(Token![!=]) {
        return Err(input.error("a domain is an interval: compare with `<`, `<=`, `>` or `>=` (e.g. `x > 0`)"));
    } else if input.peek(Token![<]) {
        input.parse::<Token![<]>()?;
        CmpOp::Lt
    } else if input.peek(Token![>]) {
        input.parse::<Token![>]>()?;
        CmpOp::Gt
    } else {
        return Ok(None);
    };
    Ok(Some((op, span)))
}

/// Narrows `d` by `name op value` (the name on the left).
fn apply(d: &mut SDomain, op: CmpOp, value: f64) {
    let b = |inclusive| Some(DomainBound { value, inclusive });
    let tighter_lo = |cur: Option<DomainBound>, new: Option<DomainBound>| match (cur, new) {
        (Some(c), Some(n)) if c.value > n.value || (c.value == n.value && !c.inclusive) => Some(c),
        (_, n) => n,
    };
    let tighter_hi = |cur: Option<DomainBound>, new: Option<DomainBound>| match (cur, new) {
        (Some(c), Some(n)) if c.value < n.value || (c.value == n.value && !c.inclusive) => Some(c),
        (_, n) => n,
    };
    match op {
        CmpOp::Gt => d.lo = tighter_lo(d.lo, b(false)),
        CmpOp::Ge => d.lo = tighter_lo(d.lo, b(true)),
        CmpOp::Lt => d.hi = tighter_hi(d.hi, b(false)),
        CmpOp::Le => d.hi = tighter_hi(d.hi, b(true)),
        CmpOp::Eq | CmpOp::Ne => {}
    }
}

fn holds(op: CmpOp, a: f64, b: f64) -> bool {
    match op {
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::Eq | CmpOp::Ne => false,
    }
}

fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        o => o,
    }
}

/// One chain, e.g. `x > 0` or `-1 <= x <= 1`: exactly one input name, numbers elsewhere.
fn parse_chain(input: ParseStream) -> syn::Result<SDomain> {
    let start = input.span();
    let mut terms = vec![parse_term(input)?];
    let mut ops = Vec::new();
    while let Some(op) = parse_cmp(input)? {
        ops.push(op);
        terms.push(parse_term(input)?);
    }
    let names: Vec<&Ident> = terms.iter().filter_map(|t| if let Term::Name(i) = t { Some(i) } else { None }).collect();
    let [name] = names.as_slice() else {
        let msg = "a domain compares one input with numbers, e.g. `x > 0` or `-1 <= x <= 1`";
        return Err(syn::Error::new(names.get(1).map_or(start, |i| i.span()), msg));
    };
    if ops.is_empty() {
        return Err(syn::Error::new(name.span(), format!("`{name}` alone is not a domain: compare it with a number, e.g. `{name} > 0`")));
    }
    let mut d = SDomain { input: (*name).clone(), lo: None, hi: None, span: SpanRange::single(start) };
    for (k, (op, _)) in ops.iter().enumerate() {
        // Each comparison next to the name bounds it; comparisons between two numbers (`0 < 1 <
        // x`) only have to hold.
        let (l, r) = (&terms[k], &terms[k + 1]);
        match (l, r) {
            (Term::Name(_), Term::Num(v, _)) => apply(&mut d, *op, *v),
            (Term::Num(v, _), Term::Name(_)) => apply(&mut d, flip(*op), *v),
            (Term::Num(a, s), Term::Num(b, _)) if !holds(*op, *a, *b) => {
                return Err(syn::Error::new(*s, "this comparison of two numbers is false: the domain would be empty"))
            }
            _ => {}
        }
    }
    let last = match &terms[terms.len() - 1] {
        Term::Name(i) => i.span(),
        Term::Num(_, s) => *s,
    };
    d.span = SpanRange { first: start, last };
    Ok(d)
}

/// The content of `domain(...)`: one chain per input, comma-separated.
pub fn parse_domain(input: ParseStream) -> syn::Result<Vec<SDomain>> {
    let kw: Ident = input.parse()?;
    if !input.peek(syn::token::Paren) {
        return Err(syn::Error::new(
            kw.span(),
            "expected `domain(x > 0)`: one interval per float input, e.g. `domain(x > 0, -1 <= y <= 1)`",
        ));
    }
    let content;
    syn::parenthesized!(content in input);
    let chains = content.parse_terminated(parse_chain, Token![,])?;
    if !input.is_empty() {
        return Err(input.error("unexpected tokens after `domain(...)`; separate keys with `,`"));
    }
    let mut out: Vec<SDomain> = Vec::new();
    for d in chains {
        if out.iter().any(|o| o.input == d.input) {
            return Err(syn::Error::new(
                d.input.span(),
                format!("the domain of `{}` is declared twice; write it as one interval", d.input),
            ));
        }
        if d.to_domain().is_empty() {
            return Err(d.span.error(format!("the domain of `{}` is empty: no value satisfies it", d.input)));
        }
        out.push(d);
    }
    if out.is_empty() {
        return Err(syn::Error::new(kw.span(), "`domain()` is empty: name at least one input, e.g. `domain(x > 0)`"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;
    use syn::parse::Parser;

    fn domains(t: proc_macro2::TokenStream) -> syn::Result<Vec<String>> {
        Ok(parse_domain.parse2(t)?.iter().map(|d| d.to_domain().to_string()).collect())
    }

    #[test]
    fn chains_become_intervals() {
        assert_eq!(domains(quote!(domain(x > 0))).unwrap(), ["x > 0.0"]);
        assert_eq!(domains(quote!(domain(0 < x))).unwrap(), ["x > 0.0"]);
        assert_eq!(domains(quote!(domain(-1 <= x <= 1.5, y >= 2))).unwrap(), ["-1.0 <= x <= 1.5", "y >= 2.0"]);
        assert_eq!(domains(quote!(domain(x < 3,))).unwrap(), ["x < 3.0"]);
    }

    #[test]
    fn malformed_domains_say_why() {
        let err = |t| domains(t).unwrap_err().to_string();
        assert!(err(quote!(domain(x == 0))).contains("interval"));
        assert!(err(quote!(domain(x))).contains("alone is not a domain"));
        assert!(err(quote!(domain(x > y))).contains("one input with numbers"));
        assert!(err(quote!(domain(1 < x < 0))).contains("empty"));
        assert!(err(quote!(domain(x > 0, x < 1))).contains("declared twice"));
        assert!(err(quote!(domain())).contains("empty"));
        assert!(err(quote!(domain(x > "a"))).contains("number"));
    }

    #[test]
    fn broadcast_values() {
        assert_eq!(parse_broadcast.parse2(quote!(numpy)).unwrap().value, Broadcast::Numpy);
        assert!(parse_broadcast.parse2(quote!(torch)).unwrap_err().to_string().contains("valid: numpy"));
    }

    #[test]
    fn signed_zero_values() {
        assert_eq!(parse_signed_zero.parse2(quote!(ignore)).unwrap().value, SignedZero::Ignore);
        assert_eq!(parse_signed_zero.parse2(quote!(exact)).unwrap().value, SignedZero::Exact);
        assert!(parse_signed_zero.parse2(quote!(sometimes)).unwrap_err().to_string().contains("valid: exact"));
        // A string: the same word without quotes, on the string's token.
        let e = parse_signed_zero.parse2(quote!("ignore")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`signed_zero` takes a bare word, not a string: write `signed_zero = ignore` without quotes (valid: exact, ignore)"
        );
        let e = parse_signed_zero.parse2(quote!("never")).unwrap_err();
        assert_eq!(e.to_string(), "`signed_zero` takes a bare word, not a string; valid: exact, ignore");
        let e = parse_signed_zero.parse2(quote!(0)).unwrap_err();
        assert_eq!(e.to_string(), "expected a value for `signed_zero`; valid: exact, ignore");
    }
}
