//! The identity covers the code an op runs: two ops with one name and version whose references
//! are token for token the same but call different helpers (in the same module, in another
//! module, in another file), or differ only in code the syntax calls without naming it (an
//! operator, `*w`, `t[i]`, `for`, `==`, `.into()`), in a helper's `cfg` attributes, or in a
//! helper of one name in two inline modules of one file (`identity_closure/holes.rs`), get two
//! identities; registering both is a typed error naming both declaration sites; and each,
//! registered on its own, computes its own result. The `cfg`s a reference tests enter with
//! their values as the compiler was configured, and a path dependency it names with a digest
//! of its sources.

use op_runtime::OpDecl;
use op_runtime::RegistrationError;
use op_runtime::{Registry, Tensor};

/// Declares `twin` (the same tokens in every module) calling `helper` as the module resolves it.
#[rustfmt::skip] // rustfmt re-indents an attribute inside a macro body on every run
macro_rules! twin {
    ($name:literal) => {
        /// Applies the module's helper to every element.
        #[op_runtime::op(
            name = $name,
            version = 1,
            signature(x: f32[n]) -> f32[n],
            category = elementwise,
            tolerance = ulp(0),
            backward = none
        )]
        pub fn twin<T: op_runtime::Real>(x: &[T]) -> Vec<T> {
            x.iter().map(|v| helper(*v)).collect()
        }
    };
}

/// The helper in the same module as the reference.
mod same_module_a {
    use op_runtime::Real;
    fn helper<T: Real>(v: T) -> T {
        v + T::one()
    }
    twin!("test/closure/same_module");
}
mod same_module_b {
    use op_runtime::Real;
    fn helper<T: Real>(v: T) -> T {
        v * T::from_f64(10.0)
    }
    twin!("test/closure/same_module");
}

/// The helper in another module, imported by name.
mod other_module_a {
    mod util {
        use op_runtime::Real;
        pub fn helper<T: Real>(v: T) -> T {
            v + T::one()
        }
    }
    use util::helper;
    twin!("test/closure/other_module");
}
mod other_module_b {
    mod util {
        use op_runtime::Real;
        pub fn helper<T: Real>(v: T) -> T {
            v * T::from_f64(10.0)
        }
    }
    use util::helper;
    twin!("test/closure/other_module");
}

/// The helper in another file.
#[path = "identity_closure/helper_file_a.rs"]
mod helper_file_a;
#[path = "identity_closure/helper_file_b.rs"]
mod helper_file_b;
mod other_file_a {
    use crate::helper_file_a::helper;
    twin!("test/closure/other_file");
}
mod other_file_b {
    use crate::helper_file_b::helper;
    twin!("test/closure/other_file");
}

/// The holes: pairs of ops written out in one file (see its header).
#[path = "identity_closure/holes.rs"]
mod holes;

fn run(decl: &'static OpDecl) -> Vec<f32> {
    let h = Registry::new().register(decl).expect("registers on its own");
    let out = h.call(&[&Tensor::vector(vec![1.0f32, 2.0])], &[]).expect("runs");
    out.outputs[0].as_slice::<f32>().expect("f32").to_vec()
}

#[test]
fn references_that_differ_only_in_a_helper_get_two_identities_wherever_the_helper_lives() {
    let pairs: [(&'static OpDecl, &'static OpDecl); 3] = [
        (&same_module_a::twin::DECL, &same_module_b::twin::DECL),
        (&other_module_a::twin::DECL, &other_module_b::twin::DECL),
        (&other_file_a::twin::DECL, &other_file_b::twin::DECL),
    ];
    for (a, b) in pairs {
        assert_eq!(a.body_tokens.lines().next(), b.body_tokens.lines().next(), "the references' own tokens are the same");
        let identity = |d: &'static OpDecl| Registry::new().register(d).expect("registers").op().hash().to_owned();
        assert_ne!(identity(a), identity(b), "{} and {}: one identity for two computations", a.site, b.site);
        // Both under one registry: a typed error naming both declaration sites.
        let r = Registry::new();
        r.register(a).expect("the first registers");
        match r.register(b) {
            Err(e @ RegistrationError::ContentChanged { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(a.site) && msg.contains(b.site), "{msg}");
            }
            other => panic!("expected ContentChanged, got {other:?}"),
        }
        // Each on its own computes its own result.
        assert_eq!(run(a), vec![2.0, 3.0], "{}", a.site);
        assert_eq!(run(b), vec![10.0, 20.0], "{}", b.site);
    }
}

/// The closure part of an op's code identity (after the reference's own tokens).
fn closure(d: &OpDecl) -> &str {
    d.body_tokens.split_once("\n//~ closure\n").map_or("", |(_, c)| c)
}

/// Two ops of one name and version: two identities, refused together with both sites named,
/// each computing its own result (`[2, 3]` and `[10, 20]` from `[1, 2]`).
fn assert_two_computations(hole: &str, a: &'static OpDecl, b: &'static OpDecl) {
    assert_eq!(a.body_tokens.lines().next(), b.body_tokens.lines().next(), "{hole}: the references' own tokens are the same");
    assert_ne!(a.hash, b.hash, "{hole}: one code identity for two computations");
    let identity = |d: &'static OpDecl| Registry::new().register(d).expect("registers").op().hash().to_owned();
    assert_ne!(identity(a), identity(b), "{hole}");
    let r = Registry::new();
    r.register(a).expect("the first registers");
    match r.register(b) {
        Err(e @ RegistrationError::ContentChanged { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(a.site) && msg.contains(b.site), "{hole}: {msg}");
        }
        other => panic!("{hole}: expected ContentChanged, got {other:?}"),
    }
    assert_eq!(run(a), vec![2.0, 3.0], "{hole}: {}", a.site);
    assert_eq!(run(b), vec![10.0, 20.0], "{hole}: {}", b.site);
}

#[test]
fn code_the_syntax_calls_and_a_helper_in_another_inline_module_are_each_covered() {
    let pairs: [(&str, &'static OpDecl, &'static OpDecl); 7] = [
        ("operator", &holes::add::a::twin::DECL, &holes::add::b::twin::DECL),
        ("deref", &holes::deref::a::twin::DECL, &holes::deref::b::twin::DECL),
        ("index", &holes::index::a::twin::DECL, &holes::index::b::twin::DECL),
        ("iterator", &holes::iterator::a::twin::DECL, &holes::iterator::b::twin::DECL),
        ("partial_eq", &holes::partial_eq::a::twin::DECL, &holes::partial_eq::b::twin::DECL),
        ("from", &holes::from::a::twin::DECL, &holes::from::b::twin::DECL),
        ("wrong module", &holes::wrong_module::a::twin::DECL, &holes::wrong_module::b::twin::DECL),
    ];
    for (hole, a, b) in pairs {
        // Each covers the code it runs (its impl, its module's helper), not the other's.
        let (ca, cb) = (closure(a), closure(b));
        assert!(ca.contains("1.0_f32") && !ca.contains("10.0_f32"), "{hole}: {ca}");
        assert!(cb.contains("10.0_f32") && !cb.contains(" 1.0_f32"), "{hole}: {cb}");
        assert_two_computations(hole, a, b);
    }
}

#[test]
fn swapping_two_helpers_cfg_attributes_changes_the_identity() {
    let (a, b) = (&holes::cfg_swap::a::twin::DECL, &holes::cfg_swap::b::twin::DECL);
    // Both reach both helpers (one of each pair is compiled out): only the attributes differ.
    for d in [a, b] {
        assert!(closure(d).contains("1.0_f32") && closure(d).contains("10.0_f32"), "{}", closure(d));
        assert!(closure(d).contains("cfg (test)") && closure(d).contains("cfg (not (test))"), "{}", closure(d));
    }
    assert_two_computations("cfg swap", a, b);
}

#[test]
fn the_cfgs_a_reference_tests_enter_with_the_compilers_configuration() {
    // The values come from the compiler's command line: a feature this package does not have,
    // and `test`, which `--test` sets (a built-in: the line of what decides them follows).
    let feature = closure(&holes::cfgs::feature::DECL);
    assert!(feature.contains("//~ cfg feature=\"identity_fixture_never_on\" not set by --cfg"), "{feature}");
    let test = closure(&holes::cfgs::test::DECL);
    assert!(test.contains("//~ cfg test not set by --cfg"), "{test}");
    assert!(test.lines().any(|l| l.starts_with("//~ cfg built-in") && l.contains("--test")), "{test}");
    assert_eq!(run(&holes::cfgs::test::DECL), vec![2.0, 3.0]);
}

#[test]
fn a_path_dependency_the_reference_names_is_pinned_by_its_sources() {
    let c = closure(&holes::path_dep::generic::DECL);
    let pin = c.lines().find(|l| l.starts_with("//~ crate op_runtime = op-runtime ")).unwrap_or_else(|| panic!("{c}"));
    // `op-runtime 0.1.0 with N locked packages <digest of their entries and path sources>`.
    assert_eq!(pin.rsplit(' ').next().map(str::len), Some(64), "{pin}");
    assert_eq!(run(&holes::path_dep::generic::DECL), vec![2.0, 3.0]);
}
