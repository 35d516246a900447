//! Ops with a `bool` output conform on the host backends: a guarded run pads a `bool` output
//! with `false` (a `bool` has no value outside `{0, 1}`, so the canary byte `0xA5` cannot be
//! one), where it once failed every case with "byte 165 at index 0 is not a bool". A `cpu`
//! kernel that flips one element is still rejected, and its correct twin conforms.

use op_runtime::conformance::{self, ConformanceFailure};
use op_runtime::{op, BackendKind, OpHandle, Real, Registry};

/// `true` where `x > 0` (a NaN is not positive).
#[op(name = "test/bool/positive", version = 1, signature(x: f32[n]) -> bool[n],
     category = selection, tolerance = exact, backward = none, cpu = positive_cpu)]
pub fn positive<T: Real>(x: &[T]) -> Vec<bool> {
    x.iter().map(|v| *v > T::zero()).collect()
}

/// The `cpu` kernel: the reference at f32.
pub fn positive_cpu(x: &[f32]) -> Vec<bool> {
    x.iter().map(|v| *v > 0.0).collect()
}

/// The same op whose `cpu` kernel answers `true` for `-0.0` and `+0.0` (`>=` for `>`).
#[op(name = "test/bool/positive_broken", version = 1, signature(x: f32[n]) -> bool[n],
     category = selection, tolerance = exact, backward = none, cpu = positive_broken_cpu, generated_tests = false)]
pub fn positive_broken<T: Real>(x: &[T]) -> Vec<bool> {
    positive(x)
}

/// The broken `cpu` kernel.
pub fn positive_broken_cpu(x: &[f32]) -> Vec<bool> {
    x.iter().map(|v| *v >= 0.0).collect()
}

fn register(decl: &'static op_runtime::OpDecl) -> OpHandle {
    Registry::new().register(decl).expect("registers")
}

#[test]
fn a_bool_output_conforms_on_the_host_backends() {
    let h = register(&positive::DECL);
    for kind in [BackendKind::Reference, BackendKind::Cpu] {
        let r = conformance::conform(&h, kind).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert!(r.cases > 10, "{kind}: {} cases", r.cases);
    }
}

#[test]
fn a_wrong_bool_kernel_is_rejected() {
    let h = register(&positive_broken::DECL);
    conformance::conform(&h, BackendKind::Reference).expect("the reference conforms to itself");
    match conformance::conform(&h, BackendKind::Cpu) {
        Err(e @ ConformanceFailure::Rejected(_)) => {
            let text = e.to_string();
            assert!(!text.contains("not a bool"), "a rejection on values, not on the guard bands: {text}");
        }
        other => panic!("expected the broken kernel's rejection, got {other:?}"),
    }
}
