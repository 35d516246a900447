//! Device-resident tensors on CUDA (run where CUDA is present, skipped elsewhere, a failure
//! under `OP_REQUIRE_CUDA=1`): `to_device(engine)` / `to_host()` are the only transfers
//! (counted by the engine); a chain of built-ins on device tensors binds their buffers in place
//! and returns device tensors, moving no tensor data between the ops, and ends bit for bit where
//! the host path does; the example median and an accumulating output (zero-filled) run on
//! device tensors; a host input beside device ones is a typed `Placement` error naming the op
//! and the input. One test function: the engine's transfer counters are process-wide, and
//! concurrent tests would move them.

use crate::common;
use crate::median;

use op_runtime::cuda::CudaEngine;
use op_runtime::device::Device;
use op_runtime::device::Placement;
use op_runtime::{op, BackendKind, CallOptions, Registry, Scalar, Tensor};
use op_runtime::{BackendError, DispatchError, TensorError};

/// Histogram of `x` modulo `bins` with an accumulating output (the kernel adds into it).
#[op(name = "test/cuda_resident/histogram", version = 1, signature(x: u32[n], bins: u32 where bins >= 1) -> u32[bins],
     category = integer, tolerance = exact, backward = none, generated_tests = false,
     kernel(cuda = "kernels/histogram.cu", bindings(x: read, out: accumulate, uniform(n, bins)), threads = n))]
pub fn histogram(x: &[u32], bins: u32) -> Vec<u32> {
    let mut out = vec![0u32; bins as usize];
    for v in x {
        out[(*v % bins) as usize] += 1;
    }
    out
}

fn call(r: &Registry, name: &str, ins: &[&Tensor], params: &[Scalar], opts: CallOptions) -> Result<Tensor, DispatchError> {
    Ok(r.lookup(name)?.call_with(ins, params, opts)?.output().expect("one output"))
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.as_slice::<f32>().expect("host f32").iter().map(|v| v.to_bits()).collect()
}

fn chain(r: &Registry, a: &Tensor, b: &Tensor, opts: CallOptions) -> Tensor {
    let s = call(r, "builtin/add", &[a, b], &[], opts).expect("add");
    let p = call(r, "builtin/mul", &[&s, b], &[], opts).expect("mul");
    call(r, "builtin/neg", &[&p], &[], opts).expect("neg")
}

#[test]
fn device_tensors_on_cuda() {
    if !common::cuda_available() {
        return;
    }
    let engine = CudaEngine::shared().expect("engine");
    let r = op_runtime::registry();
    let n = 1_000_003;
    let a = Tensor::vector((0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect::<Vec<f32>>());
    let b = Tensor::vector((0..n).map(|i| 1.0 + (i as f32 * 0.11).cos()).collect::<Vec<f32>>());
    let host = chain(r, &a, &b, CallOptions::on(BackendKind::Cuda));
    assert_eq!(bits(&host), bits(&chain(r, &a, &b, CallOptions::on(BackendKind::Reference))), "CUDA equals the reference");

    // Uploads are counted; a chain on device tensors moves nothing; the read-back is counted.
    let t0 = engine.transfers();
    let (da, db) = (a.to_device(engine).expect("upload a"), b.to_device(engine).expect("upload b"));
    let t1 = engine.transfers();
    assert_eq!((t1.to_device - t0.to_device, t1.to_device_bytes - t0.to_device_bytes), (2, 8 * n as u64));
    assert_eq!(da.placement(), Placement::Device(engine.id()));
    let out = chain(r, &da, &db, CallOptions::default());
    let t2 = engine.transfers();
    assert_eq!(out.placement(), Placement::Device(engine.id()), "outputs stay on the device");
    assert_eq!(t2, t1, "no tensor data crossed between the three ops");
    assert!(matches!(out.try_slice::<f32>(), Err(TensorError::OnDevice { .. })));
    let back = out.to_host().expect("read back");
    let t3 = engine.transfers();
    assert_eq!((t3.to_host - t2.to_host, t3.to_host_bytes - t2.to_host_bytes), (1, 4 * n as u64));
    assert_eq!(bits(&back), bits(&host), "device chain equals the host path bit for bit");

    // The example median on a device tensor: a device output equal to the host call's.
    let med = r.register(&median::windowed_median::DECL).expect("median registers");
    let w = [Scalar::U32(31)];
    let on_host = med.call_with(&[&a], &w, CallOptions::on(BackendKind::Cuda)).expect("host median").output().expect("out");
    let on_device = med.call_with(&[&da], &w, CallOptions::default()).expect("device median").output().expect("out");
    assert!(!on_device.is_host());
    assert_eq!(bits(&on_device.to_host().expect("median back")), bits(&on_host));

    // An accumulating output starts at zero on the device too.
    let hist = r.register(&histogram::DECL).expect("histogram registers");
    let x = Tensor::vector((0..10_000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect::<Vec<u32>>());
    let bins = [Scalar::U32(37)];
    let dx = x.to_device(engine).expect("upload x");
    let counts = hist.call_with(&[&dx], &bins, CallOptions::default()).expect("histogram").output().expect("out");
    let counts = counts.to_host().expect("counts back");
    assert_eq!(counts.as_slice::<u32>().expect("u32"), histogram(x.as_slice::<u32>().expect("u32"), 37).as_slice());

    // A host input beside a device one: a typed Placement error naming the op and the input.
    match call(r, "builtin/add", &[&da, &b], &[], CallOptions::default()) {
        Err(e @ DispatchError::Execution { source: BackendError::Placement(_), .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("builtin/add") && msg.contains("input `b`"), "{msg}");
        }
        other => panic!("expected a Placement error, got {other:?}"),
    }
}
