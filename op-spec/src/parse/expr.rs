//! Grammar 1's expressions and constraints. Every recursion is bounded: nesting (parentheses,
//! unary `-`, `min`/`max`) and the depth and size of the tree are limited while parsing, so no
//! input can exhaust the macro's stack or memory, and every accepted expression fits the
//! contract's JSON (`op_contract::contract::MAX_EXPR_DEPTH`). Syntax only: meaning is `check`'s.

use super::sr;
use crate::contract::{BinOp, CmpOp, MAX_EXPR_DEPTH};
use crate::model::*;
use proc_macro2::{Span, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::{Ident, LitFloat, LitInt, Token};

/// The most symbols, literals and operators one expression may hold.
pub const MAX_EXPR_NODES: usize = 256;

/// Parse state of one expression: nesting so far, nodes built, and whether float literals are
/// terms (in constraints only).
struct Nest {
    depth: usize,
    nodes: usize,
    floats: bool,
}

impl Nest {
    /// One level deeper (a parenthesis, a unary `-`, a `min`/`max`), refused past the limit at
    /// the token that opens it.
    fn enter(&mut self, at: Span) -> syn::Result<()> {
        self.depth += 1;
        if self.depth > MAX_EXPR_DEPTH {
            return Err(syn::Error::new(
                at,
                format!("expression nested too deeply: more than {MAX_EXPR_DEPTH} levels of parentheses, unary `-` or `min`/`max`; the nesting limit keeps the macro's stack and the contract's JSON bounded, so simplify the expression"),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// A new node, refused if it makes the tree too deep or too large (at `at`, its operator).
    fn node(&mut self, kind: SExprKind, span: SpanRange, at: Span) -> syn::Result<SExpr> {
        self.nodes += 1;
        if self.nodes > MAX_EXPR_NODES {
            return Err(syn::Error::new(
                at,
                format!("expression too large: more than {MAX_EXPR_NODES} symbols, literals and operators; simplify it"),
            ));
        }
        let e = SExpr { kind, span };
        if e.depth() > MAX_EXPR_DEPTH {
            return Err(syn::Error::new(
                at,
                format!("expression too deep: more than {MAX_EXPR_DEPTH} nested operators (a chain of `k` terms nests `k - 1`), and the runtime reads contracts back with a fixed recursion limit; group long chains with parentheses, e.g. `(a + b) + (c + d)`"),
            ));
        }
        Ok(e)
    }
}

/// An integer expression: `+ - * / %`, unary `-`, `min(a, b)`, `max(a, b)`, parentheses.
pub fn parse_expr(input: ParseStream) -> syn::Result<SExpr> {
    parse_binary(input, 0, &mut Nest { depth: 0, nodes: 0, floats: false })
}

/// A constraint term: an expression that may also be a float literal (`0.5`, `1e-3`).
fn parse_term(input: ParseStream) -> syn::Result<SExpr> {
    parse_binary(input, 0, &mut Nest { depth: 0, nodes: 0, floats: true })
}

/// The text of an expression for messages.
pub(crate) fn expr_text(e: &SExpr) -> String {
    match e.float_literal() {
        None => e.to_expr().to_string(),
        Some(_) => "this expression".to_string(),
    }
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

/// A constraint: `term (cmp term)+`, each term an expression (or a float literal).
pub fn parse_constraint(input: ParseStream) -> syn::Result<SConstraint> {
    let first = parse_term(input)?;
    let mut terms = vec![first];
    let mut ops = Vec::new();
    while let Some(op) = parse_cmp(input)? {
        ops.push(op);
        terms.push(parse_term(input)?);
    }
    if ops.is_empty() {
        return Err(terms[0].span.error(format!(
            "`{}` is not a constraint: a constraint compares expressions with `<`, `<=`, `==`, `!=`, `>` or `>=`, e.g. `w % 2 == 1` or `1 <= w <= 31`",
            expr_text(&terms[0])
        )));
    }
    let span = terms[0].span.to(terms[terms.len() - 1].span);
    Ok(SConstraint { terms, ops, span })
}

fn parse_binary(input: ParseStream, min_prec: u8, nest: &mut Nest) -> syn::Result<SExpr> {
    let mut lhs = parse_unary(input, nest)?;
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
        let op_token: TokenTree = input.parse()?;
        // Precedence climbing recurses at most once per precedence level: bounded.
        let rhs = parse_binary(input, prec + 1, nest)?;
        let span = lhs.span.to(rhs.span);
        lhs = nest.node(SExprKind::Bin(op, Box::new(lhs), Box::new(rhs)), span, op_token.span())?;
    }
    Ok(lhs)
}

fn parse_unary(input: ParseStream, nest: &mut Nest) -> syn::Result<SExpr> {
    if input.peek(Token![-]) {
        let m: Token![-] = input.parse()?;
        nest.enter(m.span)?;
        let e = parse_unary(input, nest)?;
        nest.leave();
        let span = sr(m.span).to(e.span);
        return nest.node(SExprKind::Neg(Box::new(e)), span, m.span);
    }
    if input.peek(syn::token::Paren) {
        return parse_parenthesized(input, nest);
    }
    if input.peek(syn::Lit) {
        return parse_literal(input, nest);
    }
    if input.peek(Ident) {
        return parse_symbol_or_call(input, nest);
    }
    if input.is_empty() {
        return Err(input.error("expected an expression"));
    }
    let tt: TokenTree = input.parse()?;
    Err(syn::Error::new(tt.span(), format!("malformed expression: expected a symbol, an integer or `(`, found `{tt}`; expressions are built from symbols, integers, `+ - * / %`, `min(a, b)`, `max(a, b)` and parentheses")))
}

fn parse_parenthesized(input: ParseStream, nest: &mut Nest) -> syn::Result<SExpr> {
    let g: proc_macro2::Group = input.parse()?;
    if g.stream().is_empty() {
        return Err(syn::Error::new(g.span(), "empty parentheses: expected an expression"));
    }
    nest.enter(g.span_open())?;
    let e = Parser::parse2(
        |c: ParseStream| {
            let e = parse_binary(c, 0, nest)?;
            if !c.is_empty() {
                return Err(c.error("expected `)` after the expression"));
            }
            Ok(e)
        },
        g.stream(),
    )?;
    nest.leave();
    Ok(SExpr { kind: e.kind, span: SpanRange { first: g.span_open(), last: g.span_close() } })
}

fn parse_literal(input: ParseStream, nest: &mut Nest) -> syn::Result<SExpr> {
    if input.peek(LitInt) {
        let l: LitInt = input.parse()?;
        if !l.suffix().is_empty() && l.suffix() != "u" {
            return Err(syn::Error::new(
                l.span(),
                format!("literals in dims and constraints have no type suffix: write `{}`", l.base10_digits()),
            ));
        }
        let v: i64 =
            l.base10_digits().parse().map_err(|_| syn::Error::new(l.span(), "integer literal too large (at most 9223372036854775807)"))?;
        return nest.node(SExprKind::Lit(v), sr(l.span()), l.span());
    }
    if nest.floats && input.peek(LitFloat) {
        let l: LitFloat = input.parse()?;
        if !l.suffix().is_empty() {
            return Err(syn::Error::new(l.span(), format!("literals in constraints have no type suffix: write `{}`", l.base10_digits())));
        }
        let v: f64 = l.base10_parse()?;
        if !v.is_finite() {
            return Err(syn::Error::new(l.span(), "float literal out of range: it does not fit an f64"));
        }
        return nest.node(SExprKind::Float(v), sr(l.span()), l.span());
    }
    let l: syn::Lit = input.parse()?;
    let what = if nest.floats {
        "constraints compare integer expressions, or float parameters with numbers; expected a number or a symbol"
    } else {
        "dims, `threads` and `bounded(..)` are integer expressions; expected an integer literal or a symbol (float literals may appear only in constraints over float parameters)"
    };
    Err(syn::Error::new(l.span(), what))
}

fn parse_symbol_or_call(input: ParseStream, nest: &mut Nest) -> syn::Result<SExpr> {
    let id: Ident = input.parse()?;
    let s = id.to_string();
    if !((s == "min" || s == "max") && input.peek(syn::token::Paren)) {
        return nest.node(SExprKind::Sym(id.clone()), sr(id.span()), id.span());
    }
    let g: proc_macro2::Group = input.parse()?;
    if g.stream().is_empty() {
        return Err(syn::Error::new(g.span(), format!("`{s}` takes two arguments")));
    }
    nest.enter(id.span())?;
    let (a, b) = Parser::parse2(
        |c: ParseStream| {
            let a = parse_binary(c, 0, nest)?;
            c.parse::<Token![,]>()?;
            let b = parse_binary(c, 0, nest)?;
            if !c.is_empty() {
                return Err(c.error(format!("`{s}` takes two arguments")));
            }
            Ok((a, b))
        },
        g.stream(),
    )?;
    nest.leave();
    let span = SpanRange { first: id.span(), last: g.span_close() };
    let kind = if s == "min" { SExprKind::Min(Box::new(a), Box::new(b)) } else { SExprKind::Max(Box::new(a), Box::new(b)) };
    nest.node(kind, span, id.span())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::TokenStream;
    use quote::quote;

    fn expr(ts: TokenStream) -> Result<SExpr, String> {
        Parser::parse2(parse_expr, ts).map_err(|e| e.to_string())
    }

    #[test]
    fn expression_precedence_and_printing() {
        let e = expr(quote!(a - (b - c) * 2 + min(a, b) % 3)).unwrap().to_expr();
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
    fn deep_nesting_is_an_error_not_a_crash() {
        // (Deeper token trees are refused before parsing: `parse::too_deep`.)
        for depth in [MAX_EXPR_DEPTH + 1, 60] {
            let parens: TokenStream = format!("{}n{}", "(".repeat(depth), ")".repeat(depth)).parse().unwrap();
            assert!(expr(parens).unwrap_err().starts_with("expression nested too deeply"));
            let minus: TokenStream = format!("{}n", "- ".repeat(depth)).parse().unwrap();
            assert!(expr(minus).unwrap_err().starts_with("expression nested too deeply"));
            let mins: TokenStream = format!("{}n{}", "min(1, ".repeat(depth), ")".repeat(depth)).parse().unwrap();
            assert!(expr(mins).unwrap_err().starts_with("expression nested too deeply"));
        }
        let minus: TokenStream = format!("{}n", "- ".repeat(100_000)).parse().unwrap();
        assert!(expr(minus).unwrap_err().starts_with("expression nested too deeply"));
        let deep: TokenStream = format!("{}n{}", "(".repeat(3_000), ")".repeat(3_000)).parse().unwrap();
        assert!(crate::parse::too_deep(&deep, crate::parse::MAX_GROUP_DEPTH).unwrap().to_string().starts_with("nested too deeply"));
        let ok: TokenStream = format!("{}n{}", "(".repeat(MAX_EXPR_DEPTH), ")".repeat(MAX_EXPR_DEPTH)).parse().unwrap();
        assert!(expr(ok).is_ok());
    }

    #[test]
    fn long_chains_and_large_expressions_are_refused() {
        let chain = |k: usize| -> TokenStream { vec!["n"; k].join(" + ").parse().unwrap() };
        assert_eq!(expr(chain(MAX_EXPR_DEPTH)).unwrap().depth(), MAX_EXPR_DEPTH);
        assert!(expr(chain(MAX_EXPR_DEPTH + 1)).unwrap_err().starts_with("expression too deep"));
        assert!(expr(chain(62)).unwrap_err().starts_with("expression too deep"));
        assert!(expr(chain(100_000)).unwrap_err().starts_with("expression too deep"));
        // Balanced, shallow, but huge.
        let mut s = "n".to_string();
        for _ in 0..9 {
            s = format!("({s}) + ({s})");
        }
        assert!(expr(s.parse().unwrap()).unwrap_err().starts_with("expression too large"));
    }

    #[test]
    fn float_literals_only_in_constraints() {
        assert!(expr(quote!(n * 1.5)).unwrap_err().contains("float literals may appear only in constraints"));
        let c = Parser::parse2(parse_constraint, quote!(0 <= p <= 1.5)).unwrap();
        assert_eq!(c.to_float_constraint().unwrap().to_string(), "0.0 <= p <= 1.5");
        let c = Parser::parse2(parse_constraint, quote!(eps > -1e-3)).unwrap();
        assert_eq!(c.to_float_constraint().unwrap().to_string(), "eps > -0.001");
        assert!(Parser::parse2(parse_constraint, quote!(p < 1e400)).is_err());
    }
}
