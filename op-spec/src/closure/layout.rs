//! What a light lexer (comments, strings, raw strings, chars and lifetimes skipped) tells about
//! a file without parsing it: where an attribute stands (the inline modules `mod a { .. }`
//! enclosing a position), and how deep a recursive parser would have to go to parse it. It
//! never parses, recurses or indexes past the text: any file, however deep or unbalanced,
//! gives an answer, `None` where the position cannot be told (no `#` there, or a brace that is
//! not a module's encloses it: a function body, a macro's body).

/// A frame of the brace stack: an inline module (its name) or any other block.
#[derive(Clone, Debug, PartialEq)]
enum Frame {
    Module(String),
    Other,
}

/// A lexed token: a word, or one punctuation character.
#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Punct(char),
}

/// Every `#` of a file by position (line, column: 1-based, columns in characters, as the
/// compiler reports a span), with the module path (inline module names, outermost first) it
/// stands in, or `None` where a block that is not an inline module encloses it.
pub(crate) type Attributes = std::collections::HashMap<(usize, usize), Option<Vec<String>>>;

/// The module path of the `#` at `line` and `column`, or `None` if no `#` stands there or a
/// block that is not an inline module encloses it (the tests' view of [`attributes`]).
#[cfg(test)]
pub(crate) fn module_at(text: &str, line: usize, column: usize) -> Option<Vec<String>> {
    attributes(text).remove(&(line, column)).flatten()
}

/// Every `#` of the file with its module path, in one pass.
pub(crate) fn attributes(text: &str) -> Attributes {
    let chars: Vec<char> = text.chars().collect();
    let mut lx = Lexer { chars: &chars, i: 0, line: 1, col: 1 };
    let mut stack: Vec<Frame> = Vec::new();
    // The tokens since the last `;`, `{` or `}`: the header of the next block.
    let mut header: Vec<Tok> = Vec::new();
    let mut out = Attributes::new();
    while let Some((tok, at)) = lx.next() {
        match tok {
            Tok::Punct('#') => {
                let path = stack
                    .iter()
                    .map(|f| match f {
                        Frame::Module(name) => Some(name.clone()),
                        Frame::Other => None,
                    })
                    .collect();
                out.insert(at, path);
                header.push(tok);
            }
            Tok::Punct('{') => {
                stack.push(frame_of(&header));
                header.clear();
            }
            Tok::Punct('}') => {
                stack.pop();
                header.clear();
            }
            Tok::Punct(';') => header.clear(),
            other => header.push(other),
        }
    }
    out
}

/// An over-estimate of the recursion depth a parser like `syn` needs for the file's code (its
/// strings and comments do not count): at each token, the bracket depth, plus the depth of `<`
/// in the current statement, plus the run of prefix-like tokens just before (`& * - ! |`,
/// `return`, `break`, `move`, `box`), plus the `else` chain at this depth since its last `;`.
pub(crate) fn parse_depth(text: &str) -> usize {
    let chars: Vec<char> = text.chars().collect();
    let mut lx = Lexer { chars: &chars, i: 0, line: 1, col: 1 };
    let (mut depth, mut angles, mut run, mut max) = (0usize, 0usize, 0usize, 0usize);
    // `else` tokens per bracket depth since that depth's last `;`.
    let mut elses: Vec<usize> = vec![0];
    while let Some((tok, _)) = lx.next() {
        let prefix = match &tok {
            Tok::Punct(c) => matches!(c, '&' | '*' | '-' | '!' | '|'),
            Tok::Word(w) => matches!(w.as_str(), "return" | "break" | "move" | "box"),
        };
        run = if prefix { run + 1 } else { 0 };
        match tok {
            Tok::Punct('(' | '[' | '{') => {
                depth += 1;
                elses.push(0);
                if matches!(tok, Tok::Punct('{')) {
                    angles = 0;
                }
            }
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if elses.len() > 1 {
                    elses.pop();
                }
                if matches!(tok, Tok::Punct('}')) {
                    angles = 0;
                }
            }
            Tok::Punct(';') => {
                angles = 0;
                if let Some(e) = elses.last_mut() {
                    *e = 0;
                }
            }
            Tok::Punct('<') => angles += 1,
            Tok::Punct('>') => angles = angles.saturating_sub(1),
            Tok::Word(w) if w == "else" => {
                if let Some(e) = elses.last_mut() {
                    *e += 1;
                }
            }
            _ => {}
        }
        let chain = elses.last().copied().unwrap_or(0);
        max = max.max(depth.saturating_add(angles).saturating_add(run).saturating_add(chain));
    }
    max
}

/// A block's frame from its header: `[vis] [unsafe] mod name {` opens a module.
fn frame_of(header: &[Tok]) -> Frame {
    match header {
        [.., Tok::Word(m), Tok::Word(name)] if m == "mod" => Frame::Module(name.clone()),
        _ => Frame::Other,
    }
}

struct Lexer<'a> {
    chars: &'a [char],
    i: usize,
    line: usize,
    col: usize,
}

impl Lexer<'_> {
    fn at(&self, k: usize) -> Option<char> {
        self.chars.get(self.i.saturating_add(k)).copied()
    }

    /// Moves past `n` characters (fewer at the end of the text), counting lines.
    fn bump(&mut self, n: usize) {
        for _ in 0..n {
            match self.chars.get(self.i) {
                Some('\n') => {
                    self.line += 1;
                    self.col = 1;
                }
                Some(_) => self.col += 1,
                None => return,
            }
            self.i += 1;
        }
    }

    /// The next token and where it starts, comments and literals skipped.
    fn next(&mut self) -> Option<(Tok, (usize, usize))> {
        loop {
            let c = self.at(0)?;
            let at = (self.line, self.col);
            let skip = match (c, self.at(1)) {
                (c, _) if c.is_whitespace() => 1,
                ('/', Some('/')) => self.until_newline(),
                ('/', Some('*')) => self.block_comment(),
                ('"', _) => self.string(0, 0),
                ('r' | 'b' | 'c', _) if self.literal_prefix().is_some() => {
                    let (prefix, hashes) = self.literal_prefix().unwrap_or((0, 0));
                    self.string(prefix, hashes)
                }
                ('\'', _) => self.char_or_lifetime(),
                _ => 0,
            };
            if skip > 0 {
                self.bump(skip);
                continue;
            }
            if c.is_alphanumeric() || c == '_' {
                let len = self.chars[self.i..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').count();
                let word: String = self.chars[self.i..self.i + len].iter().collect();
                self.bump(len);
                // A raw identifier `r#name`: one word.
                if word == "r" && self.at(0) == Some('#') && self.at(1).is_some_and(|c| c.is_alphabetic() || c == '_') {
                    self.bump(1);
                    let len = self.chars[self.i..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').count();
                    let word: String = self.chars[self.i..self.i + len].iter().collect();
                    self.bump(len);
                    return Some((Tok::Word(word), at));
                }
                return Some((Tok::Word(word), at));
            }
            self.bump(1);
            return Some((Tok::Punct(c), at));
        }
    }

    fn until_newline(&self) -> usize {
        self.chars[self.i..].iter().position(|&c| c == '\n').unwrap_or(self.chars.len() - self.i)
    }

    /// A (nested) block comment's length; the rest of the text if it is not closed.
    fn block_comment(&self) -> usize {
        let s = &self.chars[self.i..];
        let (mut depth, mut k) = (0usize, 0usize);
        while k + 1 < s.len() {
            match (s[k], s[k + 1]) {
                ('/', '*') => {
                    depth += 1;
                    k += 2;
                }
                ('*', '/') => {
                    depth = depth.saturating_sub(1);
                    k += 2;
                    if depth == 0 {
                        return k;
                    }
                }
                _ => k += 1,
            }
        }
        s.len()
    }

    /// `(prefix length, hashes)` if a string literal with a prefix starts here: `r"`, `r#"`,
    /// `b"`, `br#"`, `c"`, `cr"`, ... (`b'x'` is a byte char: left to `char_or_lifetime`).
    fn literal_prefix(&self) -> Option<(usize, usize)> {
        let prefix = match (self.at(0), self.at(1)) {
            (Some('b' | 'c'), Some('r')) => 2,
            (Some('r' | 'b' | 'c'), _) => 1,
            _ => return None,
        };
        let raw = self.at(prefix - 1) == Some('r');
        let hashes = if raw { (prefix..).take_while(|&k| self.at(k) == Some('#')).count() } else { 0 };
        (self.at(prefix + hashes) == Some('"')).then_some((prefix, hashes))
    }

    /// A string literal's length from its prefix: escapes in plain strings, `"` and `hashes`
    /// `#`s closing a raw one; the rest of the text if it is not closed.
    fn string(&self, prefix: usize, hashes: usize) -> usize {
        let s = &self.chars[self.i..];
        let raw = prefix > 0 && s.get(prefix - 1) == Some(&'r');
        let mut k = prefix + hashes + 1;
        while k < s.len() {
            if !raw && s[k] == '\\' {
                k += 2;
                continue;
            }
            if s[k] == '"' && (1..=hashes).all(|h| s.get(k + h) == Some(&'#')) {
                return (k + 1 + hashes).min(s.len());
            }
            k += 1;
        }
        s.len()
    }

    /// A char literal's length, or 1 for a lifetime's or label's quote (`'a`).
    fn char_or_lifetime(&self) -> usize {
        match (self.at(1), self.at(2)) {
            (Some('\\'), _) => {
                // An escape (the escaped character may be a quote): up to the closing quote,
                // within the longest escape (`'\u{10FFFF}'`).
                (3..12).find(|&k| self.at(k) == Some('\'')).map_or(1, |k| k + 1)
            }
            (Some(_), Some('\'')) => 3,
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module path at the `#` that starts line `line` (after its indentation).
    fn at_line(text: &str, line: usize) -> Option<Vec<String>> {
        let l = text.lines().nth(line - 1).unwrap_or_default();
        let col = l.chars().take_while(|c| c.is_whitespace()).count() + 1;
        module_at(text, line, col)
    }

    #[test]
    fn inline_modules_are_found_by_line_and_other_blocks_are_undecided() {
        let text = r####"// { a brace in a comment
/* and { in /* nested */ block comments */
const S: &str = "{ in a string \" }"; const R: &str = r#"{ "# ; const C: char = '{'; const B: u8 = b'{';
fn lt<'a>(x: &'a str) -> &'a str { x }
#[op]
fn top() {}
pub(crate) mod a {
    #[op]
    fn f() {}
    mod b {
        #[op]
        fn f() {}
    }
}
mod c {
    #[op]
    fn f() {}
}
fn body() {
    #[op]
    fn nested() {}
}
macro_rules! m { () => {
    #[op]
    fn from_macro() {}
} }
mod r#raw { #[op] fn g() {} }
"####;
        assert_eq!(at_line(text, 5), Some(vec![]));
        assert_eq!(at_line(text, 8), Some(vec!["a".to_string()]));
        assert_eq!(at_line(text, 11), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(at_line(text, 16), Some(vec!["c".to_string()]));
        assert_eq!(at_line(text, 20), None, "in a function body");
        assert_eq!(at_line(text, 24), None, "in a macro's body");
        assert_eq!(module_at(text, 27, 13), Some(vec!["raw".to_string()]));
        assert_eq!(module_at(text, 6, 1), None, "no `#` there");
        assert_eq!(module_at(text, 500, 1), None, "past the end");
    }

    #[test]
    fn deep_unbalanced_and_unterminated_text_never_panics() {
        for text in [
            "(".repeat(100_000),
            "}".repeat(1000) + "\n#",
            format!("\"{}", "{".repeat(1000)),
            "r###\"".to_string(),
            "/* /* */".to_string(),
            "'\\".to_string(),
            "b'".to_string(),
            "r#".to_string(),
            "br".to_string(),
            "\"\\".to_string(),
            format!("mod a {{ {} #", "mod b { ".repeat(10_000)),
        ] {
            let _ = module_at(&text, 1, 1);
            let _ = module_at(&text, 2, 1);
            let _ = module_at(&text, 1, text.chars().count());
        }
        let deep = format!("const S: &str = \"{}\";\n#[op]\nfn f() {{}}\n", "(".repeat(300));
        assert_eq!(module_at(&deep, 2, 1), Some(vec![]));
        assert_eq!(module_at("const C: char = '\\'';\n#[op]\nfn f() {}", 2, 1), Some(vec![]), "an escaped quote");
    }

    #[test]
    fn parse_depth_counts_what_a_parser_recurses_on_and_not_strings_or_comments() {
        let small = "fn f(x: &[f32]) -> Vec<Vec<f32>> { if a { 1 } else if b { 2 } else { 3 } }";
        assert!(parse_depth(small) < 8, "{}", parse_depth(small));
        assert!(parse_depth(&format!("const S: &str = \"{}\"; // {}", "(".repeat(500), "{".repeat(500))) < 4);
        for deep in [
            format!("const X: u8 = {}0{};", "(".repeat(200), ")".repeat(200)),
            format!("type T = {}u8{};", "Option<".repeat(200), ">".repeat(200)),
            format!("type T = {}u8;", "&".repeat(200)),
            format!("const X: i32 = {}1;", "- ".repeat(200)),
            format!("const X: u8 = if a {{ 0 }}{} else {{ 1 }};", " else if a { 0 }".repeat(200)),
            format!("const F: fn() = {}|| ();", "|| ".repeat(100)),
        ] {
            assert!(parse_depth(&deep) >= 200, "{}: {}", &deep[..40], parse_depth(&deep));
        }
    }
}
