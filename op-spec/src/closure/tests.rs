use super::*;
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
