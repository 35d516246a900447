//! The built-ins' and the example median's CUDA kernels on the device (release):
//! `cargo bench --bench cuda_kernels`. Run by `scripts/device-cuda.sh` on an NVIDIA machine;
//! exits 0 without measuring where CUDA is unavailable (1 under `OP_REQUIRE_CUDA=1`).
//!
//! Each line calls the op through dispatch on the CUDA backend (`CallOptions::on(Cuda)`, host
//! tensors: every call uploads its inputs and reads its outputs back, there are no CUDA device
//! tensors yet) and reports two medians over the repeats: the kernel alone (CUDA events around
//! the launch, `CudaEngine::set_kernel_timing`) and the whole call. Kernel throughput is given in
//! GB/s of tensor bytes read and written (once each), as a fraction of the device's peak DRAM
//! bandwidth (memory clock x bus width x 2), and for matmul in GFLOP/s (2 m k n flops). Before
//! timing, each op's output on CUDA is checked against the CPU kernel or reference on the same
//! inputs (the median and elementwise ops exactly, the sums within 1e-3 relative). Last, device
//! tensors against the host round trip: a chain of three built-ins and the median at 16M, with
//! the tensor bytes the device chain moved (from `CudaEngine::transfers`).

#[path = "../examples/windowed_median/median.rs"]
mod median;

use op_runtime::cuda::CudaEngine;
use op_runtime::Data;
use op_runtime::{BackendKind, CallOptions, OpHandle, Scalar, Tensor};
use std::time::Instant;

const REPEATS: usize = 5;

fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Uniform-ish values in [-1, 1) from a 64-bit LCG (no dependence on a rand crate here).
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn run(h: &OpHandle, ins: &[&Tensor], params: &[Scalar], kind: BackendKind) -> Tensor {
    h.call_with(ins, params, CallOptions::on(kind)).unwrap_or_else(|e| panic!("{} on {kind}: {e}", h.id())).outputs.remove(0)
}

/// Medians (kernel seconds, call seconds) over `REPEATS` calls after one warm-up.
fn time(engine: &CudaEngine, h: &OpHandle, ins: &[&Tensor], params: &[Scalar]) -> (f64, f64) {
    run(h, ins, params, BackendKind::Cuda);
    let (mut kernel, mut call) = (Vec::new(), Vec::new());
    for _ in 0..REPEATS {
        let t = Instant::now();
        std::hint::black_box(run(h, ins, params, BackendKind::Cuda));
        call.push(t.elapsed().as_secs_f64());
        kernel.push(engine.last_kernel_seconds().expect("timing is on"));
    }
    (median_of(kernel), median_of(call))
}

/// Compares the CUDA output with the CPU backend's (or the reference's) on the same inputs.
fn check(h: &OpHandle, ins: &[&Tensor], params: &[Scalar], rel: f32) {
    let cpu = if h.op().contract().cpu.is_some() { BackendKind::Cpu } else { BackendKind::Reference };
    let (want, got) = (run(h, ins, params, cpu), run(h, ins, params, BackendKind::Cuda));
    let (want, got) = (want.as_slice::<f32>().expect("f32"), got.as_slice::<f32>().expect("f32"));
    assert_eq!(want.len(), got.len(), "{}: output length", h.id());
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        let ok = if rel == 0.0 { w.to_bits() == g.to_bits() } else { (w - g).abs() <= rel * w.abs().max(1.0) };
        assert!(ok, "{}: element {i}: CUDA {g} vs {cpu} {w}", h.id());
    }
}

fn report(engine: &CudaEngine, what: &str, bytes: f64, (kernel, call): (f64, f64)) {
    let gbs = bytes / kernel / 1e9;
    let peak = engine
        .peak_memory_bandwidth()
        .map_or(String::new(), |p| format!(" = {:.1}% of peak {:.0} GB/s", 100.0 * bytes / kernel / p, p / 1e9));
    println!("{what}: kernel {:.3} ms, {gbs:.0} GB/s{peak}; whole call {:.1} ms (host round trip)", kernel * 1e3, call * 1e3);
}

fn main() {
    let engine = match CudaEngine::shared() {
        Ok(e) => e,
        Err(e) if std::env::var("OP_REQUIRE_CUDA").as_deref() == Ok("1") => panic!("OP_REQUIRE_CUDA=1 but CUDA is unavailable: {e}"),
        Err(e) => {
            println!("CUDA is unavailable ({e}); nothing measured");
            return;
        }
    };
    println!("device: {}", engine.profile());
    engine.set_kernel_timing(true);
    let reg = op_runtime::registry();
    let med = reg.register(&median::windowed_median::DECL).expect("median registers");
    for n in [1usize << 24, 1 << 28] {
        let x = Tensor::vector(data(n, 7));
        for w in [7u32, 31] {
            if n == 1 << 24 {
                check(&med, &[&x], &[Scalar::U32(w)], 0.0);
            }
            let t = time(engine, &med, &[&x], &[Scalar::U32(w)]);
            report(engine, &format!("median n={}M w={w}", n >> 20), (2 * n - w as usize + 1) as f64 * 4.0, t);
        }
    }
    let n = 1usize << 24;
    let (a, b) = (Tensor::vector(data(n, 1)), Tensor::vector(data(n, 2)));
    for (name, ins, bytes, rel) in [
        ("builtin/add", vec![&a, &b], 12.0 * n as f64, 0.0),
        ("builtin/tanh", vec![&a], 8.0 * n as f64, 2e-6),
        ("builtin/sum", vec![&a], 4.0 * n as f64, 1e-3),
        ("builtin/mse_loss", vec![&a, &b], 8.0 * n as f64, 1e-3),
    ] {
        let h = reg.lookup(name).expect("built-in");
        check(&h, &ins, &[], rel);
        report(engine, &format!("{name} n=16M"), bytes, time(engine, &h, &ins, &[]));
    }
    let mm = reg.lookup("builtin/matmul").expect("built-in");
    let s = 4096usize;
    let (ma, mb) = (
        Tensor::new(vec![s, s], Data::F32(data(s * s, 3))).expect("shape"),
        Tensor::new(vec![s, s], Data::F32(data(s * s, 4))).expect("shape"),
    );
    let small = 256usize;
    let (sa, sb) = (
        Tensor::new(vec![small, small], Data::F32(data(small * small, 5))).expect("shape"),
        Tensor::new(vec![small, small], Data::F32(data(small * small, 6))).expect("shape"),
    );
    check(&mm, &[&sa, &sb], &[], 1e-4);
    let (kernel, call) = time(engine, &mm, &[&ma, &mb], &[]);
    let flops = 2.0 * (s as f64).powi(3);
    println!(
        "matmul {s}^3 f32 (tiled 16x16, pairwise sums): kernel {:.1} ms, {:.0} GFLOP/s; whole call {:.1} ms",
        kernel * 1e3,
        flops / kernel / 1e9,
        call * 1e3
    );
    resident(engine, reg, &med);
}

/// Median seconds of `f` over `REPEATS` runs after one warm-up.
fn wall(mut f: impl FnMut() -> Tensor) -> f64 {
    f();
    median_of(
        (0..REPEATS)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// Device tensors vs the host round trip: the chain `-((a + b) * b)` over 16M elements (three
/// calls), and the median (w = 31) over 16M samples, each as host-tensor calls and as calls on
/// device tensors (`to_device` before, `to_host` of the result timed too for the chain's device
/// column: the whole computation from host data to host result, and the calls alone).
fn resident(engine: &CudaEngine, reg: &op_runtime::Registry, med: &OpHandle) {
    let n = 1usize << 24;
    let (a, b) = (Tensor::vector(data(n, 8)), Tensor::vector(data(n, 9)));
    let op = |name: &str| reg.lookup(name).expect("built-in");
    let (add, mul, neg) = (op("builtin/add"), op("builtin/mul"), op("builtin/neg"));
    let chain = |a: &Tensor, b: &Tensor, kind| {
        let s = run(&add, &[a, b], &[], kind);
        let p = run(&mul, &[&s, b], &[], kind);
        run(&neg, &[&p], &[], kind)
    };
    let host = wall(|| chain(&a, &b, BackendKind::Cuda));
    let (da, db) = (a.to_device(engine).expect("upload"), b.to_device(engine).expect("upload"));
    let before = engine.transfers();
    let calls = wall(|| chain(&da, &db, BackendKind::Cuda));
    let moved = engine.transfers().tensor_bytes() - before.tensor_bytes();
    let whole = wall(|| {
        let (da, db) = (a.to_device(engine).expect("upload"), b.to_device(engine).expect("upload"));
        chain(&da, &db, BackendKind::Cuda).to_host().expect("read back")
    });
    let same = chain(&da, &db, BackendKind::Cuda).to_host().expect("read back");
    assert_eq!(same.as_slice::<f32>(), chain(&a, &b, BackendKind::Cuda).as_slice::<f32>(), "device chain equals the host chain");
    println!(
        "chain of 3 ops n=16M: host round trip {:.1} ms; device tensors {:.3} ms for the calls ({moved} tensor bytes moved), {:.1} ms with to_device and to_host",
        host * 1e3,
        calls * 1e3,
        whole * 1e3
    );
    println!(
        "device-resident chain vs host round trip: {:.1}x (n = 16M, calls only; {:.1}x with the transfers)",
        host / calls,
        host / whole
    );
    let x = Tensor::vector(data(n, 10));
    let dx = x.to_device(engine).expect("upload");
    let w = [Scalar::U32(31)];
    let (h, d) = (wall(|| run(med, &[&x], &w, BackendKind::Cuda)), wall(|| run(med, &[&dx], &w, BackendKind::Cuda)));
    println!("median n=16M w=31: host round trip {:.1} ms, on device tensors {:.2} ms ({:.1}x)", h * 1e3, d * 1e3, h / d);
    println!("(the training step on the device vs the host round trip: `cargo bench --bench device_tape`)");
}
