//! Accumulating outputs (`out: accumulate` in a binding descriptor): the kernel adds into the
//! output, which starts at zero on every backend, in plain calls and in conformance alike (only
//! the guard bands around it hold canaries), so conformance does not require every element to
//! be written. The same store-only kernel declared `read_write` is rejected (its untouched
//! bins keep the canaries): the zero start is what makes it correct.

mod common;

use op_runtime::conformance::{self, Class, ConformanceFailure};
use op_runtime::{op, BackendKind, CallOptions, Scalar, Tensor};

/// Histogram of `x` modulo `bins`.
#[op(name = "test/accumulate/histogram", version = 1,
     signature(x: u32[n], bins: u32 where 1 <= bins <= 4096) -> u32[bins],
     category = integer, tolerance = exact, backward = none,
     kernel(wgsl = "kernels/histogram.wgsl", bindings(x: read, out: accumulate, uniform(n, bins)), threads = n),
     kernel(cuda = "kernels/histogram.cu", bindings(x: read, out: accumulate, uniform(n, bins)), threads = n),
     license = "MIT")]
pub fn histogram(x: &[u32], bins: u32) -> Vec<u32> {
    let mut out = vec![0u32; bins as usize];
    for v in x {
        out[(*v % bins) as usize] += 1;
    }
    out
}

/// Which bins of `x` modulo `bins` are hit (1) or not (0); the kernel only stores ones.
#[op(name = "test/accumulate/presence", version = 1,
     signature(x: u32[n], bins: u32 where 1 <= bins <= 4096) -> u32[bins],
     category = integer, tolerance = exact, backward = none,
     kernel(wgsl = "kernels/presence.wgsl", bindings(x: read, out: accumulate, uniform(n, bins)), threads = n),
     license = "MIT")]
pub fn presence(x: &[u32], bins: u32) -> Vec<u32> {
    let mut out = vec![0u32; bins as usize];
    for v in x {
        out[(*v % bins) as usize] = 1;
    }
    out
}

/// The same store-only kernel with its output declared `read_write`: bins nothing falls into
/// keep whatever the output started as (canaries in conformance), so it must be rejected.
/// (`1 <= n`: a `read_write` output needs a thread whenever it is non-empty.)
#[op(name = "test/broken/presence_read_write", version = 1,
     signature(x: u32[n], bins: u32 where 1 <= n, 1 <= bins <= 4096) -> u32[bins],
     category = integer, tolerance = exact, backward = none,
     kernel(wgsl = "kernels/presence.wgsl", bindings(x: read, out: read_write, uniform(n, bins)), threads = n),
     license = "MIT", generated_tests = false)]
pub fn presence_read_write(x: &[u32], bins: u32) -> Vec<u32> {
    presence(x, bins)
}

/// Inputs hitting only a few of many bins, and their counts computed here by hand.
fn few_hits() -> (Tensor, u32, Vec<u32>) {
    let x: Vec<u32> = (0..1000u32).map(|i| (i % 7) * 100 + 3).collect();
    let bins = 1024;
    let mut want = vec![0u32; bins as usize];
    for v in &x {
        want[(*v % bins) as usize] += 1;
    }
    (Tensor::vector(x), bins, want)
}

#[test]
fn accumulating_outputs_start_at_zero_on_every_backend_that_runs_here() {
    let h = op_runtime::register(&histogram::DECL).expect("registers");
    let (x, bins, want) = few_hits();
    let mut ran = Vec::new();
    for kind in BackendKind::PRIORITY {
        let Some(b) = op_runtime::registry().backend(kind) else { continue };
        if b.supports(&h.op()).is_err() || b.availability().is_err() {
            if kind == BackendKind::Wgpu {
                assert!(!common::wgpu_available(), "wgpu is available but refused the histogram");
            }
            continue;
        }
        // Twice: a second call on the same backend (reusing whatever the first left behind)
        // still starts from zero.
        for round in 0..2 {
            let out = h.call_with(&[&x], &[Scalar::U32(bins)], CallOptions::on(kind)).expect("runs").output().expect("one output");
            assert_eq!(out.as_slice::<u32>().expect("u32"), want.as_slice(), "{kind}, call {round}");
        }
        ran.push(kind);
    }
    eprintln!("histogram ran from zero on {ran:?}");
    assert!(ran.contains(&BackendKind::Reference));
}

#[test]
fn an_accumulating_output_in_a_pooled_buffer_starts_at_zero() {
    let Some((engine, r)) = common::private_wgpu() else { return };
    let h = r.register(&histogram::DECL).expect("registers");
    let (x, bins, want) = few_hits();
    let dx = x.to_device(engine).expect("upload");
    for round in 0..3 {
        // A dropped device tensor of the output's size, every byte set, is what the pool hands
        // the next output of that size: the kernel must still add into zeros.
        drop(Tensor::vector(vec![u32::MAX; bins as usize]).to_device(engine).expect("dirty"));
        let reused = engine.pool_stats().reused;
        let out = h.call_with(&[&dx], &[Scalar::U32(bins)], CallOptions::default()).expect("runs").output().expect("one output");
        assert_eq!(engine.pool_stats().reused, reused + 1, "call {round} took the dirty buffer from the pool");
        assert_eq!(out.to_host().expect("read back").as_slice::<u32>().expect("u32"), want.as_slice(), "call {round}");
    }
}

#[test]
fn conformance_accepts_accumulating_outputs_with_untouched_elements() {
    if !common::wgpu_available() {
        return;
    }
    for decl in [&histogram::DECL, &presence::DECL] {
        let h = op_runtime::register(decl).expect("registers");
        let r = conformance::conform(&h, BackendKind::Wgpu).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.cases > 0);
    }
}

#[test]
fn the_same_kernel_with_a_read_write_output_is_rejected_as_unwritten() {
    if !common::wgpu_available() {
        return;
    }
    let h = op_runtime::register(&presence_read_write::DECL).expect("registers");
    match conformance::conform(&h, BackendKind::Wgpu) {
        Err(ConformanceFailure::Rejected(report)) => {
            assert!(report.defect(&Class::Unwritten).is_some(), "{report}");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
}
