//! WGSL includes. WGSL has no preprocessor, so a kernel that shares helpers with others names
//! them with a comment directive on a line of its own:
//!
//! ```text
//! // @include "lib/exp.wgsl"
//! ```
//!
//! The path is relative to the including file's directory (as CUDA's `#include "..."`). The
//! checker and the runtime both compile the *expanded* source: each directive line replaced by
//! the included file's text, itself expanded, each file at most once per kernel (a second
//! include of it, or a cycle, expands to nothing). The included files are the kernel's headers:
//! their bytes are part of the op's identity, embedded in the binary and shipped on its card,
//! exactly like CUDA headers. The directive is a comment, so the file stays valid WGSL for any
//! tool that reads it unexpanded.

use std::path::Path;

/// The include targets of a WGSL source, in order of appearance (as written, unresolved).
pub fn includes(src: &str) -> Vec<String> {
    src.lines().filter_map(directive).collect()
}

/// The target of a `// @include "path"` line, if `line` is one.
fn directive(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("//")?.trim_start().strip_prefix("@include")?.trim();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    rest[end + 1..].trim().is_empty().then(|| rest[..end].to_string())
}

/// `inc` as named from a file in `dir`: the path the header is recorded under (relative to the
/// crate, `/`-separated, `.` and `..` resolved lexically so that one file has one name; a
/// `..` that climbs past the start stays, and the crate-boundary check refuses it).
pub fn resolve(dir: &str, inc: &str) -> String {
    let joined = Path::new(dir).join(inc).to_string_lossy().replace('\\', "/");
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let root = if joined.starts_with('/') { "/" } else { "" };
    format!("{root}{}", parts.join("/"))
}

/// The directory of the file at `path` (relative to the crate), `""` at the top.
pub fn dir_of(path: &str) -> String {
    Path::new(path).parent().map(|p| p.to_string_lossy().replace('\\', "/")).unwrap_or_default()
}

/// Nesting deeper than this is refused (the once rule already bounds it by the header count).
const MAX_DEPTH: usize = 64;

/// The source of the kernel at `path` with its includes expanded from `headers` (path relative
/// to the crate as [`resolve`] records it, text). A directive naming no header is an error
/// naming it and the file that includes it.
pub fn expand(path: &str, src: &str, headers: &[(&str, &str)]) -> Result<String, String> {
    let mut seen = vec![resolve("", path)];
    let mut out = String::with_capacity(src.len());
    expand_into(&dir_of(path), path, src, headers, &mut seen, &mut out, 0)?;
    Ok(out)
}

fn expand_into(
    dir: &str,
    path: &str,
    src: &str,
    headers: &[(&str, &str)],
    seen: &mut Vec<String>,
    out: &mut String,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("WGSL includes nest deeper than {MAX_DEPTH} levels at `{path}`"));
    }
    for line in src.split_inclusive('\n') {
        let Some(inc) = directive(line) else {
            out.push_str(line);
            continue;
        };
        let target = resolve(dir, &inc);
        if seen.contains(&target) {
            out.push('\n');
            continue;
        }
        let Some((_, text)) = headers.iter().find(|(p, _)| *p == target) else {
            return Err(format!("`{path}` includes `{inc}` (as `{target}`), which is not among the kernel's headers"));
        };
        seen.push(target.clone());
        expand_into(&dir_of(&target), &target, text, headers, seen, out, depth + 1)?;
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_are_comment_lines_naming_one_quoted_path() {
        let src = "// @include \"lib/a.wgsl\"\n  //@include \"b.wgsl\"  \nlet x = 1; // @include \"no.wgsl\"\n// @include \"c.wgsl\" trailing\n// @include nope\n";
        assert_eq!(includes(src), ["lib/a.wgsl", "b.wgsl"]);
    }

    #[test]
    fn expands_recursively_relative_to_each_file_and_once_per_file() {
        let headers = [
            ("kernels/lib/exp.wgsl", "// @include \"nan.wgsl\"\nfn exp_() {}\n"),
            ("kernels/lib/nan.wgsl", "fn is_nan_() {}"),
            ("kernels/lib/tanh.wgsl", "// @include \"exp.wgsl\"\n// @include \"nan.wgsl\"\nfn tanh_() {}\n"),
        ];
        let src = "// @include \"lib/tanh.wgsl\"\n// @include \"lib/exp.wgsl\"\nfn main() {}\n";
        let out = expand("kernels/k.wgsl", src, &headers).expect("expands");
        assert_eq!(out, "fn is_nan_() {}\nfn exp_() {}\n\nfn tanh_() {}\n\nfn main() {}\n");
    }

    #[test]
    fn one_file_has_one_name_however_it_is_spelled() {
        assert_eq!(resolve("kernels/broken", "../../lib/./a.wgsl"), "lib/a.wgsl");
        assert_eq!(resolve("kernels", "./lib/../lib/a.wgsl"), "kernels/lib/a.wgsl");
        assert_eq!(resolve("", "../outside.wgsl"), "../outside.wgsl");
        let headers = [("k/lib/a.wgsl", "A\n")];
        let src = "// @include \"lib/a.wgsl\"\n// @include \"./lib/../lib/a.wgsl\"\nB\n";
        assert_eq!(expand("k/main.wgsl", src, &headers).expect("expands"), "A\n\nB\n", "included once");
    }

    #[test]
    fn a_cycle_expands_each_file_once_and_a_missing_header_is_an_error() {
        let headers = [("a.wgsl", "// @include \"b.wgsl\"\nA\n"), ("b.wgsl", "// @include \"a.wgsl\"\nB\n")];
        assert_eq!(expand("a.wgsl", headers[0].1, &headers).expect("expands"), "\nB\nA\n");
        let err = expand("k.wgsl", "// @include \"gone.wgsl\"\n", &headers).expect_err("missing");
        assert_eq!(err, "`k.wgsl` includes `gone.wgsl` (as `gone.wgsl`), which is not among the kernel's headers");
    }
}
