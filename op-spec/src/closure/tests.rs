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
        let line = line_of(&text, name);
        let site = Site { file: Some(path), line: Some((line, 1)), manifest_dir: Some(self.0.clone()), ..Site::default() };
        closure(&site, name, &[quote::quote!(#sig #block)], &rules.iter().collect::<Vec<_>>()).expect("a closure")
    }
}

/// The line of the attribute before `fn name` (the tests write `#[op]` on the line before, at
/// its start), as the compiler reports the attribute's position.
fn line_of(text: &str, name: &str) -> usize {
    let needle = format!("fn {name}");
    let at = text.lines().position(|l| l.contains(&needle)).unwrap_or_else(|| panic!("no fn {name}"));
    assert!(at > 0 && text.lines().nth(at - 1).unwrap().trim_start().starts_with('#'), "put an attribute line before `fn {name}`");
    at
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

const REFERENCE: &str = "#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }\n";

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
        "use crate::util::scale;\n#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| scale(*v)).collect() }\n",
        "use crate::util::scale as s;\n#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| s(*v)).collect() }\n",
        "use crate::util::*;\n#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| scale(*v)).collect() }\n",
        "#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| super::util::scale(*v)).collect() }\n",
        "#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| crate::util::scale(*v)).collect() }\n",
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
               #[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.to_vec() }\n";
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
               #[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| add_one!(S.twice(h::third(*v)))).collect() }\n";
    let k = TempCrate::new(&[("src/lib.rs", lib), ("src/elsewhere/h.rs", "pub fn third(v: f32) -> f32 { v / 3.0 }\n")]);
    let c = k.closure_of("src/lib.rs", "op_ref", &[]);
    for needle in ["v * 2.0", "$ e + 1.0", "v / 3.0", "struct S ;"] {
        assert!(c.text.contains(needle), "{needle} in {}", c.text);
    }
}

#[test]
fn an_unresolvable_name_over_approximates_by_name_and_an_unparsable_file_by_its_bytes() {
    // `T::scale` on a generic cannot be resolved: every `scale` in the crate is reached.
    let lib = "mod m;\n#[op]\npub fn op_ref<T: Tr>(x: &[T]) -> Vec<T> { x.iter().map(|v| T::scale(*v)).collect() }\npub trait Tr { fn scale(v: Self) -> Self; }\n";
    let m = "impl super::Tr for f32 { fn scale(v: f32) -> f32 { v * 5.0 } }\n";
    let k = TempCrate::new(&[("src/lib.rs", lib), ("src/m.rs", m)]);
    assert!(k.closure_of("src/lib.rs", "op_ref", &[]).text.contains("v * 5.0"));
    // A file of the tree that does not parse hides its items and its modules: the whole
    // package is covered instead, each file by its digest.
    let k = TempCrate::new(&[
        ("src/lib.rs", &format!("mod broken;\nfn helper(v: f32) -> f32 {{ v }}\n{REFERENCE}")),
        ("src/broken.rs", "fn ("),
        ("src/broken/below.rs", "pub fn g() {}"),
    ]);
    let c = k.closure_of("src/lib.rs", "op_ref", &[]);
    assert!(c.undecided.as_deref().is_some_and(|r| r.contains("src/broken.rs")), "{c:?}");
    let digest = |text: &str| blake3::hash(text.as_bytes()).to_hex().to_string();
    assert!(c.text.contains(&format!("//~ file src/broken.rs {}", digest("fn ("))), "{}", c.text);
    assert!(c.text.contains(&format!("//~ file src/broken/below.rs {}", digest("pub fn g() {}"))), "{}", c.text);
}

#[test]
fn the_closure_does_not_depend_on_where_the_crate_lives() {
    let files = [
        (
            "src/lib.rs",
            "mod util;\nuse util::helper;\n#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }\n",
        ),
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
    let shared =
        "fn helper(v: f32) -> f32 { v + 9.0 }\n#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }\n";
    let k = TempCrate::new(&[
        ("src/lib.rs", ""),
        ("examples/demo/main.rs", "mod shared;\nfn main() {}\n"),
        ("examples/demo/shared.rs", shared),
        ("tests/t.rs", "#[path = \"../examples/demo/shared.rs\"]\nmod shared;\n"),
    ]);
    assert!(k.closure_of("examples/demo/shared.rs", "op_ref", &[]).text.contains("v + 9.0"));
    let site = Site {
        file: Some(k.0.join("examples/demo/shared.rs")),
        line: Some((2, 1)),
        manifest_dir: Some(k.0.clone()),
        crate_name: Some("t".into()),
        ..Site::default()
    };
    let f: syn::ItemFn = syn::parse_str(shared.lines().nth(2).unwrap()).unwrap();
    let (sig, block) = (&f.sig, &f.block);
    let c = closure(&site, "op_ref", &[quote::quote!(#sig #block)], &[]).unwrap();
    assert!(c.undecided.is_none() && c.text.contains("v + 9.0"), "{c:?}");
}

/// A crate with many items over several modules (so any per-process hash order would show).
fn many_items_crate() -> TempCrate {
    let mut lib = String::from("mod a;\nmod b;\nuse a::*;\nuse b::{h0 as g0, h1 as g1};\n");
    lib.push_str("#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| f0(*v) + g0(*v) + g1(*v) + v.m3()).collect() }\n");
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
            let key = |i: &index::Item| {
                (i.name.clone(), i.kind, i.refs.clone(), squeeze(&i.text), i.members.clone(), i.mentions.clone(), i.cfgs.clone())
            };
            if key(x) != key(y) {
                return Some(format!("in {:?}: full {:?} = {}\nlight {:?} = {}", a.path, x.name, x.text, y.name, y.text));
            }
        }
        if (&a.path, a.items.len(), &a.uses, &a.globs, &a.children, &a.cfgs)
            != (&b.path, b.items.len(), &b.uses, &b.globs, &b.children, &b.cfgs)
        {
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
    // 15 functions, consts, statics, types, a foreign fn and a trait; a `macro_rules!` and an
    // item-level macro call; 8 impl blocks, each one item.
    assert_eq!(full.iter().map(|m| m.items.len()).sum::<usize>(), 26);
    // A shebang, an inner attribute at the top of a body: both parses take them alike.
    for text in
        ["#!/usr/bin/env run\nfn f() {}\n", "fn f() { #![allow(unused)] let x = 1; }\n", "impl X { fn f() { #![allow(unused)] } }\n"]
    {
        let (full, light) = both_indexes(text);
        assert_eq!(first_difference(&full.expect("full"), &light.expect("light")), None, "{text}");
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

/// Two variants of a crate that differ only in `a` vs `b` (in `src/lib.rs` after `prelude`),
/// with the reference `op_ref` declared after them: their closures' texts.
fn two_closures(prelude_a: &str, prelude_b: &str, reference: &str) -> (Closure, Closure) {
    let lib = |p: &str| format!("{p}\n#[op]\n{reference}\n");
    let (a, b) = (TempCrate::new(&[("src/lib.rs", &lib(prelude_a))]), TempCrate::new(&[("src/lib.rs", &lib(prelude_b))]));
    (a.closure_of("src/lib.rs", "op_ref", &[]), b.closure_of("src/lib.rs", "op_ref", &[]))
}

/// What the syntax calls without naming it: an operator, `*w`, `w[i]`, `for`, `==`, `.into()`,
/// each implemented for a type the reference names. Changing the impl changes the closure.
#[test]
fn impls_the_syntax_calls_are_reached_through_the_types() {
    // (the impl, a part of its body and an edit of that part, the reference).
    let cases: [(&str, (&str, &str), &str); 6] = [
        (
            "use std::ops::Add; pub struct W(pub f32); impl Add for W { type Output = W; fn add(self, o: W) -> W { W(self.0 + o.0) } }",
            ("+ o.0", "- o.0"),
            "pub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| (W(*v) + W(1.0)).0).collect() }",
        ),
        (
            "pub struct W(pub f32); impl std::ops::Deref for W { type Target = f32; fn deref(&self) -> &f32 { &self.0 } }",
            ("{ &self.0 }", "{ let r = &self.0; r }"),
            "pub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| *W(*v)).collect() }",
        ),
        (
            "pub struct T(pub Vec<f32>); impl std::ops::Index<usize> for T { type Output = f32; fn index(&self, i: usize) -> &f32 { &self.0[i] } }",
            ("&self.0[i]", "&self.0[i + 0]"),
            "pub fn op_ref(x: &[f32]) -> Vec<f32> { let t = T(x.to_vec()); vec![t[0]] }",
        ),
        (
            "pub struct It(pub usize); impl Iterator for It { type Item = f32; fn next(&mut self) -> Option<f32> { self.0 += 1; Some(1.0) } }",
            ("Some(1.0)", "Some(2.0)"),
            "pub fn op_ref(x: &[f32]) -> Vec<f32> { let mut o = vec![]; for d in It(0).take(x.len()) { o.push(d); } o }",
        ),
        (
            "pub struct E(pub f32); impl PartialEq for E { fn eq(&self, o: &E) -> bool { self.0 == o.0 } }",
            ("self.0 == o.0", "self.0 != o.0"),
            "pub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| if E(*v) == E(0.0) { 1.0 } else { 0.0 }).collect() }",
        ),
        (
            "pub struct F(pub f32); impl From<F> for f32 { fn from(f: F) -> f32 { f.0 + 1.0 } }",
            ("f.0 + 1.0", "f.0 + 2.0"),
            "pub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| { let y: f32 = F(*v).into(); y }).collect() }",
        ),
    ];
    for (prelude, (body, edit), reference) in cases {
        let edited = prelude.replace(body, edit);
        let (a, b) = two_closures(prelude, &edited, reference);
        assert!(a.undecided.is_none(), "{a:?}");
        assert!(a.text.contains(&crate::canon::canonical_code(body.parse().unwrap())), "{prelude}: {}", a.text);
        assert_ne!(a.text, b.text, "{prelude}");
    }
}

#[test]
fn items_enter_with_their_attributes_and_a_cfg_swap_changes_the_closure() {
    let helpers = |a: &str, b: &str| {
        format!("#[cfg({a})]\nfn helper(v: f32) -> f32 {{ v + 1.0 }}\n#[cfg({b})]\nfn helper(v: f32) -> f32 {{ v * 10.0 }}\n/// Docs do not count.\nfn unused() {{}}")
    };
    let reference = "pub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }";
    let (a, b) = two_closures(&helpers("test", "not(test)"), &helpers("not(test)", "test"), reference);
    assert_ne!(a.text, b.text);
    assert!(a.text.contains("# [cfg (test)] fn helper"), "{}", a.text);
    // Doc comments still do not count.
    let (c, d) = two_closures("/// One.\nfn helper(v: f32) -> f32 { v }", "/// Two.\nfn helper(v: f32) -> f32 { v }", reference);
    assert_eq!(c.text, d.text);
}

/// The same crate under two build configurations: the closure's text under each.
fn under_configs(lib: &str, cfgs: [&[&str]; 2]) -> (Closure, Closure) {
    let k = TempCrate::new(&[("src/lib.rs", lib)]);
    let text = std::fs::read_to_string(k.0.join("src/lib.rs")).unwrap();
    let parsed = syn::parse_file(&text).unwrap();
    let f = find_fn(&parsed.items, "op_ref").unwrap();
    let (sig, block) = (&f.sig, &f.block);
    let run = |cfg: &[&str]| {
        let mut args: Vec<String> = vec!["--crate-name".into(), "k".into()];
        for c in cfg {
            args.extend(["--cfg".to_string(), c.to_string()]);
        }
        let site = Site {
            file: Some(k.0.join("src/lib.rs")),
            line: Some((line_of(&text, "op_ref"), 1)),
            manifest_dir: Some(k.0.clone()),
            config: BuildConfig::from_args(&args),
            ..Site::default()
        };
        closure(&site, "op_ref", &[quote::quote!(#sig #block)], &[]).unwrap()
    };
    (run(cfgs[0]), run(cfgs[1]))
}

#[test]
fn the_cfgs_the_code_tests_are_folded_in_with_their_values() {
    // `cfg!(feature)` in the reference itself, `#[cfg]` on a helper, `cfg_attr` on a module.
    let libs = [
        "#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { if cfg!(feature = \"fast\") { x.to_vec() } else { vec![] } }\n",
        "#[cfg(feature = \"fast\")]\nfn helper() -> f32 { 1.0 }\n#[cfg(not(feature = \"fast\"))]\nfn helper() -> f32 { 2.0 }\n#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { vec![helper(); x.len()] }\n",
    ];
    for lib in libs {
        let (on, off) = under_configs(lib, [&["feature=\"fast\""], &["feature=\"other\""]]);
        assert_ne!(on.text, off.text, "{lib}");
        assert!(
            on.text.contains("//~ cfg feature=\"fast\" set by --cfg") && off.text.contains("//~ cfg feature=\"fast\" not set by --cfg"),
            "{}",
            off.text
        );
        // A feature the code does not test does not count.
        let (a, b) = under_configs(lib, [&["feature=\"fast\""], &["feature=\"fast\"", "feature=\"other\""]]);
        assert_eq!(a.text, b.text);
    }
    // Code that tests no cfg: the configuration does not count.
    let (a, b) = under_configs("#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.to_vec() }\n", [&[], &["feature=\"fast\""]]);
    assert_eq!(a.text, b.text);
}

#[test]
fn two_ops_of_one_name_in_two_inline_modules_of_one_file_each_cover_their_own_helper() {
    let lib = "mod a {\n    fn helper(v: f32) -> f32 { v + 1.0 }\n    #[op]\n    pub fn f(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }\n}\n\
               mod b {\n    fn helper(v: f32) -> f32 { v * 10.0 }\n    #[op]\n    pub fn f(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }\n}\n";
    let k = TempCrate::new(&[("src/lib.rs", lib)]);
    let f: syn::ItemFn = syn::parse_str("pub fn f(x: &[f32]) -> Vec<f32> { x.iter().map(|v| helper(*v)).collect() }").unwrap();
    let (sig, block) = (&f.sig, &f.block);
    let at = |line: usize| {
        let site = Site { file: Some(k.0.join("src/lib.rs")), line: Some((line, 5)), manifest_dir: Some(k.0.clone()), ..Site::default() };
        closure(&site, "f", &[quote::quote!(#sig #block)], &[]).unwrap()
    };
    let (a, b) = (at(3), at(8));
    assert!(a.text.contains("v + 1.0") && !a.text.contains("v * 10.0"), "{}", a.text);
    assert!(b.text.contains("v * 10.0") && !b.text.contains("v + 1.0"), "{}", b.text);
}

#[test]
fn an_attribute_a_macro_wrote_or_a_missing_line_covers_the_whole_package() {
    let lib =
        "macro_rules! decl { () => {\n    #[op]\n    pub fn op_ref(x: &[f32]) -> Vec<f32> { x.to_vec() }\n} }\ndecl!();\nmod other;\n";
    let run = |other: &str, line: Option<(usize, usize)>| {
        let k = TempCrate::new(&[("src/lib.rs", lib), ("src/other.rs", other), ("tests/t.rs", "fn t() {}")]);
        let site = Site { file: Some(k.0.join("src/lib.rs")), line, manifest_dir: Some(k.0.clone()), ..Site::default() };
        let f: syn::ItemFn = syn::parse_str("pub fn op_ref(x: &[f32]) -> Vec<f32> { x.to_vec() }").unwrap();
        let (sig, block) = (&f.sig, &f.block);
        closure(&site, "op_ref", &[quote::quote!(#sig #block)], &[]).unwrap()
    };
    for line in [Some((2, 5)), None] {
        let (a, b) = (run("pub fn h() -> u8 { 1 }", line), run("pub fn h() -> u8 { 2 }", line));
        assert!(a.undecided.is_some(), "{a:?}");
        assert_ne!(a.text, b.text, "any edit of the package counts");
        assert!(a.text.contains("//~ file src/other.rs") && a.text.contains("//~ file tests/t.rs"), "{}", a.text);
    }
    // Nothing to read at all: a typed error, never an empty closure.
    let err = closure(&Site::default(), "op_ref", &[], &[]).unwrap_err();
    assert!(matches!(err, ClosureError::NothingToRead { .. }) && err.to_string().contains("`op_ref`"), "{err}");
}

/// A workspace with the declaring crate `app` and a path dependency `dep` (and a registry
/// crate in its lock file): `dep_helper` is `dep`'s helper's body, `version` the registry
/// crate's locked version.
fn workspace(dep_helper: &str, version: &str, renamed: bool) -> TempCrate {
    let dep_key = if renamed { "mydep = { package = \"dep\", path = \"../dep\" }" } else { "dep = { path = \"../dep\" }" };
    let name = if renamed { "mydep" } else { "dep" };
    TempCrate::new(&[
        ("Cargo.toml", "[workspace]\nmembers = [\"app\", \"dep\"]\n"),
        ("Cargo.lock", &format!("version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"dep\", \"reg\"]\n\n[[package]]\nname = \"dep\"\nversion = \"0.1.0\"\n\n[[package]]\nname = \"reg\"\nversion = \"{version}\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"00\"\n")),
        ("app/Cargo.toml", &format!("[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\n{dep_key}\nreg = \"1\"\n")),
        ("app/src/lib.rs", &format!("use {name}::helper;\n#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> {{ x.iter().map(|v| helper(*v) + reg::k()).collect() }}\n")),
        ("dep/Cargo.toml", "[package]\nname = \"dep\"\nversion = \"0.1.0\"\n"),
        ("dep/src/lib.rs", "mod inner;\npub use inner::helper;\n"),
        ("dep/src/inner.rs", &format!("pub fn helper(v: f32) -> f32 {{ {dep_helper} }}\n")),
    ])
}

#[test]
fn a_path_dependency_is_pinned_by_its_sources_and_a_registry_crate_by_its_lock_entry() {
    let closure_of = |k: &TempCrate| {
        let app = TempCrate(k.0.join("app"));
        let c = app.closure_of("src/lib.rs", "op_ref", &[]);
        std::mem::forget(app);
        c
    };
    for renamed in [false, true] {
        let base = closure_of(&workspace("v + 1.0", "1.0.0", renamed));
        assert!(base.undecided.is_none(), "{base:?}");
        assert!(base.text.contains("//~ crate reg = reg 1.0.0"), "{}", base.text);
        assert_ne!(base.text, closure_of(&workspace("v + 2.0", "1.0.0", renamed)).text, "an edit of the path dependency's helper");
        assert_ne!(base.text, closure_of(&workspace("v + 1.0", "1.0.1", renamed)).text, "another locked version");
    }
}

#[test]
fn a_test_or_example_calling_its_packages_library_pins_it_by_its_sources() {
    let files = |helper: &str| {
        [
            ("Cargo.toml".to_string(), "[package]\nname = \"my-pkg\"\nversion = \"0.1.0\"\n".to_string()),
            ("src/lib.rs".to_string(), format!("pub fn helper(v: f32) -> f32 {{ {helper} }}\n")),
            (
                "tests/t.rs".to_string(),
                "#[op]\npub fn op_ref(x: &[f32]) -> Vec<f32> { x.iter().map(|v| my_pkg::helper(*v)).collect() }\n".to_string(),
            ),
        ]
    };
    let text = |helper: &str| {
        let fs = files(helper);
        let refs: Vec<(&str, &str)> = fs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let k = TempCrate::new(&refs);
        let c = k.closure_of("tests/t.rs", "op_ref", &[]);
        assert!(c.undecided.is_none() && c.text.contains("//~ crate my_pkg = path package my-pkg"), "{c:?}");
        c.text
    };
    assert_ne!(text("v + 1.0"), text("v + 2.0"), "an edit of the library's helper");
}
