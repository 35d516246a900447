//! The windowed median's `cpu` kernel (the example's `median_cpu.rs`) through dispatch versus
//! the reference function called directly, on 1M f32 samples, w = 7 and w = 31: the kernel on a
//! registry whose CPU backend has one thread (`CpuBackend::with_threads(1)`) and on one with all
//! threads (`CpuBackend::default()`); the reference always runs on one thread.
//! Run: `cargo bench --bench cpu_median` (`CPU_BENCH_SECS` seconds per window size, default 3;
//! the reference and both kernel columns are timed alternately and reported as medians).
//! Goals on one thread: >= 3.5x at w = 7, >= 11x at w = 31. Then the f64 instance's kernel
//! against the f32 kernel (issue 22: at most 2.5x its time).

#[path = "../examples/windowed_median/median.rs"]
mod median;
mod timing;

use op_runtime::backend::{CpuBackend, ReferenceBackend};
use op_runtime::{BackendKind, OpHandle, Registry, Scalar, Tensor};
use std::hint::black_box;
use std::sync::Arc;

/// Samples in the signal.
const N: usize = 1_000_000;

/// The median on a registry whose CPU backend is `cpu` (default selection picks it).
fn median_on(cpu: CpuBackend) -> OpHandle {
    let r = Registry::with_backends(vec![Arc::new(cpu), Arc::new(ReferenceBackend::default())]);
    r.register(&median::windowed_median::DECL).expect("the median registers")
}

fn main() {
    let budget = timing::budget();
    let (one, all) = (median_on(CpuBackend::with_threads(1)), median_on(CpuBackend::default()));
    let threads = CpuBackend::default().threads();
    println!("cpu_median: {N} samples; {}; {budget} s per window size", timing::machine());
    // The example's signal shape (smooth plus spikes) in random order of magnitude.
    let mut s: u64 = 0x5eed;
    let x: Vec<f32> = (0..N)
        .map(|i| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (i as f32 * 0.002).sin() + ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
        })
        .collect();
    let tx = Tensor::vector(x.clone());
    let mut rows = Vec::new();
    for w in [7u32, 31] {
        let call = |h: &OpHandle| {
            let out = h.call(&[&tx], &[Scalar::U32(w)]).expect("the call runs");
            debug_assert_eq!(out.provenance.backend, BackendKind::Cpu);
            black_box(out);
        };
        // The kernel is the reference bit for bit (checked once here; conformance proves it).
        let out = one.call(&[&tx], &[Scalar::U32(w)]).expect("runs");
        assert_eq!(out.provenance.backend, BackendKind::Cpu, "default selection runs the cpu kernel");
        let reference = median::windowed_median::<f32>(&x, w);
        let same = out.outputs[0].as_slice::<f32>().is_some_and(|o| o.iter().zip(&reference).all(|(a, b)| a.to_bits() == b.to_bits()));
        assert!(same, "the kernel differs from the reference at w = {w}");
        let race =
            timing::race(budget, &|| drop(black_box(median::windowed_median::<f32>(black_box(&x), w))), &|| call(&one), &|| call(&all));
        rows.push((w, race));
    }
    for (w, r) in &rows {
        println!("cpu kernel vs reference, w={w}, 1 thread: {:.1}x", r.reference / r.one);
    }
    for (w, r) in &rows {
        println!("cpu kernel vs reference, w={w}, all threads: {:.1}x", r.reference / r.all);
    }
    println!("medians (reference direct on 1 thread; kernel through dispatch, 1 and {threads} threads):");
    for (w, r) in &rows {
        println!(
            "  w={w:<2}  reference {:>10}   kernel 1 thread {:>10}   kernel {threads} threads {:>10}   ({} reference samples)",
            timing::fmt(r.reference),
            timing::fmt(r.one),
            timing::fmt(r.all),
            r.samples
        );
    }
    f64_instance(&one, &x, &tx, budget);
}

/// The f64 instance's kernel against the f32 kernel on the same values (both one thread, through
/// dispatch) and against the f64 reference called directly.
fn f64_instance(one: &OpHandle, x: &[f32], tx: &Tensor, budget: f64) {
    let x64: Vec<f64> = x.iter().map(|v| *v as f64).collect();
    let t64 = Tensor::vector(x64.clone());
    let h64 = one.at(&[op_runtime::DType::f64]).expect("the f64 instance");
    for w in [7u32, 31] {
        let out = h64.call(&[&t64], &[Scalar::U32(w)]).expect("runs");
        assert_eq!(out.provenance.backend, BackendKind::Cpu, "default selection runs the f64 cpu kernel");
        let reference = median::windowed_median::<f64>(&x64, w);
        let same = out.outputs[0].as_slice::<f64>().is_some_and(|o| o.iter().zip(&reference).all(|(a, b)| a.to_bits() == b.to_bits()));
        assert!(same, "the f64 kernel differs from the reference at w = {w}");
        let r = timing::race(
            budget,
            &|| drop(black_box(median::windowed_median::<f64>(black_box(&x64), w))),
            &|| drop(black_box(h64.call(&[&t64], &[Scalar::U32(w)]).expect("runs"))),
            &|| drop(black_box(one.call(&[tx], &[Scalar::U32(w)]).expect("runs"))),
        );
        println!(
            "f64 kernel vs f32 kernel, w={w}, 1 thread: {:.2}x (f64 {}, f32 {}; f64 reference {}, {:.1}x the f64 kernel)",
            r.one / r.all,
            timing::fmt(r.one),
            timing::fmt(r.all),
            timing::fmt(r.reference),
            r.reference / r.one
        );
    }
}
