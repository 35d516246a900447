//! Hostile WGSL kernels (issue 33, "GPU kernels too"): each is rejected with its class, or the
//! receipt names what could not be tested on the device, while a correct op in the same run
//! still conforms. All compute `y = 2x` over `f32[n]` and misbehave for `n > 5`:
//!
//! | kernel | misbehaviour | verdict |
//! | --- | --- | --- |
//! | `double_loops_forever` | a loop whose exit never comes | rejected (the device wait times out), or accepted where the adapter ends every loop after a fixed number of turns (lavapipe: 65,535), with the receipt saying termination was not tested |
//! | `double_loops_forever_working` | the same, working in every turn | with a 1 ms wait limit: a typed "timed out" error, then "hung", and a rejection (lavapipe's capped loop also gives wrong values, in about 15 s of conformance, so no test waits for that) |
//! | `double_writes_far_past_end` | writes 1,000 elements past the output | rejected: write past the end (the far band of canaries after the guard band catches it) |
//! | `double_writes_beyond_the_far_band` | writes 4 MiB past the output | rejected where the adapter clamps writes into the binding; accepted where it discards them, with the receipt saying such writes were not tested |
//!
//! A device wait has a limit (`WgpuEngine::set_wait_timeout`): a launch past it is a typed
//! error, which conformance turns into a rejection of the case; the engine then refuses work
//! until the late launch ends. Kernels that may hang a GPU run on a private engine, so a hang
//! cannot reach the shared one the correct ops use. The broken ops declare
//! `generated_tests = false`.

mod common;

use op_runtime::backend::{CpuBackend, ReferenceBackend};
use op_runtime::conformance::{self, Class, ConformanceFailure, Report};
use op_runtime::receipt::Receipt;
use op_runtime::wgpu::{WgpuBackend, WgpuEngine};
use op_runtime::{op, BackendKind, CallOptions, Real, Registry, Tensor};
use std::sync::Arc;
use std::time::Duration;

fn double<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v + *v).collect()
}

macro_rules! double_op {
    ($(#[$doc:meta])* $fn_name:ident, $op_name:literal, $kernel:literal) => {
        $(#[$doc])*
        #[op(name = $op_name, version = 1, signature(x: f32[n]) -> f32[n],
             category = elementwise, tolerance = ulp(0), backward = none, generated_tests = false,
             kernel(wgsl = $kernel, bindings(x: read, out: read_write, uniform(n)), threads = n))]
        pub fn $fn_name<T: Real>(x: &[T]) -> Vec<T> {
            double(x)
        }
    };
}

double_op!(
    /// Broken: loops forever for n > 5.
    double_loops_forever, "test/hostile/double_loops_forever", "kernels/broken/double_loops_forever.wgsl"
);
double_op!(
    /// Broken: loops forever for n > 5, working in every turn.
    double_loops_forever_working, "test/hostile/double_loops_forever_working", "kernels/broken/double_loops_forever_working.wgsl"
);
double_op!(
    /// Broken: writes 1,000 elements past the end for n > 5.
    double_writes_far_past_end, "test/hostile/double_writes_far_past_end", "kernels/broken/double_writes_far_past_end.wgsl"
);
double_op!(
    /// Broken: writes 4 MiB past the end for n > 5.
    double_writes_beyond_the_far_band, "test/hostile/double_writes_beyond_the_far_band", "kernels/broken/double_writes_beyond_the_far_band.wgsl"
);
// The correct twin under eight names: eight content hashes, so eight seeds of the corpus.
double_op!(
    /// Correct: `y = 2x`.
    double_right, "test/hostile/double", "kernels/double.wgsl"
);
double_op!(double_right_1, "test/hostile/double_seed_1", "kernels/double.wgsl");
double_op!(double_right_2, "test/hostile/double_seed_2", "kernels/double.wgsl");
double_op!(double_right_3, "test/hostile/double_seed_3", "kernels/double.wgsl");
double_op!(double_right_4, "test/hostile/double_seed_4", "kernels/double.wgsl");
double_op!(double_right_5, "test/hostile/double_seed_5", "kernels/double.wgsl");
double_op!(double_right_6, "test/hostile/double_seed_6", "kernels/double.wgsl");
double_op!(double_right_7, "test/hostile/double_seed_7", "kernels/double.wgsl");

/// An engine of this test's own (a kernel that hangs a GPU hangs only it) and a registry with
/// wgpu on it and both host backends; `None` where wgpu cannot run here.
fn private_wgpu(wait: Duration) -> Option<(&'static WgpuEngine, Registry)> {
    if !common::wgpu_available() {
        return None;
    }
    let engine: &'static WgpuEngine = Box::leak(Box::new(WgpuEngine::new().expect("engine")));
    engine.set_wait_timeout(wait);
    let registry = Registry::with_backends(vec![
        Arc::new(WgpuBackend::on(engine)),
        Arc::new(CpuBackend::default()),
        Arc::new(ReferenceBackend::default()),
    ]);
    Some((engine, registry))
}

/// The correct twin conforms on the shared engine; its receipt.
fn twin_conforms(decl: &'static op_runtime::OpDecl) -> Receipt {
    let h = op_runtime::register(decl).expect("registers");
    conformance::conform(&h, BackendKind::Wgpu).unwrap_or_else(|e| panic!("the correct twin conforms on wgpu: {e}"))
}

fn classes(report: &Report) -> Vec<Class> {
    report.defects.iter().map(|d| d.class.clone()).collect()
}

#[test]
fn a_kernel_that_never_ends_is_rejected_or_its_receipt_says_termination_was_not_tested() {
    let Some((engine, registry)) = private_wgpu(Duration::from_secs(5)) else { return };
    let h = registry.register(&double_loops_forever::DECL).expect("registers");
    let capped = engine.profile().details.contains_key("untested.termination");
    match conformance::conform(&h, BackendKind::Wgpu) {
        Ok(r) => {
            eprintln!("accepted on {}: untested {:?}", r.device, r.untested);
            assert!(capped, "accepted on an adapter that runs loops to the end: {r:?}");
            assert!(
                r.untested.iter().any(|u| u.starts_with("termination not tested: the adapter ends every loop after")),
                "{:?}",
                r.untested
            );
        }
        Err(ConformanceFailure::Rejected(report)) => eprintln!("{report}"),
        Err(e) => panic!("expected a receipt naming what was not tested, or a rejection: {e}"),
    }
    // A correct op in the same run still conforms, and its receipt says the same of the device.
    let r = twin_conforms(&double_right::DECL);
    assert_eq!(r.untested.iter().any(|u| u.starts_with("termination not tested")), capped, "{:?}", r.untested);
}

#[test]
fn a_launch_past_the_wait_limit_is_an_error_and_a_rejection_not_a_hang() {
    let Some((engine, registry)) = private_wgpu(Duration::from_millis(1)) else { return };
    assert_eq!(WgpuEngine::new().expect("engine").wait_timeout(), Duration::from_secs(30), "the default");
    assert_eq!(engine.wait_timeout(), Duration::from_millis(1));
    let h = registry.register(&double_loops_forever_working::DECL).expect("registers");
    // 65,535 turns of work (lavapipe's cap) or forever, in each of 4096 invocations: far past 1 ms.
    let x = Tensor::vector(vec![1.0f32; 4096]);
    let err = h.call_with(&[&x], &[], CallOptions::on(BackendKind::Wgpu)).expect_err("times out");
    assert!(err.to_string().contains("the device timed out: a launch of 4096 invocation(s), which did not finish within 1ms"), "{err}");
    // Until the late launch ends, the engine refuses work at once (on a GPU it never ends).
    match h.call_with(&[&x], &[], CallOptions::on(BackendKind::Wgpu)) {
        Err(e) => assert!(e.to_string().contains("the device is hung") || e.to_string().contains("timed out"), "{e}"),
        Ok(_) => panic!("the second call cannot finish within 1 ms either"),
    }
    // Conformance turns it into a rejection of the op on this device, never a hang.
    match conformance::conform(&h, BackendKind::Wgpu) {
        Err(ConformanceFailure::Rejected(report)) => {
            eprintln!("{report}");
            assert!(report.to_string().contains("the device"), "{report}");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn a_write_far_past_the_end_is_rejected_as_a_write_past_the_end() {
    let Some(report) = common::wgpu_rejection(&double_writes_far_past_end::DECL) else { return };
    assert!(classes(&report).contains(&Class::OutOfBounds("after")), "{report}");
    twin_conforms(&double_right::DECL);
}

#[test]
fn a_write_beyond_the_far_band_is_rejected_or_its_receipt_says_such_writes_were_not_tested() {
    if !common::wgpu_available() {
        return;
    }
    let h = op_runtime::register(&double_writes_beyond_the_far_band::DECL).expect("registers");
    match conformance::conform(&h, BackendKind::Wgpu) {
        Ok(r) => {
            eprintln!("accepted on {}: untested {:?}", r.device, r.untested);
            assert!(r.untested.iter().any(|u| u.starts_with("writes more than 64 KiB past an output not tested")), "{:?}", r.untested);
        }
        Err(ConformanceFailure::Rejected(report)) => {
            eprintln!("{report}");
            assert!(classes(&report).contains(&Class::OutOfBounds("after")), "{report}");
        }
        Err(e) => panic!("expected a receipt naming what was not tested, or a rejection: {e}"),
    }
    twin_conforms(&double_right::DECL);
}

#[test]
fn the_correct_twin_conforms_under_eight_seeds() {
    if !common::wgpu_available() {
        return;
    }
    let decls = [
        &double_right::DECL,
        &double_right_1::DECL,
        &double_right_2::DECL,
        &double_right_3::DECL,
        &double_right_4::DECL,
        &double_right_5::DECL,
        &double_right_6::DECL,
        &double_right_7::DECL,
    ];
    let digests: std::collections::BTreeSet<String> = decls.into_iter().map(|d| twin_conforms(d).corpus_digest).collect();
    assert_eq!(digests.len(), 8, "eight different corpora");
}
