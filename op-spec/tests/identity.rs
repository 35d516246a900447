//! Identity: the blake3 hash `#[op]` embeds, computed here exactly as `op-macros/src/expand.rs`
//! computes it (`check::check_tokens`, then `canon::identity` over the contract JSON, the
//! reference's tokens and every kernel byte, CUDA headers included). Layout (whitespace,
//! comments, newlines) and attribute key order must not change it; any change to the contract,
//! the reference body or a kernel byte must.

use op_spec::canon::{body_tokens, contract_json, identity, KernelBytes};
use op_spec::check::check_tokens;
use proc_macro2::TokenStream;
use std::path::Path;

const MEDIAN_WGSL: &str = r#"// Sliding-window median.
struct Params { n: u32, w: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n - p.w + 1u) { return; }
    var win: array<f32, 31>;
    for (var j = 0u; j < p.w; j = j + 1u) {
        let v = x[i + j];
        var k = j;
        while (k > 0u && win[k - 1u] > v) {
            win[k] = win[k - 1u];
            k = k - 1u;
        }
        win[k] = v;
    }
    out[i] = win[p.w / 2u];
}
"#;

const MUL_CU: &str = r#"// out[i] = a[i] * b[i]
#include "common.cuh"

extern "C" __global__ void mul(const float* a, const float* b, float* out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { out[i] = times(a[i], b[i]); }
}
"#;

const COMMON_CUH: &str = "// helpers\n#pragma once\n__device__ inline float times(float a, float b) { return a * b; }\n";

/// The median declaration's entries, one string per key, in documentation order.
const MEDIAN_ENTRIES: [&str; 9] = [
    r#"name = "user/example/windowed_median""#,
    "version = 1",
    "signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1]",
    "category = selection",
    "tolerance = exact",
    "backward = vjp(windowed_median_vjp)",
    r#"subgradient = "cotangent routed to the selected element""#,
    r#"kernel(wgsl = "kernels/windowed_median.wgsl", bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1)"#,
    r#"license = "MIT""#,
];

const MEDIAN_FN: &str = r#"pub fn windowed_median<T: Real>(x: &[T], w: u32) -> Vec<T> {
    let w = w as usize;
    (0..x.len() + 1 - w)
        .map(|i| {
            let mut win = x[i..i + w].to_vec();
            win.sort_by(|a, b| a.total_cmp(b));
            win[w / 2]
        })
        .collect()
}"#;

/// The same function, laid out differently, with comments and a doc comment.
const MEDIAN_FN_RELAID: &str = r#"/// Median of every window (doc comments are the description, not the identity).
pub fn windowed_median < T : Real > ( x : & [ T ] , w : u32 ) -> Vec < T >
{
    // Window size as an index.
    let w = w as usize ;   /* block comment */
    ( 0 .. x . len ( ) + 1 - w ) . map ( | i | {
            let mut win = x[i..i + w]
                .to_vec();
            win.sort_by(|a, b| a.total_cmp(b)); win[w / 2]
        }).collect()
}"#;

const MUL_ENTRIES: [&str; 7] = [
    r#"name = "user/example/mul""#,
    "version = 1",
    "signature(a: f32[n], b: f32[n]) -> f32[n]",
    "category = elementwise",
    "tolerance = ulp(0)",
    "backward = jvp(mul_jvp_a, mul_jvp_b)",
    r#"kernel(cuda = "kernels/mul.cu", bindings(a: read, b: read, out: read_write, uniform(n)), threads = n, block = 128)"#,
];

const MUL_FN: &str = "pub fn mul<T: Real>(a: &[T], b: &[T]) -> Vec<T> { a.iter().zip(b).map(|(x, y)| *x * *y).collect() }";

/// A scratch directory, removed when dropped (also when the test panics); it derefs to its path.
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new(prefix: &str) -> Scratch {
        Scratch(tempfile::Builder::new().prefix(prefix).tempdir().expect("create a scratch directory"))
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

/// A fresh directory holding the kernels (and header) the declarations name.
fn kernel_dir() -> Scratch {
    let dir = Scratch::new("op-spec-identity-");
    std::fs::create_dir_all(dir.join("kernels")).expect("create temp kernel dir");
    write(&dir, "kernels/windowed_median.wgsl", MEDIAN_WGSL.as_bytes());
    write(&dir, "kernels/mul.cu", MUL_CU.as_bytes());
    write(&dir, "kernels/common.cuh", COMMON_CUH.as_bytes());
    dir
}

fn write(dir: &Path, rel: &str, bytes: &[u8]) {
    std::fs::write(dir.join(rel), bytes).expect("write temp kernel");
}

fn tokens(src: &str) -> TokenStream {
    src.parse().unwrap_or_else(|e| panic!("test source does not lex: {e}\n{src}"))
}

/// The identity of a declaration, exactly as `op-macros/src/expand.rs` computes it.
fn hash_of(attr: &str, item: &str, dir: &Path) -> [u8; 32] {
    let item_ts = tokens(item);
    let (checked, _) = check_tokens(tokens(attr), item_ts.clone(), &[dir.to_path_buf()]).unwrap_or_else(|errs| {
        panic!("declaration does not check:\n{attr}\n{:#?}", errs.iter().map(|e| e.to_string()).collect::<Vec<_>>())
    });
    let func: op_spec::reference::RefFn = syn::parse2(item_ts).expect("item is a fn");
    let json = contract_json(&checked.contract);
    let body = body_tokens(&func);
    let kernels: Vec<KernelBytes<'_>> = checked
        .kernels
        .iter()
        .zip(&checked.contract.kernels)
        .map(|(lk, k)| KernelBytes {
            path: &k.path,
            bytes: &lk.bytes,
            headers: lk.headers.iter().map(|(p, _, b)| (p.as_str(), b.as_slice())).collect(),
        })
        .collect();
    let hash = identity(&json, &body, &kernels);
    assert_eq!(hash, checked.hash, "the checker's identity is this computation");
    hash
}

fn join(entries: &[&str]) -> String {
    entries.join(", ")
}

fn median_hash(dir: &Path) -> [u8; 32] {
    hash_of(&join(&MEDIAN_ENTRIES), MEDIAN_FN, dir)
}

fn mul_hash(dir: &Path) -> [u8; 32] {
    hash_of(&join(&MUL_ENTRIES), MUL_FN, dir)
}

#[test]
fn identity_is_deterministic() {
    let dir = kernel_dir();
    assert_eq!(median_hash(&dir), median_hash(&dir));
    assert_eq!(median_hash(&dir), median_hash(&kernel_dir()), "the kernel's directory is not part of the identity");
    assert_eq!(mul_hash(&dir), mul_hash(&dir));
}

#[test]
fn layout_and_comments_do_not_change_identity() {
    let dir = kernel_dir();
    let base = median_hash(&dir);
    // Newlines, extra spaces, trailing comma and comments inside the attribute.
    let relaid_attr = format!(
        "\n  {},\n\n\t{} , // the contract version\n {},\n/* selection */ {} ,\n{},\n{},\n {},\n{},\n{}  ,\n",
        MEDIAN_ENTRIES[0],
        MEDIAN_ENTRIES[1],
        MEDIAN_ENTRIES[2].replace(", ", " ,\n      ").replace("->", "\n  ->"),
        MEDIAN_ENTRIES[3],
        MEDIAN_ENTRIES[4].replace("=", " =   "),
        MEDIAN_ENTRIES[5].replace("(", " ( "),
        MEDIAN_ENTRIES[6],
        MEDIAN_ENTRIES[7].replace(", ", ",\n           "),
        MEDIAN_ENTRIES[8],
    );
    assert_eq!(hash_of(&relaid_attr, MEDIAN_FN, &dir), base, "attribute layout changed the identity");
    assert_eq!(hash_of(&join(&MEDIAN_ENTRIES), MEDIAN_FN_RELAID, &dir), base, "function layout changed the identity");
    assert_eq!(hash_of(&relaid_attr, MEDIAN_FN_RELAID, &dir), base);
}

#[test]
fn key_order_does_not_change_identity() {
    let dir = kernel_dir();
    let base = median_hash(&dir);
    let mut reversed = MEDIAN_ENTRIES;
    reversed.reverse();
    assert_eq!(hash_of(&join(&reversed), MEDIAN_FN, &dir), base);
    for k in 1..MEDIAN_ENTRIES.len() {
        let mut rotated = MEDIAN_ENTRIES;
        rotated.rotate_left(k);
        assert_eq!(hash_of(&join(&rotated), MEDIAN_FN, &dir), base, "rotation by {k}");
    }
    // Keys inside `kernel(...)` and CUDA declarations too.
    let mut mul = MUL_ENTRIES;
    mul.reverse();
    mul[0] = r#"kernel(block = 128, threads = n, bindings(a: read, b: read, out: read_write, uniform(n)), cuda = "kernels/mul.cu")"#;
    assert_eq!(hash_of(&join(&mul), MUL_FN, &dir), mul_hash(&dir));
}

/// Replaces the entry starting with `key` (the first whose text starts with it).
fn with_entry(entries: &[&str], key: &str, new: &str) -> String {
    let mut v: Vec<String> = entries.iter().map(|s| s.to_string()).collect();
    let i = v.iter().position(|e| e.starts_with(key)).unwrap_or_else(|| panic!("no entry {key}"));
    v[i] = new.to_string();
    v.join(", ")
}

#[test]
fn every_contract_change_changes_identity() {
    let dir = kernel_dir();
    let base = median_hash(&dir);
    let sig = MEDIAN_ENTRIES[2];
    let variants: Vec<(&str, String)> = vec![
        ("name", with_entry(&MEDIAN_ENTRIES, "name", r#"name = "user/example/windowed_median2""#)),
        ("version", with_entry(&MEDIAN_ENTRIES, "version", "version = 2")),
        ("output dim expr", with_entry(&MEDIAN_ENTRIES, "signature", &sig.replace("f32[n - w + 1]", "f32[n + 1 - w]"))),
        ("constraint bound", with_entry(&MEDIAN_ENTRIES, "signature", &sig.replace("1 <= w <= 31", "1 <= w <= 29"))),
        ("constraint added", with_entry(&MEDIAN_ENTRIES, "signature", &sig.replace("w <= n)", "w <= n, n <= 1000000)"))),
        ("constraint form", with_entry(&MEDIAN_ENTRIES, "signature", &sig.replace("w % 2 == 1", "w % 2 != 0"))),
        (
            "output name",
            with_entry(&MEDIAN_ENTRIES, "signature", &sig.replace("-> f32[", "-> y: f32["))
                .replace("out: read_write", "y: read_write as out"),
        ),
        ("backward", with_entry(&MEDIAN_ENTRIES, "backward", "backward = vjp(other_vjp)")),
        ("backward form", with_entry(&MEDIAN_ENTRIES, "backward", "backward = vjp(windowed_median_vjp) + jvp(windowed_median_jvp)")),
        ("subgradient", with_entry(&MEDIAN_ENTRIES, "subgradient", r#"subgradient = "cotangent routed to the median""#)),
        ("threads", with_entry(&MEDIAN_ENTRIES, "kernel", &MEDIAN_ENTRIES[7].replace("threads = n - w + 1", "threads = n"))),
        ("license", with_entry(&MEDIAN_ENTRIES, "license", r#"license = "MIT OR Apache-2.0""#)),
        ("visibility", format!("{}, visibility = workspace", join(&MEDIAN_ENTRIES))),
        ("nan", format!("{}, nan = propagate", join(&MEDIAN_ENTRIES))),
    ];
    let mut seen = vec![("base", base)];
    for (what, attr) in &variants {
        let h = hash_of(attr, MEDIAN_FN, &dir);
        for (other, oh) in &seen {
            assert_ne!(h, *oh, "changing the {what} gave the identity of `{other}`");
        }
        seen.push((what, h));
    }
    // Category and tolerance change together (the table allows no other single change here).
    let elementwise_fn = "pub fn f<T: Real>(x: &[T]) -> Vec<T> { x.to_vec() }";
    let plain = |cat: &str, tol: &str| {
        hash_of(
            &format!(r#"name = "a/b", version = 1, signature(x: f32[n]) -> f32[n], category = {cat}, tolerance = {tol}, backward = none"#),
            elementwise_fn,
            &dir,
        )
    };
    let hs = [
        plain("elementwise", "ulp(1)"),
        plain("elementwise", "ulp(2)"),
        plain("transcendental", "ulp(1)"),
        plain("approximate", "ulp(1)"),
        plain("approximate", "loose(1e-3, 0)"),
        plain("selection", "exact"),
    ];
    for i in 0..hs.len() {
        for j in i + 1..hs.len() {
            assert_ne!(hs[i], hs[j], "category/tolerance variants {i} and {j} collide");
        }
    }
    // A binding: swapping the two inputs' CUDA parameter slots (saying so with `as`, since the
    // parameters keep their names) is a different contract.
    let mul_base = mul_hash(&dir);
    let swapped = with_entry(&MUL_ENTRIES, "kernel", &MUL_ENTRIES[6].replace("a: read, b: read", "b: read as a, a: read as b"));
    assert_ne!(hash_of(&swapped, MUL_FN, &dir), mul_base, "binding order");
    let block = with_entry(&MUL_ENTRIES, "kernel", &MUL_ENTRIES[6].replace("block = 128", "block = 256"));
    assert_ne!(hash_of(&block, MUL_FN, &dir), mul_base, "block size");
    let rules = with_entry(&MUL_ENTRIES, "backward", "backward = jvp(mul_jvp_b, mul_jvp_a)");
    assert_ne!(hash_of(&rules, MUL_FN, &dir), mul_base, "jvp rule order");
}

#[test]
fn every_body_token_changes_identity() {
    let dir = kernel_dir();
    let base = median_hash(&dir);
    let attr = join(&MEDIAN_ENTRIES);
    let edits: [(&str, &str); 8] = [
        ("win[w / 2]", "win[(w - 1) / 2]"),
        ("win[w / 2]", "win[(w / 2)]"),
        ("let mut win", "let mut window"),
        ("a.total_cmp(b)", "b.total_cmp(a)"),
        ("+ 1 - w", "- w + 1"),
        ("w as usize", "w as u64 as usize"),
        ("x: &[T]", "xs: &[T]"),
        ("<T: Real>", "<F: Real>"),
    ];
    for (from, to) in edits {
        assert!(MEDIAN_FN.contains(from), "{from}");
        let mut f = MEDIAN_FN.replace(from, to);
        if from == "x: &[T]" {
            f = f.replace("x.len()", "xs.len()").replace("x[i", "xs[i");
        }
        if from == "<T: Real>" {
            f = f.replace("[T]", "[F]").replace("Vec<T>", "Vec<F>");
        }
        assert_ne!(hash_of(&attr, &f, &dir), base, "body edit `{from}` -> `{to}` kept the identity");
    }
}

/// Writes `bytes` as `rel` in a fresh kernel dir and returns the declaration's identity.
fn with_kernel_file(rel: &str, bytes: &[u8], mul: bool) -> [u8; 32] {
    let dir = kernel_dir();
    write(&dir, rel, bytes);
    if mul {
        mul_hash(&dir)
    } else {
        median_hash(&dir)
    }
}

#[test]
fn every_kernel_byte_changes_identity() {
    let base = median_hash(&kernel_dir());
    // Every byte of the WGSL file's comment line, each replaced (the file still validates).
    let src = MEDIAN_WGSL.as_bytes();
    let comment_end = MEDIAN_WGSL.find('\n').expect("first line");
    let mut seen = vec![base];
    for i in 2..comment_end {
        let mut b = src.to_vec();
        b[i] = if b[i] == b'x' { b'y' } else { b'x' };
        let h = with_kernel_file("kernels/windowed_median.wgsl", &b, false);
        assert!(!seen.contains(&h), "changing WGSL byte {i} kept an identity already seen");
        seen.push(h);
    }
    // Whitespace in a kernel is content too: one extra space, one extra newline.
    let spaced = MEDIAN_WGSL.replace("let i = gid.x;", "let i = gid.x; ");
    assert_ne!(with_kernel_file("kernels/windowed_median.wgsl", spaced.as_bytes(), false), base);
    let newline = format!("{MEDIAN_WGSL}\n");
    assert_ne!(with_kernel_file("kernels/windowed_median.wgsl", newline.as_bytes(), false), base);
    // Code bytes: the `+ 1u` guard.
    let guard = MEDIAN_WGSL.replace("p.n - p.w + 1u", "p.n - p.w + 2u");
    assert_ne!(with_kernel_file("kernels/windowed_median.wgsl", guard.as_bytes(), false), base);
}

#[test]
fn every_cuda_source_and_header_byte_changes_identity() {
    let base = mul_hash(&kernel_dir());
    let mut seen = vec![base];
    for (rel, text) in [("kernels/mul.cu", MUL_CU), ("kernels/common.cuh", COMMON_CUH)] {
        let end = text.find('\n').expect("first line");
        for i in 2..end {
            let mut b = text.as_bytes().to_vec();
            b[i] = if b[i] == b'x' { b'y' } else { b'x' };
            let h = with_kernel_file(rel, &b, true);
            assert!(!seen.contains(&h), "changing byte {i} of `{rel}` kept an identity already seen");
            seen.push(h);
        }
    }
    // A header byte in code, and a header that grows by one byte.
    let code = COMMON_CUH.replace("a * b", "b * a");
    assert_ne!(with_kernel_file("kernels/common.cuh", code.as_bytes(), true), base);
    let grown = format!("{COMMON_CUH} ");
    assert_ne!(with_kernel_file("kernels/common.cuh", grown.as_bytes(), true), base);
}

/// The identity of the op declared on `reference` in `src/lib.rs` of a crate at `dir`, as the
/// macro computes it there (the declaring crate's sources feed the code closure).
fn hash_in_crate(dir: &Path, attr: &str, reference: &str) -> [u8; 32] {
    use op_spec::check::{check_declaration, parse_item, Location};
    use op_spec::closure::Site;
    let file = dir.join("src/lib.rs");
    let func = parse_item(tokens(reference)).expect("reference parses");
    // The attribute stands on the line before the reference, as `#[op(...)]` would.
    let text = std::fs::read_to_string(&file).expect("lib.rs");
    let line = text.lines().position(|l| l.contains(reference)).expect("the reference is in lib.rs");
    let location = Location { file: file.clone(), line, column: 1 };
    let site = Site {
        file: Some(file),
        line: Some((line, 1)),
        manifest_dir: Some(dir.to_path_buf()),
        crate_name: Some("closure_crate".into()),
        ..Site::default()
    };
    match check_declaration(tokens(attr), &func, &[dir.to_path_buf()], Some(&location), Some(&site)) {
        Ok(c) => c.hash,
        Err(errs) => panic!("does not check: {:#?}", errs.iter().map(|e| e.to_string()).collect::<Vec<_>>()),
    }
}

#[test]
fn editing_a_vjp_body_or_a_cpu_kernels_helper_changes_identity_and_an_unrelated_edit_does_not() {
    let attr = r#"name = "t/closure", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise,
                  tolerance = ulp(1), backward = vjp(twice_vjp), cpu = twice_cpu"#;
    let reference = "pub fn twice<T: Real>(x: &[T]) -> Vec<T> { x.iter().map(|v| *v + *v).collect() }";
    let lib = |vjp_body: &str, cpu_helper: &str, unrelated: &str| {
        format!(
            "use op_runtime::{{op, Real}};\n\
             #[op]\n\
             {reference}\n\
             pub fn twice_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {{ {vjp_body} }}\n\
             fn scale2(v: f32) -> f32 {{ {cpu_helper} }}\n\
             pub fn twice_cpu(x: &[f32]) -> Vec<f32> {{ x.iter().map(|v| scale2(*v)).collect() }}\n\
             pub fn unrelated() -> u32 {{ {unrelated} }}\n"
        )
    };
    let dir = kernel_dir();
    let hash = |src: String| {
        std::fs::create_dir_all(dir.join("src")).expect("src dir");
        std::fs::write(dir.join("src/lib.rs"), src).expect("write lib.rs");
        hash_in_crate(&dir, attr, reference)
    };
    let base = hash(lib("g.iter().map(|v| *v + *v).collect()", "v * 2.0", "1"));
    assert_ne!(base, hash(lib("g.iter().map(|v| *v * (T::one() + T::one())).collect()", "v * 2.0", "1")), "a VJP body edit");
    assert_ne!(base, hash(lib("g.iter().map(|v| *v + *v).collect()", "v + v", "1")), "an edit of the cpu kernel's helper");
    assert_eq!(base, hash(lib("g.iter().map(|v| *v + *v).collect()", "v * 2.0", "2")), "an edit nothing reaches");
}

#[test]
fn editing_a_helper_of_the_vjps_cpu_kernel_changes_identity() {
    let attr = r#"name = "t/closure", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise,
                  tolerance = ulp(1), backward = vjp(twice_vjp, cpu = twice_vjp_cpu)"#;
    let reference = "pub fn twice<T: Real>(x: &[T]) -> Vec<T> { x.iter().map(|v| *v + *v).collect() }";
    let lib = |helper: &str, unrelated: &str| {
        format!(
            "use op_runtime::{{op, Real}};\n\
             #[op]\n\
             {reference}\n\
             pub fn twice_vjp<T: Real>(_x: &[T], g: &[T]) -> Vec<T> {{ g.iter().map(|v| *v + *v).collect() }}\n\
             fn double(v: f32) -> f32 {{ {helper} }}\n\
             pub fn twice_vjp_cpu(_x: &[f32], g: &[f32]) -> Vec<f32> {{ g.iter().map(|v| double(*v)).collect() }}\n\
             pub fn unrelated() -> u32 {{ {unrelated} }}\n"
        )
    };
    let dir = kernel_dir();
    let hash = |src: String| {
        std::fs::create_dir_all(dir.join("src")).expect("src dir");
        std::fs::write(dir.join("src/lib.rs"), src).expect("write lib.rs");
        hash_in_crate(&dir, attr, reference)
    };
    let base = hash(lib("v * 2.0", "1"));
    assert_ne!(base, hash(lib("v + v", "1")), "an edit of the VJP cpu kernel's helper");
    assert_eq!(base, hash(lib("v * 2.0", "2")), "an edit nothing reaches");
}

const DOUBLE_INC_WGSL: &str = r#"// out = 2 x through an included helper.
struct Params { n: u32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// @include "lib/twice.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= p.n) { return; }
    out[gid.x] = twice_(x[gid.x]);
}
"#;

const TWICE_WGSL: &str = "fn twice_(v: f32) -> f32 { return v + v; }\n";

const DOUBLE_ATTR: &str = r#"name = "t/double", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise,
    tolerance = ulp(0), backward = none,
    kernel(wgsl = "kernels/double_inc.wgsl", bindings(x: read, out: read_write, uniform(n)), threads = n)"#;

const DOUBLE_FN: &str = "pub fn double<T: Real>(x: &[T]) -> Vec<T> { x.iter().map(|v| *v + *v).collect() }";

/// A kernel directory with the WGSL kernel that includes `lib/twice.wgsl`, the helper as given.
fn include_dir(twice: &str) -> Scratch {
    let dir = kernel_dir();
    std::fs::create_dir_all(dir.join("kernels/lib")).expect("lib dir");
    write(&dir, "kernels/double_inc.wgsl", DOUBLE_INC_WGSL.as_bytes());
    write(&dir, "kernels/lib/twice.wgsl", twice.as_bytes());
    dir
}

#[test]
fn a_wgsl_include_is_a_header_of_the_kernel_and_its_bytes_are_in_the_identity() {
    let (checked, _) = check_tokens(tokens(DOUBLE_ATTR), tokens(DOUBLE_FN), &[include_dir(TWICE_WGSL).to_path_buf()]).expect("checks");
    let headers: Vec<&str> = checked.kernels[0].headers.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(headers, ["kernels/lib/twice.wgsl"]);
    let base = hash_of(DOUBLE_ATTR, DOUBLE_FN, &include_dir(TWICE_WGSL));
    assert_eq!(base, hash_of(DOUBLE_ATTR, DOUBLE_FN, &include_dir(TWICE_WGSL)));
    let edited = TWICE_WGSL.replace("v + v", "2.0 * v");
    assert_ne!(hash_of(DOUBLE_ATTR, DOUBLE_FN, &include_dir(&edited)), base, "an edit of the included helper changes the identity");
    let grown = format!("{TWICE_WGSL} ");
    assert_ne!(hash_of(DOUBLE_ATTR, DOUBLE_FN, &include_dir(&grown)), base);
}

#[test]
fn a_wgsl_include_that_is_missing_or_breaks_the_kernel_is_a_compile_error() {
    let dir = include_dir(TWICE_WGSL);
    std::fs::remove_file(dir.join("kernels/lib/twice.wgsl")).expect("remove");
    let errs = check_tokens(tokens(DOUBLE_ATTR), tokens(DOUBLE_FN), &[dir.to_path_buf()]).map(|_| ()).expect_err("missing header");
    let msg = errs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n");
    assert!(msg.contains("header `lib/twice.wgsl` included by this kernel (as `kernels/lib/twice.wgsl`)"), "{msg}");
    // The included text is checked with the kernel: a helper that does not compile is an error.
    let broken = include_dir("fn twice_(v: f32) -> f32 { return v + ; }\n");
    let errs = check_tokens(tokens(DOUBLE_ATTR), tokens(DOUBLE_FN), &[broken.to_path_buf()]).map(|_| ()).expect_err("broken header");
    assert!(!errs.is_empty());
}

/// The identity of an op in crate `app` of a workspace whose path dependency `helpers` holds
/// the helper the reference calls (`body` is that helper's body).
fn hash_with_path_dependency(body: &str) -> [u8; 32] {
    let ws = Scratch::new("op-spec-identity-ws-");
    let write = |rel: &str, text: &str| {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(p, text).expect("write");
    };
    write("Cargo.toml", "[workspace]\nmembers = [\"app\", \"helpers\"]\n[workspace.dependencies]\nhelpers = { path = \"helpers\" }\n");
    write("Cargo.lock", "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"helpers\"]\n\n[[package]]\nname = \"helpers\"\nversion = \"0.1.0\"\n");
    write("app/Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\nhelpers.workspace = true\n");
    write("helpers/Cargo.toml", "[package]\nname = \"helpers\"\nversion = \"0.1.0\"\n");
    write("helpers/src/lib.rs", &format!("pub fn scale(v: f32) -> f32 {{ {body} }}\n"));
    let reference = "pub fn scaled(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helpers::scale(*v)).collect() }";
    write("app/src/lib.rs", &format!("#[op]\n{reference}\n"));
    let attr =
        r#"name = "t/path_dep", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(1), backward = none"#;
    hash_in_crate(&ws.join("app"), attr, reference)
}

#[test]
fn editing_a_helper_in_a_path_dependency_changes_identity() {
    let base = hash_with_path_dependency("v * 2.0");
    assert_ne!(base, hash_with_path_dependency("v * 3.0"), "the path dependency's helper changed");
    assert_eq!(base, hash_with_path_dependency("v * 2.0"), "the same sources, elsewhere on disk");
}
