//! `CandleOp::on_cuda`: a typed refusal where op-runtime's CUDA backend is absent or cannot run,
//! and where it runs (a GPU lent; `OP_REQUIRE_CUDA=1` makes its absence a failure, never a
//! skip), a forward equal to the registry's CUDA call bit for bit, on CUDA, and a candle
//! backward equal to the tape's on the same backend.

use candle_core::{Device, Tensor as CTensor, Var};
use op_candle::{CandleOp, Error};
use op_runtime::backend::{Backend, CpuBackend, ReferenceBackend};
use op_runtime::testing::REQUIRE_CUDA_ENV;
use op_runtime::{BackendKind, CallOptions, OpHandle, Registry, Tape, Tensor};
use std::sync::Arc;

fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// `n` values in about [-1.5, 1.5] from `seed`.
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 3.0 - 1.5) as f32
        })
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A registry of the built-ins on the two host backends only: no CUDA backend, on any machine.
#[test]
fn a_registry_without_a_cuda_backend_refuses_on_cuda() {
    let backends: Vec<Arc<dyn Backend>> = vec![Arc::new(CpuBackend::default()), Arc::new(ReferenceBackend::default())];
    let r = Registry::with_backends(backends);
    for d in op_runtime::builtins::decls() {
        ok(r.register(d));
    }
    let tanh = CandleOp::new(&ok(r.lookup("builtin/tanh")), &[]);
    match tanh.on_cuda() {
        Err(Error::NoCuda { op, reason }) => {
            assert_eq!(op, "builtin/tanh@1");
            assert!(reason.contains("not compiled in"), "{reason}");
        }
        other => panic!("expected Error::NoCuda, got {other:?}"),
    }
    // The op itself still runs on the host backends.
    let x = ok(CTensor::from_slice(&values(8, 1), 8, &Device::Cpu));
    ok(tanh.apply(&[&x]));
    assert_eq!(tanh.last_forward().map(|e| e.backend), Some(BackendKind::Cpu));
}

/// Why CUDA cannot run in this process, or `None` where it can.
fn cuda_missing() -> Option<String> {
    match op_runtime::registry().backend(BackendKind::Cuda) {
        None => Some("op-runtime's CUDA backend is not compiled in".into()),
        Some(b) => b.availability().err().map(|e| e.to_string()),
    }
}

#[test]
fn on_cuda_runs_on_cuda_or_is_refused_typed() {
    let h = ok(op_runtime::registry().lookup("builtin/tanh"));
    let tanh = CandleOp::new(&h, &[]);
    if let Some(why) = cuda_missing() {
        if std::env::var(REQUIRE_CUDA_ENV).as_deref() == Ok("1") {
            panic!("{REQUIRE_CUDA_ENV}=1 but CUDA is unavailable: {why}");
        }
        match tanh.on_cuda() {
            Err(Error::NoCuda { op, reason }) => {
                assert_eq!(op, "builtin/tanh@1");
                assert!(!reason.is_empty());
                eprintln!("CUDA refused, as it must be here: {reason}");
            }
            other => panic!("expected Error::NoCuda without a usable CUDA backend ({why}), got {other:?}"),
        }
        return;
    }
    runs_on_cuda(&h, &ok(tanh.on_cuda()));
}

/// Forward bit for bit against the registry's CUDA call, and candle's backward against the
/// tape's on CUDA, across seeds and sizes.
fn runs_on_cuda(h: &OpHandle, tanh: &CandleOp) {
    let on = CallOptions::on(BackendKind::Cuda);
    for (seed, n) in [(1u64, 1usize), (2, 255), (3, 4097), (4, 100_003)] {
        let v = values(n, seed);
        let x = ok(Var::from_slice(&v, n, &Device::Cpu));
        let y = ok(tanh.apply(&[x.as_tensor()]));
        let want = ok(h.call_with(&[&Tensor::vector(v.clone())], &[], on));
        assert_eq!(bits(&ok(y.to_vec1::<f32>())), bits(ok(want.outputs[0].try_slice::<f32>())), "seed {seed}: forward");
        let entry = tanh.last_forward().expect("a forward entry");
        assert_eq!((entry.backend, entry.content_hash), (BackendKind::Cuda, want.provenance.content_hash));

        let g = ok(ok(y.sum_all()).backward());
        let g = ok(g.get(x.as_tensor()).expect("a gradient").to_vec1::<f32>());
        let mut tape = Tape::with_registry(op_runtime::registry());
        tape.set_call_options(on);
        let ones = Tensor::vector(vec![1.0f32; n]);
        let pb = ok(tape.pullback(h, vec![Tensor::vector(v)], &[], vec![ones]));
        let want = pb.grads[0].as_ref().expect("a gradient");
        // candle sums the gradient into zeros: equal by value (a -0 becomes +0).
        assert!(g.iter().zip(ok(want.try_slice::<f32>())).all(|(a, b)| a == b), "seed {seed}: backward");
        let back = tanh.last_backward().expect("a backward record");
        assert!(back.entries.iter().all(|e| e.backend == BackendKind::Cuda), "seed {seed}: {back}");
        assert_eq!(back.entries.len(), 1, "seed {seed}: the VJP op's one call");
    }
}
