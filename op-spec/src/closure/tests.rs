use super::*;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A throwaway crate on disk: `files` as (path under the crate, contents).
struct TempCrate(PathBuf);

impl TempCrate {
    fn new(files: &[(&str, &str)]) -> TempCrate {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!("op-closure-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        for (p, text) in files {
            let path = dir.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        TempCrate(dir)
    }

    /// The closure of function `name` declared in `file`, with extra rule paths.
    fn closure_of(&self, file: &str, name: &str, rules: &[&str]) -> Closure {
        let path = self.0.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let parsed = syn::parse_file(&text).unwrap();
        let f = find_fn(&parsed.items, name).unwrap_or_else(|| panic!("no fn {name} in {file}"));
        let (sig, block) = (&f.sig, &f.block);
        let rules: Vec<syn::Path> = rules.iter().map(|r| syn::parse_str(r).unwrap()).collect();
        let site = Site { file: Some(path), manifest_dir: Some(self.0.clone()), crate_name: None };
        closure(&site, name, &[quote::quote!(#sig #block)], &rules.iter().collect::<Vec<_>>())
    }
}

impl Drop for TempCrate {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn find_fn<'a>(items: &'a [syn::Item], name: &str) -> Option<&'a syn::ItemFn> {
    items.iter().find_map(|i| match i {
        syn::Item::Fn(f) if f.sig.ident == name => Some(f),
        syn::Item::Mod(m) => m.content.as_ref().and_then(|(_, inner)| find_fn(inner, name)),
        _ => None,
    })
}

const REFERENCE: &str = "pub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }\n";

#[test]
fn helpers_of_the_same_name_in_two_modules_give_two_closures() {
    let a = format!("fn helper(v: f32) -> f32 {{ v + 1.0 }}\n{REFERENCE}");
    let b = format!("fn helper(v: f32) -> f32 {{ v * 10.0 }}\n{REFERENCE}");
    let k = TempCrate::new(&[("src/lib.rs", "mod a;\nmod b;\n"), ("src/a.rs", &a), ("src/b.rs", &b)]);
    let (ca, cb) = (k.closure_of("src/a.rs", "op_ref", &[]), k.closure_of("src/b.rs", "op_ref", &[]));
    assert!(ca.text.contains("v + 1.0") && !ca.text.contains("v * 10.0"), "{}", ca.text);
    assert!(cb.text.contains("v * 10.0") && !cb.text.contains("v + 1.0"), "{}", cb.text);
}

#[test]
fn helpers_in_another_module_and_file_are_reached_through_every_import_form() {
    let util = "pub fn scale(v: f32) -> f32 { v * K }\npub const K: f32 = 3.0;\nfn unrelated() -> u8 { 7 }\n";
    let forms = [
        "use crate::util::scale;\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| scale(*v)).collect() }\n",
        "use crate::util::scale as s;\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| s(*v)).collect() }\n",
        "use crate::util::*;\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| scale(*v)).collect() }\n",
        "pub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| super::util::scale(*v)).collect() }\n",
        "pub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| crate::util::scale(*v)).collect() }\n",
    ];
    for form in forms {
        let k = TempCrate::new(&[("src/lib.rs", "mod ops;\nmod util;\n"), ("src/util.rs", util), ("src/ops.rs", form)]);
        let c = k.closure_of("src/ops.rs", "op_ref", &[]);
        assert!(c.text.contains("v * K"), "the helper is reached via {form:?}: {}", c.text);
        assert!(c.text.contains("3.0"), "and the const it uses: {}", c.text);
        assert!(!c.text.contains("unrelated"), "nothing unreached: {}", c.text);
    }
}

#[test]
fn editing_a_reached_helper_changes_the_closure_and_an_unrelated_edit_does_not() {
    let files = |helper: &str, other: &str| {
        vec![("src/lib.rs".to_string(), format!("fn helper(v: f32) -> f32 {{ {helper} }}\nfn other() -> u8 {{ {other} }}\n{REFERENCE}"))]
    };
    let text = |fs: Vec<(String, String)>| {
        let refs: Vec<(&str, &str)> = fs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        TempCrate::new(&refs).closure_of("src/lib.rs", "op_ref", &[]).text
    };
    let base = text(files("v + 1.0", "1"));
    assert_ne!(base, text(files("v + 2.0", "1")));
    assert_eq!(base, text(files("v + 1.0", "2")));
    // Layout and comments do not count.
    assert_eq!(base, text(files("v  +  1.0 /* same */", "1")));
}

#[test]
fn rule_paths_bring_in_the_rules_and_their_helpers() {
    let lib = "fn grad_helper(g: f32) -> f32 { g * 2.0 }\n\
               pub fn my_vjp(x: &[f32], g: &[f32]) -> Vec<f32> { g.iter().map(|v| grad_helper(*v)).collect() }\n\
               pub fn op_ref(x: &[f32]) -> Vec<f32> { x.to_vec() }\n";
    let k = TempCrate::new(&[("src/lib.rs", lib)]);
    assert!(!k.closure_of("src/lib.rs", "op_ref", &[]).text.contains("g * 2.0"));
    let c = k.closure_of("src/lib.rs", "op_ref", &["my_vjp"]);
    assert!(c.text.contains("g * 2.0") && c.text.contains("grad_helper"), "{}", c.text);
}

#[test]
fn methods_macros_traits_and_path_modules_are_reached() {
    let lib = "#[path = \"elsewhere/h.rs\"]\nmod h;\n\
               struct S;\nimpl S { fn twice(&self, v: f32) -> f32 { v * 2.0 } }\n\
               macro_rules! add_one { ($e:expr) => { $e + 1.0 } }\n\
               pub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| add_one!(S.twice(h::third(*v)))).collect() }\n";
    let k = TempCrate::new(&[("src/lib.rs", lib), ("src/elsewhere/h.rs", "pub fn third(v: f32) -> f32 { v / 3.0 }\n")]);
    let c = k.closure_of("src/lib.rs", "op_ref", &[]);
    for needle in ["v * 2.0", "$ e + 1.0", "v / 3.0", "struct S ;"] {
        assert!(c.text.contains(needle), "{needle} in {}", c.text);
    }
}

#[test]
fn an_unresolvable_name_over_approximates_by_name_and_an_unparsable_file_by_its_bytes() {
    // `T::scale` on a generic cannot be resolved: every `scale` in the crate is reached.
    let lib = "mod m;\npub fn op_ref<T: Tr>(x: &[T]) -> Vec<T> { x.iter().map(|v| T::scale(*v)).collect() }\npub trait Tr { fn scale(v: Self) -> Self; }\n";
    let m = "impl super::Tr for f32 { fn scale(v: f32) -> f32 { v * 5.0 } }\n";
    let k = TempCrate::new(&[("src/lib.rs", lib), ("src/m.rs", m)]);
    assert!(k.closure_of("src/lib.rs", "op_ref", &[]).text.contains("v * 5.0"));
    let k = TempCrate::new(&[
        ("src/lib.rs", &format!("mod broken;\nfn helper(v: f32) -> f32 {{ v }}\n{REFERENCE}")),
        ("src/broken.rs", "fn ("),
    ]);
    assert!(k.closure_of("src/lib.rs", "op_ref", &[]).text.contains("fn ("));
}

#[test]
fn the_closure_does_not_depend_on_where_the_crate_lives() {
    let files = [
        ("src/lib.rs", "mod util;\nuse util::helper;\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }\n"),
        ("src/util.rs", "pub fn helper(v: f32) -> f32 { v - 4.0 }\n"),
    ];
    let (a, b) = (TempCrate::new(&files), TempCrate::new(&files));
    assert_ne!(a.0, b.0);
    let (ca, cb) = (a.closure_of("src/lib.rs", "op_ref", &[]), b.closure_of("src/lib.rs", "op_ref", &[]));
    assert_eq!(ca.text, cb.text);
    assert!(ca.text.contains("v - 4.0"));
}

#[test]
fn the_target_root_is_found_for_tests_examples_and_path_included_files() {
    let shared = "fn helper(v: f32) -> f32 { v + 9.0 }\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }\n";
    let k = TempCrate::new(&[
        ("src/lib.rs", ""),
        ("examples/demo/main.rs", "mod shared;\nfn main() {}\n"),
        ("examples/demo/shared.rs", shared),
        ("tests/t.rs", "#[path = \"../examples/demo/shared.rs\"]\nmod shared;\n"),
    ]);
    assert!(k.closure_of("examples/demo/shared.rs", "op_ref", &[]).text.contains("v + 9.0"));
    let site = Site { file: Some(k.0.join("examples/demo/shared.rs")), manifest_dir: Some(k.0.clone()), crate_name: Some("t".into()) };
    let f: syn::ItemFn = syn::parse_str(shared.lines().nth(1).unwrap()).unwrap();
    let (sig, block) = (&f.sig, &f.block);
    assert!(closure(&site, "op_ref", &[quote::quote!(#sig #block)], &[]).text.contains("v + 9.0"));
}

/// A crate with many items over several modules (so any per-process hash order would show).
fn many_items_crate() -> TempCrate {
    let mut lib = String::from("mod a;\nmod b;\nuse a::*;\nuse b::{h0 as g0, h1 as g1};\n");
    lib.push_str("pub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| f0(*v) + g0(*v) + g1(*v) + v.m3()).collect() }\n");
    let a: String = (0..40).map(|i| format!("pub fn f{i}(v: f32) -> f32 {{ f{}(v) + {i}.0 }}\npub trait T{i} {{ fn m{i}(&self) -> f32; }}\nimpl T{i} for f32 {{ fn m{i}(&self) -> f32 {{ *self * {i}.0 }} }}\n", (i + 1) % 40)).collect();
    let b: String = (0..40).map(|i| format!("pub fn h{i}(v: f32) -> f32 {{ v - {i}.0 }}\n")).collect();
    TempCrate::new(&[("src/lib.rs", &lib), ("src/a.rs", &a), ("src/b.rs", &b)])
}

/// Two processes (other hash seeds, other allocation patterns) compute the same closure of the
/// same source: the identity of two clean builds cannot differ by process state. The child is
/// this test binary, re-run on this test with `OP_CLOSURE_CHILD` set.
#[test]
fn two_processes_compute_the_same_closure() {
    let k = many_items_crate();
    let c = k.closure_of("src/lib.rs", "op_ref", &[]);
    let digest = blake3::hash(c.text.as_bytes()).to_hex().to_string();
    if std::env::var_os("OP_CLOSURE_CHILD").is_some() {
        println!("CLOSURE {digest}");
        return;
    }
    assert!(c.items > 40, "the fixture reaches many items: {}", c.items);
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new(exe)
        .args(["--exact", "closure::tests::two_processes_compute_the_same_closure", "--nocapture", "--test-threads=1"])
        .env("OP_CLOSURE_CHILD", "1")
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The harness prints the test's name on the same line, before the child's output.
    let child = stdout.split("CLOSURE ").nth(1).and_then(|rest| rest.split_whitespace().next());
    assert_eq!(child, Some(digest.as_str()), "child output: {stdout}");
}

/// The first difference of two indexes, shortly (a whole index is too long to read). Texts
/// are compared without their spaces: the full parse re-emits a body's tokens from its syntax
/// tree, which splits joint punctuation (`>>` of nested generics becomes `> >`, `||` of a
/// closure `| |`), while the light parse keeps the body's tokens as written, as the
/// reference's own tokens always were.
fn first_difference(full: &[index::Module], light: &[index::Module]) -> Option<String> {
    if full.len() != light.len() {
        return Some(format!("{} modules vs {}", full.len(), light.len()));
    }
    let squeeze = |t: &str| t.replace(' ', "");
    for (a, b) in full.iter().zip(light) {
        for (x, y) in a.items.iter().zip(&b.items) {
            if (&x.name, x.kind, &x.refs, squeeze(&x.text)) != (&y.name, y.kind, &y.refs, squeeze(&y.text)) {
                return Some(format!("in {:?}: full {:?} = {}\nlight {:?} = {}", a.path, x.name, x.text, y.name, y.text));
            }
        }
        if (&a.path, a.items.len(), &a.uses, &a.globs, &a.children) != (&b.path, b.items.len(), &b.uses, &b.globs, &b.children) {
            return Some(format!(
                "module {:?}: {} items vs {}, uses/globs/children {:?} vs {:?}",
                a.path,
                a.items.len(),
                b.items.len(),
                (&a.uses, &a.globs, &a.children),
                (&b.uses, &b.globs, &b.children)
            ));
        }
    }
    None
}

/// Both parses of `text`, indexed: (full, light); `None` where a parse does not take it.
fn both_indexes(text: &str) -> (Option<Vec<index::Module>>, Option<Vec<index::Module>>) {
    let full = syn::parse_file(text).ok().map(|f| index::index_file(&f));
    let light = light::parse_file(text).ok().map(index::index_light);
    (full, light)
}

/// Items of every kind the index reads, in the forms that make a light parse go wrong: impl
/// headers (generics or a qualified path after `impl <`, negative, unsafe, const generic
/// arguments in braces, where clauses), functions with every qualifier, methods with
/// `default`, associated consts, nested and out-of-line modules, `use` trees.
const EVERY_FORM: &str = r#"
//! Inner doc.
#![allow(dead_code)]
use std::collections::{HashMap as Map, self};
use crate::a::*;
#[path = "x/y.rs"]
mod other;
pub(crate) mod inline {
    #![allow(unused)]
    /// A doc comment.
    pub fn f<T: Copy>(x: T) -> T where T: Clone { let y = { x }; y }
    mod deeper { fn g() -> [u8; { 3 }] { [0; 3] } }
}
pub const fn c() -> u32 { 1 }
pub async fn a() {}
pub unsafe extern "C" fn e(x: i32) -> i32 { x }
extern "C" { fn ext(x: i32); }
extern crate alloc;
static S: [u8; 2] = [1, 2];
const K: u32 = { let k = 2; k * 3 };
struct P<T>(T);
struct Q { /// Field doc.
    a: u8 }
enum E { A, B(u8) }
union U { a: u32, b: f32 }
type Alias<T> = Vec<T>;
macro_rules! m { ($x:expr) => { $x + 1 }; }
m!(3);
trait Tr { const C: u8; fn d(&self) -> u8 { 1 } fn r(&self); }
impl Tr for u8 { const C: u8 = 2; fn r(&self) {} }
impl<T: Copy> P<T> where T: Default { pub fn new(t: T) -> Self { P(t) } pub(crate) const Z: u8 = 0; type X = u8; }
impl<T> !Send for P<T> {}
unsafe impl<T> Sync for P<T> {}
impl<const N: usize> Tr for [u8; N] where [u8; N]: Sized { const C: u8 = N as u8; fn r(&self) { let _ = N; } }
impl <T as Tr>::Out {}
impl<'a> P<&'a u8> { fn life(&self) -> &'a u8 { self.0 } }
impl P<u16> { default fn dflt(&self) {} }
fn generic_default<const N: usize>() -> usize { N }
fn body_with_items() { fn inner() {} struct L; impl L { fn m(&self) {} } }
"#;

#[test]
fn the_light_parse_indexes_every_form_as_the_full_parse_does() {
    let (full, light) = both_indexes(EVERY_FORM);
    let (full, light) = (full.expect("syn parses the forms"), light.expect("the light parse takes them"));
    assert_eq!(first_difference(&full, &light), None);
    assert_eq!(full.iter().map(|m| m.items.len()).sum::<usize>(), 25);
    // What it leaves to the full parse: a shebang, an inner attribute at the top of a body
    // (the full parse moves it into the attributes the index clears).
    for text in
        ["#!/usr/bin/env run\nfn f() {}\n", "fn f() { #![allow(unused)] let x = 1; }\n", "impl X { fn f() { #![allow(unused)] } }\n"]
    {
        let (full, light) = both_indexes(text);
        assert!(full.is_some() && light.is_none(), "{text}");
    }
    // It refuses what syn refuses outside bodies (it does not read bodies: rustc refuses those).
    for text in ["fn f( {}", "impl X for {}", "mod m { fn }", "impl !X {}"] {
        assert!(both_indexes(text).1.is_none(), "{text}");
    }
}

/// Every Rust file of this workspace (the built-ins, the tests, the examples): the light
/// parse's index is the full parse's, wherever it takes the file.
#[test]
fn the_light_parse_indexes_this_workspace_as_the_full_parse_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf();
    let mut dirs = vec![root];
    let (mut compared, mut files) = (0usize, 0usize);
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
            if p.is_dir() && !name.starts_with('.') && name != "target" {
                dirs.push(p);
            } else if name.ends_with(".rs") {
                files += 1;
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                // Where only the light parse takes a file, a body does not parse: rustc
                // refuses it (the light parse does not read bodies).
                if let (Some(full), Some(light)) = both_indexes(&text) {
                    assert_eq!(first_difference(&full, &light), None, "{}", p.display());
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 100 && compared * 10 >= files * 9, "compared {compared} of {files} files");
}
