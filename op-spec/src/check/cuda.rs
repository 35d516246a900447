//! CUDA kernels against their descriptor, without a compiler: the entry is an `extern "C"`
//! `__global__ void` function (else its name is mangled and never found), with one parameter
//! per descriptor slot; each buffer is a pointer to the tensor's element type (`const` when
//! `read`), each uniform field a scalar of the type the launcher passes, and named parameters
//! carry the names they are bound to. A light C lexer skips comments and strings; `typedef`
//! and `using` aliases of the source and its headers resolve. Where NVRTC loads at build time
//! the kernel is also compiled (`crate::nvrtc`). Reads no files.

use crate::contract::{Access, DType};
use crate::ctxt::Ctxt;
use crate::model::*;
use std::collections::HashMap;

/// A C token: a word, a punctuation character or a string literal, with its byte range.
#[derive(Clone, Debug)]
struct CTok {
    text: String,
    string: bool,
    start: usize,
    end: usize,
}

fn lex_c(src: &str) -> Vec<CTok> {
    let b = src.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            i += b[i..].iter().position(|&c| c == b'\n').unwrap_or(b.len() - i);
        } else if b[i..].starts_with(b"/*") {
            i += 2 + b[i + 2..].windows(2).position(|w| w == b"*/").map_or(b.len() - i - 2, |p| p + 2);
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            toks.push(CTok { text: src.get(start + 1..i - 1).unwrap_or_default().to_string(), string: c == b'"', start, end: i });
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            toks.push(CTok { text: src[start..i].to_string(), string: false, start, end: i });
        } else {
            i += src[i..].chars().next().map_or(1, char::len_utf8);
            toks.push(CTok { text: src[start..i].to_string(), string: false, start, end: i });
        }
    }
    toks
}

/// One parameter of a `__global__` function.
#[derive(Clone, Debug)]
struct Param {
    /// As written.
    text: String,
    /// Type words, qualifiers removed (`unsigned int`, `float`, a typedef name).
    base: String,
    /// Whether it is a pointer (or a reference).
    pointer: bool,
    /// Whether the pointee is `const` (`const float*`, `float const*`).
    pointee_const: bool,
    /// The parameter's name, when it has one.
    name: Option<String>,
}

/// A `__global__` function.
#[derive(Clone, Debug)]
struct Global {
    name: String,
    extern_c: bool,
    returns_void: bool,
    params: Vec<Param>,
}

const QUALIFIERS: [&str; 8] = ["const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "__grid_constant__", "std"];
const C_TYPE_WORDS: [&str; 11] = ["unsigned", "signed", "int", "long", "short", "char", "float", "double", "bool", "void", "half"];
const SPECIFIERS: [&str; 7] = ["static", "inline", "__inline__", "__forceinline__", "__noinline__", "__host__", "__device__"];

fn parse_param(src: &str, toks: &[CTok]) -> Param {
    let text = match (toks.first(), toks.last()) {
        (Some(a), Some(z)) => src[a.start..z.end].to_string(),
        _ => String::new(),
    };
    let first_ptr = toks.iter().position(|t| t.text == "*" || t.text == "&");
    let before = &toks[..first_ptr.unwrap_or(toks.len())];
    let pointee_const = before.iter().any(|t| t.text == "const");
    let words: Vec<&str> = before.iter().map(|t| t.text.as_str()).filter(|w| is_word(w) && !QUALIFIERS.contains(w)).collect();
    let (base, name) = match first_ptr {
        Some(p) => {
            let after: Vec<&str> = toks[p..].iter().map(|t| t.text.as_str()).filter(|w| is_word(w) && !QUALIFIERS.contains(w)).collect();
            (words.join(" "), after.last().map(|s| s.to_string()))
        }
        None => match words.split_last() {
            Some((last, rest)) if !rest.is_empty() && !C_TYPE_WORDS.contains(last) => (rest.join(" "), Some(last.to_string())),
            _ => (words.join(" "), None),
        },
    };
    Param { text, base, pointer: first_ptr.is_some(), pointee_const, name }
}

fn is_word(w: &str) -> bool {
    w.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

/// The index just past the group opened at `open` (`(`), or the end.
fn close_of(toks: &[CTok], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate().skip(open) {
        match t.text.as_str() {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// The `__global__` functions of a source, in order.
fn globals(src: &str) -> Vec<Global> {
    let toks = lex_c(src);
    let mut out = Vec::new();
    let (mut depth, mut decl_start) = (0usize, 0usize);
    let mut extern_blocks: Vec<usize> = Vec::new();
    let is_extern_c = |head: &[CTok]| head.windows(2).any(|w| w[0].text == "extern" && w[1].string && w[1].text == "C");
    for i in 0..toks.len() {
        match toks[i].text.as_str() {
            "{" if !toks[i].string => {
                depth += 1;
                if is_extern_c(&toks[decl_start..i]) {
                    extern_blocks.push(depth);
                }
                decl_start = i + 1;
            }
            "}" if !toks[i].string => {
                if extern_blocks.last() == Some(&depth) {
                    extern_blocks.pop();
                }
                depth = depth.saturating_sub(1);
                decl_start = i + 1;
            }
            ";" if !toks[i].string => decl_start = i + 1,
            "__global__" if !toks[i].string => {
                let extern_c = !extern_blocks.is_empty() || is_extern_c(&toks[decl_start..i]);
                if let Some(g) = global_at(src, &toks, i, extern_c) {
                    out.push(g);
                }
            }
            _ => {}
        }
    }
    out
}

/// The `__global__` function whose keyword is at `at`.
fn global_at(src: &str, toks: &[CTok], at: usize, extern_c: bool) -> Option<Global> {
    let mut j = at + 1;
    let mut words: Vec<&str> = Vec::new();
    while j < toks.len() && toks[j].text != "(" {
        if toks[j].text == "__launch_bounds__" && toks.get(j + 1).is_some_and(|t| t.text == "(") {
            j = close_of(toks, j + 1);
            continue;
        }
        if is_word(&toks[j].text) {
            words.push(&toks[j].text);
        }
        j += 1;
    }
    let name = words.pop()?.to_string();
    let returns_void = words.iter().filter(|w| !SPECIFIERS.contains(w)).copied().collect::<Vec<_>>() == ["void"];
    let close = close_of(toks, j);
    let inner = toks.get(j + 1..close.saturating_sub(1)).unwrap_or_default();
    let mut params = Vec::new();
    let mut cur: Vec<CTok> = Vec::new();
    let mut nest = 0i32;
    for t in inner {
        match t.text.as_str() {
            "(" | "<" => nest += 1,
            ")" | ">" => nest -= 1,
            "," if nest == 0 => {
                params.push(parse_param(src, &cur));
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(t.clone());
    }
    let only_void = cur.len() == 1 && cur[0].text == "void";
    if !cur.is_empty() && !only_void {
        params.push(parse_param(src, &cur));
    }
    Some(Global { name, extern_c, returns_void, params })
}

/// `typedef X NAME;` and `using NAME = X;` of the sources: NAME to X's type words.
fn aliases(sources: &[&str]) -> HashMap<String, String> {
    let mut map = HashMap::new();
    for src in sources {
        let toks = lex_c(src);
        for (i, t) in toks.iter().enumerate() {
            if t.text != "typedef" && t.text != "using" {
                continue;
            }
            let Some(end) = toks[i..].iter().position(|t| t.text == ";").map(|p| i + p) else { continue };
            let decl = toks.get(i + 1..end).unwrap_or_default();
            let words: Vec<&str> = decl.iter().map(|t| t.text.as_str()).filter(|w| is_word(w) && !QUALIFIERS.contains(w)).collect();
            if words.len() < 2 || decl.iter().any(|t| t.text == "*") {
                continue;
            }
            if t.text == "typedef" {
                map.insert(words[words.len() - 1].to_string(), words[..words.len() - 1].join(" "));
            } else if decl.get(1).is_some_and(|t| t.text == "=") {
                map.insert(words[0].to_string(), words[1..].join(" "));
            }
        }
    }
    map
}

fn resolve(base: &str, aliases: &HashMap<String, String>) -> String {
    let mut t = base.to_string();
    for _ in 0..8 {
        match aliases.get(&t) {
            Some(u) => t = u.clone(),
            None => break,
        }
    }
    t
}

/// The C spellings of a dtype's element type.
fn c_names(d: DType) -> &'static [&'static str] {
    match d {
        DType::f32 => &["float"],
        DType::f64 => &["double"],
        DType::f16 => &["__half", "half"],
        DType::bf16 => &["__nv_bfloat16", "nv_bfloat16"],
        DType::u32 => &["unsigned int", "unsigned", "uint32_t"],
        DType::i32 => &["int", "signed int", "signed", "int32_t"],
        DType::u64 => &["unsigned long long", "unsigned long long int", "uint64_t"],
        DType::i64 => &["long long", "long long int", "signed long long", "int64_t"],
        DType::u16 => &["unsigned short", "unsigned short int", "uint16_t"],
        DType::i16 => &["short", "short int", "signed short", "int16_t"],
        DType::u8 => &["unsigned char", "uint8_t"],
        DType::i8 => &["signed char", "int8_t"],
        DType::bool => &["bool"],
    }
}

/// Whether `t` is a C type the check knows (so a mismatch is certain): a dtype's spelling, or
/// `void`, `char`, `long`, `unsigned long`, `size_t`.
fn known_c_type(t: &str) -> bool {
    DType::ALL.iter().any(|d| c_names(*d).contains(&t)) || ["void", "char", "long", "unsigned long", "long int", "size_t"].contains(&t)
}

/// The entry: `entry = "..."`, or the only `__global__` function. Reported when missing.
fn choose_entry<'g>(cx: &Ctxt, k: &SKernel, globals: &'g [Global]) -> Option<&'g Global> {
    match &k.entry {
        Some(e) => {
            let found = globals.iter().find(|g| g.name == e.value());
            if found.is_none() {
                let names: Vec<String> = globals.iter().map(|g| format!("`{}`", g.name)).collect();
                let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
                cx.error(syn::Error::new(
                    e.span(),
                    format!(
                        "CUDA kernel `{}` has no `__global__` function `{}` (found: {names}); set `entry` to one of them",
                        k.path.value(),
                        e.value()
                    ),
                ));
            }
            found
        }
        None if globals.len() == 1 => globals.first(),
        None => {
            let names: Vec<&str> = globals.iter().map(|g| g.name.as_str()).collect();
            cx.error(syn::Error::new(
                k.path.span(),
                format!("CUDA kernel has {} `__global__` functions ({}); name one with `entry = \"...\"`", globals.len(), names.join(", ")),
            ));
            None
        }
    }
}

/// Checks the CUDA `src` (with its headers' texts) against `k`; returns the entry's name when
/// it was found.
pub(super) fn check_cuda(cx: &Ctxt, k: &SKernel, sig: &SSignature, src: &str, headers: &[&str]) -> Option<String> {
    let all = globals(src);
    let g = choose_entry(cx, k, &all)?;
    let entry = &g.name;
    // Rule: the entry is `extern "C"` (C++ mangles other names) and returns `void`.
    if !g.extern_c {
        cx.error(syn::Error::new(k.path.span(), format!("CUDA kernel `{entry}` is not `extern \"C\"`: its name is C++-mangled, so the runtime would never find it; declare it `extern \"C\" __global__ void {entry}(...)`")));
    }
    if !g.returns_void {
        cx.error(syn::Error::new(k.path.span(), format!("CUDA kernel `{entry}` must return `void` (a `__global__` function returns nothing); declare it `__global__ void {entry}(...)`")));
    }
    let want: usize = k.bindings.iter().map(|b| if let SBinding::Uniform { fields, .. } = b { fields.len() } else { 1 }).sum();
    if g.params.len() != want {
        let anchor = k.bindings_span.unwrap_or(k.span);
        cx.error(anchor.error(format!(
            "CUDA kernel `{entry}` takes {} parameter(s) but the descriptor binds {want}; CUDA binds by parameter order, so list one slot per parameter in `bindings(...)` (each buffer, then each uniform field)",
            g.params.len()
        )));
        return Some(entry.clone());
    }
    let mut sources = vec![src];
    sources.extend(headers);
    let aliases = aliases(&sources);
    let mut params = g.params.iter().enumerate();
    for b in &k.bindings {
        match b {
            SBinding::Buffer { name, access, global } => {
                let Some((i, p)) = params.next() else { break };
                check_buffer_param(cx, sig, entry, (i, p), (name, access, global.as_ref()), &aliases);
            }
            SBinding::Uniform { fields, .. } => {
                for f in fields {
                    let Some((i, p)) = params.next() else { break };
                    check_scalar_param(cx, sig, entry, (i, p), f, &aliases);
                }
            }
        }
    }
    check_launch_dims(cx, k, entry, &sources);
    check_written(cx, k, g, &sources);
    Some(entry.clone())
}

// Rule: every buffer bound `read_write` or `accumulate` (an output, the kernel's to fill) is a
// named parameter the sources mention beyond its declaration: a pointer never named again is
// never written. (Lexical and lenient: any other mention counts, so no correct kernel is
// refused; the mention may be in a macro or a helper.)
fn check_written(cx: &Ctxt, k: &SKernel, g: &Global, sources: &[&str]) {
    let mut words: HashMap<String, usize> = HashMap::new();
    for t in sources.iter().flat_map(|s| lex_c(s)).filter(|t| !t.string && is_word(&t.text)) {
        *words.entry(t.text).or_default() += 1;
    }
    // Parameters in binding order: one per buffer, one per uniform field.
    let mut i = 0;
    for b in &k.bindings {
        let (name, access) = match b {
            SBinding::Buffer { name, access, .. } => (name, access),
            SBinding::Uniform { fields, .. } => {
                i += fields.len();
                continue;
            }
        };
        i += 1;
        let Some(p) = g.params.get(i - 1) else { return };
        if !access.value.writes() || !p.pointer {
            continue;
        }
        let i = i - 1;
        let acc = access.value.keyword();
        let why = match &p.name {
            None => format!(
                "CUDA parameter {i} of `{}` (`{}`) has no name, so the kernel cannot write it; name it `{name}` and store to it",
                g.name, p.text
            ),
            Some(n) if words.get(n).copied().unwrap_or(0) <= 1 => format!(
                "CUDA kernel `{}` never uses its parameter `{n}` after declaring it, so it never writes it; store to every element of it",
                g.name
            ),
            Some(_) => continue,
        };
        cx.error(syn::Error::new(name.span(), format!("`{name}` is bound `{acc}` (an output, the kernel's to write) but {why}")));
    }
}

/// Rule: a CUDA kernel launched over 2 (3) extents reads a `.y` (and `.z`) component somewhere
/// in its source or headers (`blockIdx.y`, `threadIdx.y`, ...): one that never does would run
/// every thread along that dimension on the same elements. (Lenient: any `.y` member read
/// counts, as the source is not analysed further.)
fn check_launch_dims(cx: &Ctxt, k: &SKernel, entry: &str, sources: &[&str]) {
    let dims = k.threads_yz.len() + 1;
    let toks: Vec<Vec<CTok>> = sources.iter().map(|s| lex_c(s)).collect();
    for (d, axis) in ["y", "z"].iter().enumerate().take(dims.saturating_sub(1)) {
        let reads = toks.iter().any(|t| t.windows(2).any(|w| !w[0].string && w[0].text == "." && !w[1].string && w[1].text == *axis));
        if !reads {
            cx.error(syn::Error::new(
                k.path.span(),
                format!(
                    "CUDA kernel `{entry}` is launched over {dims} extents (`threads = (...)`) but never reads a `.{axis}` component (`blockIdx.{axis}`, `threadIdx.{axis}`): every thread along {axis} would repeat the same elements; index dimension {} with them, or launch over fewer extents",
                    d + 2
                ),
            ));
            return;
        }
    }
}

/// The binding's name against a named parameter, as in WGSL: slots bind by position.
fn check_param_name(cx: &Ctxt, entry: &str, i: usize, p: &Param, bound: &syn::Ident, want: &str, hint: &str) {
    let Some(name) = &p.name else { return };
    if name != want {
        cx.error(syn::Error::new(
            bound.span(),
            format!("`{bound}` is bound to CUDA parameter {i} of `{entry}`, which is named `{name}`: parameters bind by position, so swapped names silently compute the wrong thing; reorder `bindings(...)` to match, rename the parameter to `{want}`{hint}"),
        ));
    }
}

// Rule: buffer slot `i` is a pointer parameter to the tensor's element type, `const` exactly
// when the tensor is read, named after the tensor (or its `as` name) when named.
fn check_buffer_param(
    cx: &Ctxt,
    sig: &SSignature,
    entry: &str,
    (i, p): (usize, &Param),
    (name, access, global): (&syn::Ident, &Spanned<Access>, Option<&syn::Ident>),
    aliases: &HashMap<String, String>,
) {
    let text = &p.text;
    if !p.pointer {
        cx.error(syn::Error::new(
            name.span(),
            format!("`{name}` is a buffer but CUDA parameter {i} of `{entry}` is `{text}`, not a pointer"),
        ));
        return;
    }
    if access.value == Access::Read && !p.pointee_const {
        cx.error(
            access.span.error(format!("`{name}` is bound `read` but CUDA parameter {i} of `{entry}` is `{text}`; declare it `const`")),
        );
    } else if access.value.writes() && p.pointee_const {
        let acc = access.value.keyword();
        cx.error(access.span.error(format!("`{name}` is bound `{acc}` but CUDA parameter {i} of `{entry}` is `{text}` (const)")));
    }
    let dtype = sig.inputs().chain(&sig.outputs).find(|t| t.name == *name).map(|t| t.dtype.value);
    let base = resolve(&p.base, aliases);
    if let Some(d) = dtype {
        if !c_names(d).contains(&base.as_str()) && known_c_type(&base) {
            let konst = if access.value == Access::Read { "const " } else { "" };
            cx.error(syn::Error::new(
                name.span(),
                format!("`{name}` holds `{d}` but CUDA parameter {i} of `{entry}` is `{text}`, a pointer to `{base}`; declare it `{konst}{}* {}`", c_names(d)[0], p.name.as_deref().unwrap_or(&name.to_string())),
            ));
        }
    }
    let want = global.map_or_else(|| name.to_string(), |g| g.to_string());
    let acc = access.value.keyword();
    let hint = format!(", or write `{name}: {acc} as {}` if the name differs on purpose", p.name.as_deref().unwrap_or(""));
    check_param_name(cx, entry, i, p, name, &want, &hint);
}

// Rule: uniform field `f` is a scalar parameter of the type the launcher passes: `unsigned int`
// for a dim, the parameter's type for a `u32`, `i32` or `f32` parameter (no other dtype can be
// passed), named `f` when named.
fn check_scalar_param(
    cx: &Ctxt,
    sig: &SSignature,
    entry: &str,
    (i, p): (usize, &Param),
    f: &syn::Ident,
    aliases: &HashMap<String, String>,
) {
    let text = &p.text;
    if p.pointer {
        cx.error(syn::Error::new(f.span(), format!("uniform field `{f}` is a scalar but CUDA parameter {i} of `{entry}` is `{text}`, a pointer; take it by value (e.g. `unsigned int {f}`)")));
        return;
    }
    let (d, role) = match sig.param(&f.to_string()) {
        Some(sp) => (sp.dtype.value, format!("a `{}` parameter", sp.dtype.value)),
        None => (DType::u32, "a dimension, passed as a 32-bit `unsigned int`,".to_string()),
    };
    if !matches!(d, DType::u32 | DType::i32 | DType::f32) {
        cx.error(syn::Error::new(f.span(), format!("uniform field `{f}` is {role}, which the CUDA launcher cannot pass (u32, i32 and f32 scalars only); change the parameter's dtype")));
        return;
    }
    let base = resolve(&p.base, aliases);
    if !c_names(d).contains(&base.as_str()) && known_c_type(&base) {
        cx.error(syn::Error::new(
            f.span(),
            format!("uniform field `{f}` is {role} but CUDA parameter {i} of `{entry}` is `{text}`; declare it `{} {f}`", c_names(d)[0]),
        ));
    }
    check_param_name(cx, entry, i, p, f, &f.to_string(), "");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_globals_and_their_parameters() {
        let src = r#"
// __global__ void commented_out(float* x) {}
#include "common.cuh"
typedef float real;
extern "C" __global__ void __launch_bounds__(256) k1(const real* __restrict__ x, float *out, unsigned int n) { }
__global__ void k2(float const* x, std::uint32_t) {}
extern "C" {
    __global__ void k3(void) {}
    static __device__ float helper(float a) { return a; }
}
__global__ int k4() { return 0; }
"#;
        let g = globals(src);
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["k1", "k2", "k3", "k4"]);
        assert!(g[0].extern_c && !g[1].extern_c && g[2].extern_c);
        assert!(g[0].returns_void && !g[3].returns_void);
        let p = &g[0].params;
        assert_eq!(p.len(), 3);
        assert_eq!((p[0].base.as_str(), p[0].pointer, p[0].pointee_const, p[0].name.as_deref()), ("real", true, true, Some("x")));
        assert_eq!(p[0].text, "const real* __restrict__ x");
        assert_eq!((p[1].base.as_str(), p[1].pointee_const, p[1].name.as_deref()), ("float", false, Some("out")));
        assert_eq!((p[2].base.as_str(), p[2].pointer, p[2].name.as_deref()), ("unsigned int", false, Some("n")));
        assert_eq!((g[1].params[0].pointee_const, g[1].params[1].base.as_str(), g[1].params[1].name.as_deref()), (true, "uint32_t", None));
        assert!(g[2].params.is_empty());
        assert_eq!(resolve("real", &aliases(&[src])), "float");
    }
}
