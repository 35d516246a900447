//! Where a declaration sits. The expansion puts the op's description in a module next to the
//! function, which reaches it as `super::f`: that only works for a function declared at module
//! level. A method is known from its receiver; a function in a function body, an `impl` or a
//! `trait` is found by reading the declaring file around the attribute's position (a light
//! lexer: comments, strings, chars and braces). Inside a macro's body, or wherever the file
//! does not show `#` at that position, nothing can be told and nothing is reported.

use crate::ctxt::Ctxt;
use crate::model::OpAttr;
use crate::reference::RefFn;
use proc_macro2::Span;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;

/// The attribute's position in its source file, as the compiler reports it.
#[derive(Clone, Debug)]
pub struct Location {
    /// The declaring file.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// What encloses a position of a file.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scope {
    /// A module (or the file's top level).
    Module,
    /// A function body.
    Function,
    /// An `impl` block.
    Impl,
    /// A `trait` block.
    Trait,
    /// Something else nothing can be told about (a macro body).
    Unknown,
    /// A block that is none of those (a `const` initializer, a nested block): still not a module.
    Block,
}

// Rule: the op is declared at module level: not a method, not inside a function body, an
// `impl` or a `trait`.
pub(super) fn check_module_level(cx: &Ctxt, attr: &OpAttr, func: &RefFn, at: Option<&Location>) {
    let span = attr.span.unwrap_or_else(Span::call_site);
    let name = &func.sig.ident;
    let scope = if func.sig.receiver().is_some() { Scope::Impl } else { at.map_or(Scope::Unknown, scope_at) };
    let (where_, fix) = match scope {
        Scope::Module | Scope::Unknown => return,
        Scope::Function | Scope::Block => {
            ("inside a function body (or another block)", "move `#[op]` and the function out to module level")
        }
        Scope::Impl => (
            "a method or associated function (inside an `impl` block)",
            "move `#[op]` and the function out to the enclosing module as a free function (a method can call it)",
        ),
        Scope::Trait => ("inside a `trait`", "move `#[op]` and the function out to the enclosing module as a free function"),
    };
    cx.error(syn::Error::new(
        span,
        format!("declare the op at module level: `{name}` is {where_}, where the op's generated description cannot reach it; {fix}"),
    ));
}

/// The scope of every `#` token of a file, by (line, column).
type HashScopes = HashMap<(usize, usize), Scope>;

thread_local! {
    /// Per file, read and lexed once per compiler process however many ops it declares.
    static SCOPES: RefCell<HashMap<PathBuf, HashScopes>> = RefCell::new(HashMap::new());
}

fn scope_at(at: &Location) -> Scope {
    SCOPES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let scopes = cache.entry(at.file.clone()).or_insert_with(|| match std::fs::read_to_string(&at.file) {
            Ok(src) => hash_scopes(&src),
            Err(_) => HashMap::new(),
        });
        scopes.get(&(at.line, at.column)).copied().unwrap_or(Scope::Unknown)
    })
}

/// A token of the light lexer: a word or one punctuation character, with its position.
struct Tok {
    text: String,
    line: usize,
    column: usize,
}

/// Words and punctuation of Rust source, comments, strings and char literals skipped.
fn lex(src: &str) -> Vec<Tok> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1usize, 1usize);
    let advance = |i: &mut usize, line: &mut usize, col: &mut usize, n: usize, chars: &[char]| {
        for _ in 0..n {
            if *i < chars.len() {
                if chars[*i] == '\n' {
                    *line += 1;
                    *col = 1;
                } else {
                    *col += 1;
                }
                *i += 1;
            }
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let skip = if c.is_whitespace() {
            1
        } else if c == '/' && next == Some('/') {
            chars[i..].iter().position(|&c| c == '\n').unwrap_or(chars.len() - i)
        } else if c == '/' && next == Some('*') {
            block_comment_len(&chars[i..])
        } else if c == '"' || ((c == 'r' || c == 'b' || c == 'c') && is_string_start(&chars[i..])) {
            string_len(&chars[i..])
        } else if c == '\'' {
            char_or_lifetime_len(&chars[i..])
        } else {
            0
        };
        if skip > 0 {
            advance(&mut i, &mut line, &mut col, skip, &chars);
            continue;
        }
        let len =
            if c.is_alphanumeric() || c == '_' { chars[i..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').count() } else { 1 };
        toks.push(Tok { text: chars[i..i + len].iter().collect(), line, column: col });
        advance(&mut i, &mut line, &mut col, len, &chars);
    }
    toks
}

fn block_comment_len(s: &[char]) -> usize {
    let (mut depth, mut i) = (0usize, 0usize);
    while i + 1 < s.len() {
        if s[i] == '/' && s[i + 1] == '*' {
            depth += 1;
            i += 2;
        } else if s[i] == '*' && s[i + 1] == '/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    s.len()
}

/// Whether `s` starts a (raw, byte or C) string literal: `r"`, `r#"`, `b"`, `br"`, `c"`, ...
fn is_string_start(s: &[char]) -> bool {
    let mut i = 0;
    while i < s.len() && i < 2 && matches!(s[i], 'r' | 'b' | 'c') {
        i += 1;
    }
    while i < s.len() && s[i] == '#' {
        i += 1;
    }
    i < s.len() && s[i] == '"' && (i == 0 || s[..i].iter().any(|c| matches!(c, 'r' | 'b' | 'c')))
}

fn string_len(s: &[char]) -> usize {
    let prefix = s.iter().take_while(|c| matches!(c, 'r' | 'b' | 'c')).count();
    let raw = s[..prefix].contains(&'r');
    let hashes = s[prefix..].iter().take_while(|c| **c == '#').count();
    let mut i = prefix + hashes + 1; // past the opening quote
    while i < s.len() {
        if !raw && s[i] == '\\' {
            i += 2;
            continue;
        }
        if s[i] == '"' && s[i + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes {
            return i + 1 + hashes;
        }
        i += 1;
    }
    s.len()
}

/// A char literal's length, or 1 for a lifetime's quote (`'a`).
fn char_or_lifetime_len(s: &[char]) -> usize {
    if s.get(1) == Some(&'\\') {
        return s.iter().skip(2).position(|c| *c == '\'').map_or(s.len(), |p| p + 3);
    }
    if s.get(2) == Some(&'\'') {
        return 3;
    }
    1
}

/// The scope of a `{` from the words since the previous `;`, `{` or `}`.
fn classify(header: &[&Tok]) -> Scope {
    let has = |w: &str| header.iter().any(|t| t.text == w);
    if has("macro_rules") || header.last().is_some_and(|t| t.text == "!") {
        Scope::Unknown
    } else if has("fn") {
        Scope::Function
    } else if has("impl") {
        Scope::Impl
    } else if has("trait") {
        Scope::Trait
    } else if has("mod") {
        Scope::Module
    } else {
        Scope::Block
    }
}

/// The scope of every `#` of `src`: the innermost enclosing non-module scope, `Unknown` if a
/// macro body encloses it anywhere, else `Module`.
fn hash_scopes(src: &str) -> HashScopes {
    let toks = lex(src);
    let mut stack: Vec<Scope> = Vec::new();
    let mut header_start = 0;
    let mut out = HashMap::new();
    for (i, t) in toks.iter().enumerate() {
        match t.text.as_str() {
            "{" => {
                let header: Vec<&Tok> = toks[header_start..i].iter().collect();
                stack.push(classify(&header));
                header_start = i + 1;
            }
            "}" => {
                stack.pop();
                header_start = i + 1;
            }
            ";" => header_start = i + 1,
            "#" => {
                let scope = if stack.contains(&Scope::Unknown) {
                    Scope::Unknown
                } else {
                    stack.iter().rev().copied().find(|s| *s != Scope::Module).unwrap_or(Scope::Module)
                };
                // Only the innermost scope matters for module-level items: an item in a module
                // nested in a function body is at module level.
                let innermost = stack.last().copied().unwrap_or(Scope::Module);
                out.insert((t.line, t.column), if innermost == Scope::Module { Scope::Module } else { scope });
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope_of_line(src: &str, line: usize) -> Scope {
        let scopes = hash_scopes(src);
        let col = src.lines().nth(line - 1).and_then(|l| l.find('#')).map(|c| c + 1).unwrap_or(0);
        scopes.get(&(line, col)).copied().unwrap_or(Scope::Unknown)
    }

    #[test]
    fn scopes_of_attributes() {
        let src = r##"// a file { with a brace in a comment
/* and { in /* nested */ block comments */
const S: &str = "{ in a string"; const R: &str = r#"}"#; const C: char = '{';
fn lt<'a>(x: &'a str) -> &'a str { x }
#[op(a)]
fn top() {}
mod inner {
    #[op(b)]
    fn in_mod() {}
}
fn body() {
    #[op(c)]
    fn nested() {}
    mod m {
        #[op(d)]
        fn in_mod_in_body() {}
    }
}
impl S {
    #[op(e)]
    fn assoc() {}
}
macro_rules! m { () => {
    #[op(f)]
    fn from_macro() {}
} }
trait T {
    #[op(g)]
    fn provided() {}
}
const _: () = {
    #[op(h)]
    fn in_const() {}
};
"##;
        assert_eq!(scope_of_line(src, 5), Scope::Module);
        assert_eq!(scope_of_line(src, 8), Scope::Module);
        assert_eq!(scope_of_line(src, 12), Scope::Function);
        assert_eq!(scope_of_line(src, 15), Scope::Module);
        assert_eq!(scope_of_line(src, 20), Scope::Impl);
        assert_eq!(scope_of_line(src, 24), Scope::Unknown);
        assert_eq!(scope_of_line(src, 28), Scope::Trait);
        assert_eq!(scope_of_line(src, 32), Scope::Block);
    }
}
