//! The macro must never panic: `check_tokens` (parse + every checker rule, the whole of what
//! `#[op]` runs before generating code) is fed mutations of valid declarations (dropped,
//! swapped, duplicated, replaced and truncated tokens at every nesting depth), expressions built
//! to hit the limits (thousands of parentheses, unary minuses, `min(min(..))`, long sums),
//! doc comments with Unicode whitespace and mutated kernel sources, and must return `Ok` or
//! errors each time, never unwind or overflow its stack. Whole declaring files are fuzzed too
//! (deep and unbalanced brackets in code, strings, comments, raw strings and macro bodies),
//! through everything the macro reads from them: the placement scan and the identity's closure. The random test is seeded
//! (`OP_FUZZ_SEED`, printed on failure) and bounded in time (`OP_FUZZ_SECONDS`, default 30;
//! `.ci/run` gives it 60).

use op_spec::check::check_tokens;
use proc_macro2::{Group, TokenStream, TokenTree};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MEDIAN_WGSL: &str = "struct Params { n: u32, w: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n - p.w + 1u) { return; }
    out[i] = x[i + p.w / 2u];
}
";

const MUL_CU: &str = "#include \"common.cuh\"
extern \"C\" __global__ void mul(const float* a, const float* b, float* out, unsigned int n) {
    unsigned int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) { out[i] = a[i] * b[i]; }
}
";

const PICK_CU: &str = "extern \"C\" __global__ void pick(const T* x, const I* i, T* y, I* j, unsigned int n) {
    unsigned int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) { y[k] = x[k]; j[k] = i[k]; }
}
";

/// (attribute, item) pairs that check cleanly; the mutations start from these.
const SEEDS: [(&str, &str); 5] = [
    (
        r#"name = "user/example/windowed_median", version = 1,
           signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1],
           category = selection, tolerance = exact, backward = vjp(windowed_median_vjp),
           subgradient = "cotangent routed to the selected element",
           kernel(wgsl = "kernels/median.wgsl", bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1),
           license = "MIT", visibility = public"#,
        "/// Median.\npub fn windowed_median<T: Real>(x: &[T], w: u32) -> Vec<T> { todo!() }",
    ),
    (
        r#"name = "user/example/mul", version = 3, signature(a: f32[n], b: f32[n]) -> f32[n],
           category = elementwise, tolerance = ulp(0), backward = vjp(mul_vjp) + jvp(ja, jb),
           kernel(cuda = "kernels/mul.cu", entry = "mul", bindings(a: read, b: read, out: read_write, uniform(n)), threads = (n, 1), block = (128, 1))"#,
        "pub fn mul<T: Real>(a: &[T], b: &[T]) -> Vec<T> { a.to_vec() }",
    ),
    (
        r#"name = "a/matmul", version = 1, signature(a: f32[m, k], b: f32[k, n]) -> (c: f32[m, n], d: f32[min(m, n), max(k, 1) / 2]),
           category = contraction, tolerance = accum(4), backward = none, output = bounded(m * n + (k % 3)), nan = propagate, cpu = self::fast"#,
        "fn matmul<T: Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> (Vec<T>, Vec<T>) { todo!() }",
    ),
    (
        r#"name = "a/approx", version = 1, signature(x: f64[n], s: i64 where -5 <= s <= 5, s != 0) -> f64[n * 2 - 0],
           category = approximate, tolerance = loose(1e-3, 0.5), backward = none, output = dynamic"#,
        "fn approx(x: &[f64], s: i64) -> Vec<f64> { vec![] }",
    ),
    (
        r#"name = "a/generic", version = 1, signature<T: f16 | f32 | f64, I: u32 | i32>(x: T[n], i: I[n], a: T) -> (y: T[n], j: I[n]),
           category = selection, tolerance = exact, backward = none, cpu(fast, dtypes(T: f32, I: u32)),
           kernel(cuda = "kernels/pick.cu", dtypes(T: f32 | f64), bindings(x: read, i: read, y: read_write, j: read_write, uniform(n)), threads = n)"#,
        "fn generic<T: Real, I: Copy>(x: &[T], i: &[I], a: T) -> (Vec<T>, Vec<I>) { todo!() }",
    ),
];

/// Tokens inserted by the `replace`/`insert` mutations: every punctuation the grammars use,
/// keywords, odd literals.
const POOL: &str = r#", = -> : ; ( ) [ ] { } + - * / % < <= == != > >= where min max none vjp jvp composite uniform read read_write
    kernel signature bindings threads block wgsl cuda dtypes T I | 0 1 -1 18446744073709551616 99999999999999999999 1e309 "" "x" 'c' u4 f8e4m3 bool f16 bf16 self super crate _"#;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn pool() -> Vec<TokenTree> {
    let mut v: Vec<TokenTree> = POOL.parse::<TokenStream>().expect("pool lexes").into_iter().collect();
    v.push(TokenTree::Group(Group::new(proc_macro2::Delimiter::Parenthesis, TokenStream::new())));
    v.push(TokenTree::Group(Group::new(proc_macro2::Delimiter::Bracket, TokenStream::new())));
    v
}

/// One mutation at a random position, descending into groups at random.
fn mutate(ts: TokenStream, rng: &mut Rng, pool: &[TokenTree]) -> TokenStream {
    let mut v: Vec<TokenTree> = ts.into_iter().collect();
    // Descend into a group half of the time.
    let groups: Vec<usize> = v.iter().enumerate().filter(|(_, t)| matches!(t, TokenTree::Group(_))).map(|(i, _)| i).collect();
    if !groups.is_empty() && rng.below(2) == 0 {
        let gi = groups[rng.below(groups.len())];
        if let TokenTree::Group(g) = &v[gi] {
            let inner = mutate(g.stream(), rng, pool);
            v[gi] = TokenTree::Group(Group::new(g.delimiter(), inner));
        }
        return v.into_iter().collect();
    }
    let n = v.len();
    match rng.below(6) {
        0 if n > 0 => {
            v.remove(rng.below(n));
        }
        1 if n > 1 => {
            let i = rng.below(n - 1);
            v.swap(i, i + 1);
        }
        2 if n > 0 => {
            let i = rng.below(n);
            let t = v[i].clone();
            v.insert(i, t);
        }
        3 if n > 0 => {
            let i = rng.below(n);
            v[i] = pool[rng.below(pool.len())].clone();
        }
        4 => {
            let i = rng.below(n + 1);
            v.insert(i, pool[rng.below(pool.len())].clone());
        }
        _ => {
            v.truncate(rng.below(n + 1));
        }
    }
    v.into_iter().collect()
}

/// The seeds' kernel files in a scratch directory of the calling test's own (removed when the
/// guard drops): the tests run in parallel, and a file rewritten while another test reads it was
/// once read truncated (a seed then failed to check).
fn kernel_dir() -> tempfile::TempDir {
    let scratch = tempfile::Builder::new().prefix("op-spec-no-panic-").tempdir().expect("temp dir");
    let dir = scratch.path();
    std::fs::create_dir_all(dir.join("kernels")).expect("temp dir");
    std::fs::write(dir.join("kernels/median.wgsl"), MEDIAN_WGSL).expect("write");
    std::fs::write(dir.join("kernels/mul.cu"), MUL_CU).expect("write");
    std::fs::write(dir.join("kernels/pick.cu"), PICK_CU).expect("write");
    std::fs::write(dir.join("kernels/common.cuh"), "#pragma once\n").expect("write");
    scratch
}

fn run(attr: &TokenStream, item: &TokenStream, bases: &[PathBuf]) {
    let (a, i) = (attr.clone(), item.clone());
    let r = catch_unwind(AssertUnwindSafe(|| check_tokens(a, i, bases).map(|_| ())));
    if r.is_err() {
        panic!("check_tokens panicked on\n#[op({attr})]\n{item}");
    }
}

#[test]
fn seeds_check_cleanly() {
    let kernels = kernel_dir();
    let bases = [kernels.path().to_path_buf()];
    for (attr, item) in SEEDS {
        let r = check_tokens(attr.parse().expect("lexes"), item.parse().expect("lexes"), &bases);
        if let Err(errs) = r {
            panic!("seed does not check: {:?}", errs.iter().map(|e| e.to_string()).collect::<Vec<_>>());
        }
    }
}

#[test]
fn single_token_drops_and_swaps_never_panic() {
    let kernels = kernel_dir();
    let bases = [kernels.path().to_path_buf()];
    for (attr, item) in SEEDS {
        let attr: TokenStream = attr.parse().expect("lexes");
        let item: TokenStream = item.parse().expect("lexes");
        // Every top-level drop and adjacent swap, exhaustively.
        let toks: Vec<TokenTree> = attr.clone().into_iter().collect();
        for i in 0..toks.len() {
            let mut v = toks.clone();
            v.remove(i);
            run(&v.into_iter().collect(), &item, &bases);
            if i + 1 < toks.len() {
                let mut v = toks.clone();
                v.swap(i, i + 1);
                run(&v.into_iter().collect(), &item, &bases);
            }
            let mut v = toks.clone();
            v.truncate(i);
            run(&v.into_iter().collect(), &item, &bases);
        }
    }
}

/// Declarations with a slot `__E__` for a stress expression, in each position one can take.
const EXPR_SLOTS: [(&str, &str); 3] = [
    (
        r#"name = "a/e", version = 1, signature(x: f32[n], w: u32 where w <= __E__) -> f32[__E__], category = selection,
           tolerance = exact, backward = none, kernel(wgsl = "kernels/median.wgsl", bindings(x: read, out: read_write, uniform(n, w)), threads = __E__)"#,
        "fn e<T: Real>(x: &[T], w: u32) -> Vec<T> { todo!() }",
    ),
    (
        r#"name = "a/e", version = 1, signature(x: f32[n]) -> f32[k], output = bounded(__E__), category = selection, tolerance = exact, backward = none"#,
        "fn e<T: Real>(x: &[T]) -> Vec<T> { todo!() }",
    ),
    (
        r#"name = "a/e", version = 1, signature(x: f32[n], lo: f32, hi: f32 where lo <= hi, __E__ >= 0) -> f32[n], category = selection, tolerance = exact, backward = none"#,
        "fn e<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> { todo!() }",
    ),
];

/// An expression built to hit a limit: deep parentheses, unary minuses, `min` nesting, long
/// sums, huge or fractional literals.
fn stress_expr(rng: &mut Rng) -> String {
    let k = [1, 2, 31, 32, 33, 63, 64, 65, 200, 2_000, 3_000][rng.below(11)];
    match rng.below(7) {
        0 => format!("{}n{}", "(".repeat(k), ")".repeat(k)),
        1 => format!("{}n", "- ".repeat(k)),
        2 => format!("{}n{}", "min(n, ".repeat(k.min(300)), ")".repeat(k.min(300))),
        3 => vec!["n"; k.max(1)].join(" + "),
        4 => format!("n / (w - {k}) % (n - n)"),
        5 => ["9223372036854775807 * 9223372036854775807", "1e308", "0.5", "n % 0", "-9223372036854775807 - 1"][rng.below(5)].to_string(),
        _ => format!("max({}, n) * (w + {k})", vec!["1"; k.min(300)].join(" * ")),
    }
}

/// A doc comment of random Unicode whitespace and text.
fn doc_comment(rng: &mut Rng) -> String {
    const WS: [&str; 7] = [" ", "\t", "\u{3000}", "\u{2003}", "\u{a0}", "\u{85}", "\u{feff}"];
    (0..1 + rng.below(4))
        .map(|_| {
            let lead: String = (0..rng.below(4)).map(|_| WS[rng.below(WS.len())]).collect();
            format!("///{lead}é{}\n", WS[rng.below(WS.len())])
        })
        .collect()
}

/// A kernel source with random edits: deleted and duplicated ranges, inserted pieces of C, WGSL
/// and Unicode.
fn mutate_source(src: &str, rng: &mut Rng) -> String {
    const PIECES: [&str; 14] = [
        "\"",
        "'",
        "/*",
        "*/",
        "//",
        "{",
        "}",
        "(",
        ")",
        "__global__",
        "extern \"C\"",
        "typedef float T;",
        "é\u{3000}",
        "@workgroup_size(8, 8)",
    ];
    let mut s: Vec<char> = src.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let n = s.len();
        let (a, b) = (rng.below(n + 1), rng.below(n + 1));
        let (a, b) = (a.min(b), a.max(b));
        match rng.below(3) {
            0 => {
                s.drain(a..b.min(a + 40));
            }
            1 => {
                let copy: Vec<char> = s[a..b.min(a + 40)].to_vec();
                s.splice(a..a, copy);
            }
            _ => {
                s.splice(a..a, PIECES[rng.below(PIECES.len())].chars());
            }
        }
    }
    s.into_iter().collect()
}

fn fuzz_budget() -> (u64, Duration) {
    let seed = std::env::var("OP_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x2545_F491_4F6C_DD1D);
    let secs = std::env::var("OP_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    (seed, Duration::from_secs(secs))
}

/// Mutated kernel sources in one of four directories under `scratch` (the seeds' kernel
/// directory, whose own files stay as written).
fn mutated_kernel_dir(scratch: &Path, round: usize, rng: &mut Rng) -> PathBuf {
    let dir = scratch.join(format!("src-{}", round % 4));
    std::fs::create_dir_all(dir.join("kernels")).expect("temp dir");
    let write = |rel: &str, text: String| std::fs::write(Path::new(&dir).join(rel), text).expect("write");
    write("kernels/median.wgsl", mutate_source(MEDIAN_WGSL, rng));
    write("kernels/mul.cu", mutate_source(MUL_CU, rng));
    write("kernels/pick.cu", mutate_source(PICK_CU, rng));
    write("kernels/common.cuh", mutate_source("#pragma once\ntypedef float real;\n", rng));
    dir
}

/// One random case: a mutated seed, a stress expression in a slot, or a seed against mutated
/// kernel sources (written under `scratch`).
fn random_case(
    round: usize,
    rng: &mut Rng,
    pool: &[TokenTree],
    bases: &[PathBuf],
    scratch: &Path,
) -> (TokenStream, TokenStream, Vec<PathBuf>) {
    match round % 5 {
        0 => {
            let (attr, item) = EXPR_SLOTS[rng.below(EXPR_SLOTS.len())];
            let attr = attr.replace("__E__", &stress_expr(rng));
            (attr.parse().expect("lexes"), item.parse().expect("lexes"), bases.to_vec())
        }
        1 if round % 25 == 1 => {
            let (attr, item) = SEEDS[rng.below(2)];
            (attr.parse().expect("lexes"), item.parse().expect("lexes"), vec![mutated_kernel_dir(scratch, round, rng)])
        }
        _ => {
            let (attr, item) = SEEDS[round % SEEDS.len()];
            let item = if rng.below(4) == 0 { format!("{}{item}", doc_comment(rng)) } else { item.to_string() };
            let mut attr: TokenStream = attr.parse().expect("lexes");
            let mut item: TokenStream = item.parse().expect("lexes");
            for _ in 0..1 + rng.below(4) {
                if rng.below(5) == 0 {
                    item = mutate(item, rng, pool);
                } else {
                    attr = mutate(attr, rng, pool);
                }
            }
            (attr, item, bases.to_vec())
        }
    }
}

#[test]
fn random_mutations_never_panic() {
    let kernels = kernel_dir();
    let bases = [kernels.path().to_path_buf(), PathBuf::from("/nonexistent")];
    let pool = pool();
    let (seed, budget) = fuzz_budget();
    let mut rng = Rng(seed);
    let start = Instant::now();
    let mut round = 0;
    while start.elapsed() < budget {
        let (attr, item, bases) = random_case(round, &mut rng, &pool, &bases, kernels.path());
        let (a, i) = (attr.clone(), item.clone());
        if catch_unwind(AssertUnwindSafe(|| check_tokens(a, i, &bases).map(|_| ()))).is_err() {
            panic!("check_tokens panicked (OP_FUZZ_SEED={seed}, round {round}) on\n#[op({attr})]\n{item}");
        }
        round += 1;
    }
    assert!(round >= 100, "only {round} rounds in {budget:?}");
    // Degenerate inputs.
    for (attr, item) in
        [("", ""), ("", "fn f() {}"), (",,,", "struct S;"), ("name", "fn f()"), ("kernel()", "fn f() {}"), ("signature() ->", "fn f() {}")]
    {
        run(&attr.parse().expect("lexes"), &item.parse().expect("lexes"), &bases);
    }
}

/// The declaration the whole-file cases carry: written into `src/lib.rs` at the line the
/// location names, with the rest of the file around it.
const FILE_ATTR: &str =
    r#"name = "a/f", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none"#;
const FILE_FN: &str = "fn f(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }";

/// Pieces of Rust that break a naive scanner when repeated, nested or left open.
const FILE_PIECES: [&str; 30] = [
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "r#\"",
    "\"#",
    "'",
    "'\\",
    "/*",
    "*/",
    "//",
    "#",
    "mod m {",
    "macro_rules! m { (",
    "impl W {",
    "fn helper(v: f32) -> f32 { v }",
    "\n",
    "b'",
    "é\u{3000}",
    "Option<",
    ">",
    "- ",
    "&",
    "|| ",
    " else if a { 0 }",
    "const X: u8 = ",
    "type T = ",
];

/// A crate whose `src/lib.rs` is `before`, the op, then `after` (and `src/m.rs` = `module`),
/// checked the way the macro checks a declaration there: placement and the identity's
/// closure read the file. Must return, never panic.
fn check_in_file(dir: &Path, before: &str, after: &str, module: &str, line_shift: isize) {
    std::fs::create_dir_all(dir.join("src")).expect("src");
    let text = format!("{before}\n#[op({FILE_ATTR})]\n{FILE_FN}\n{after}");
    std::fs::write(dir.join("src/lib.rs"), &text).expect("write lib.rs");
    std::fs::write(dir.join("src/m.rs"), module).expect("write m.rs");
    let line = (before.lines().count() + if before.ends_with('\n') || before.is_empty() { 1 } else { 2 }) as isize + line_shift;
    let line = line.max(1) as usize;
    let location = op_spec::check::Location { file: dir.join("src/lib.rs"), line, column: 1 };
    let site = op_spec::closure::Site {
        file: Some(location.file.clone()),
        line: Some((line, 1)),
        manifest_dir: Some(dir.to_path_buf()),
        crate_name: None,
        config: None,
    };
    let func = op_spec::check::parse_item(FILE_FN.parse().expect("lexes")).expect("parses");
    let attr: TokenStream = FILE_ATTR.parse().expect("lexes");
    let r = catch_unwind(AssertUnwindSafe(|| {
        let _ = op_spec::check::check_declaration(attr, &func, &[dir.to_path_buf()], Some(&location), Some(&site));
    }));
    if r.is_err() {
        let shown: String = text.chars().take(2000).collect();
        panic!("the macro panicked on this file (line {line}):\n{shown}");
    }
}

/// A scratch crate directory, removed when the guard drops (also when a case panics).
fn file_dir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("op-spec-no-panic-file-{tag}-")).tempdir().expect("temp dir")
}

/// Deep nesting (256 and far beyond) in code, strings, comments, raw strings and macro bodies,
/// unbalanced and unterminated files, in the declaring file and in a module it declares.
#[test]
fn deep_and_unbalanced_whole_files_never_panic() {
    let scratch = file_dir("fixed");
    let dir = scratch.path();
    let deep = |open: &str, close: &str, n: usize| format!("{}{}", open.repeat(n), close.repeat(n));
    let mut cases: Vec<(String, String)> = Vec::new();
    for n in [255, 256, 257, 1_000, 20_000] {
        cases.push((format!("const S: &str = \"{}\";", "(".repeat(n)), String::new()));
        cases.push((format!("// {}", "{".repeat(n)), String::new()));
        cases.push((format!("/* {} */", "[".repeat(n)), String::new()));
        cases.push((format!("const R: &str = r##\"{}\"##;", deep("{", "}", n)), String::new()));
        cases.push((format!("const X: u8 = {};", deep("(", ")", n.min(2_000)).replace("()", "(0)")), String::new()));
        cases.push((format!("macro_rules! m {{ () => {{ {} }} }}", deep("[", "]", n)), String::new()));
        cases.push((String::new(), format!("fn g() {{ {} }}", deep("{", "}", n))));
        cases.push((format!("mod m;\n{}", "mod a { ".repeat(n.min(2_000))), "}".repeat(n.min(2_000))));
    }
    for unbalanced in ["{", "}", "(((", ")))", "\"", "r#\"", "/*", "'", "macro_rules! m { (", "mod a {", "impl W {"] {
        cases.push((unbalanced.to_string(), String::new()));
        cases.push((String::new(), unbalanced.to_string()));
    }
    for (before, after) in &cases {
        for module in ["", "(((", &"{".repeat(300), "pub fn helper(v: f32) -> f32 { v }"] {
            for shift in [0, -1, 1, 1_000] {
                check_in_file(dir, before, after, module, shift);
            }
        }
    }
}

/// Random whole files: pieces of Rust (brackets, quotes, comment markers, generics, prefix
/// operators, `else if` chains, module and macro openers) inserted, repeated up to thousands of
/// times and deleted around the declaration and in a module it declares, seeded
/// (`OP_FUZZ_SEED`) and bounded in time (`OP_FUZZ_SECONDS`).
#[test]
fn random_whole_files_never_panic() {
    let scratch = file_dir("random");
    let dir = scratch.path();
    let (seed, budget) = fuzz_budget();
    let mut rng = Rng(seed ^ 0x9E37_79B9_7F4A_7C15);
    let start = Instant::now();
    let mut round = 0usize;
    let base = "mod m;\nuse m::*;\nstruct W(f32);\nimpl std::ops::Add for W { type Output = W; fn add(self, o: W) -> W { W(self.0 + o.0) } }\nfn helper(v: f32) -> f32 { v }";
    while start.elapsed() < budget {
        let mut parts: Vec<String> = vec![base.to_string(), String::new(), "pub fn helper(v: f32) -> f32 { v }".to_string()];
        for _ in 0..1 + rng.below(6) {
            let which = rng.below(3);
            let p = &mut parts[which];
            let piece = FILE_PIECES[rng.below(FILE_PIECES.len())];
            let times = [1, 2, 255, 256, 300, 3_000][rng.below(6)];
            let chars: Vec<char> = p.chars().collect();
            let at = rng.below(chars.len() + 1);
            let (head, tail): (String, String) = (chars[..at].iter().collect(), chars[at..].iter().collect());
            *p = match rng.below(3) {
                0 => format!("{head}{}{tail}", piece.repeat(times)),
                1 => format!("{head}{tail}", tail = tail.chars().skip(rng.below(20)).collect::<String>()),
                _ => format!("{head}{piece}{tail}"),
            };
        }
        let shift = [0isize, 0, 0, -1, 1, 7][rng.below(6)];
        check_in_file(dir, &parts[0], &parts[1], &parts[2], shift);
        round += 1;
    }
    assert!(round >= 20, "only {round} files in {budget:?}");
}
