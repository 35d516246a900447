//! The identity covers the code an op runs: two ops with one name and version whose references
//! are token for token the same but call different helpers (in the same module, in another
//! module, in another file) get two identities; registering both is a typed error naming both
//! declaration sites; and each, registered on its own, computes its own result.

use op_runtime::core::decl::OpDecl;
use op_runtime::core::error::KernelRegistrationError;
use op_runtime::{Registry, Tensor};

/// Declares `twin` (the same tokens in every module) calling `helper` as the module resolves it.
macro_rules! twin {
    ($name:literal) => {
        /// Applies the module's helper to every element.
        #[op_runtime::op(name = $name, version = 1, signature(x: f32[n]) -> f32[n],
                                                     category = elementwise, tolerance = ulp(0), backward = none)]
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
        let identity = |d: &'static OpDecl| Registry::new().register(d).expect("registers").op().hash;
        assert_ne!(identity(a), identity(b), "{} and {}: one identity for two computations", a.site, b.site);
        // Both under one registry: a typed error naming both declaration sites.
        let r = Registry::new();
        r.register(a).expect("the first registers");
        match r.register(b) {
            Err(e @ KernelRegistrationError::ContentChanged { .. }) => {
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
