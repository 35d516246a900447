//! The built-ins' `cpu` kernels at every dtype they declare, and their VJP ops' `cpu` kernels:
//! each through dispatch on a one-thread CPU backend, raced round by round against the same op
//! at f32 on the same backend and against its reference (through dispatch on the reference
//! backend) at the same dtype. Prints per line the kernel's median at the dtype, at f32, the
//! ratio `dtype / f32` (the bound for f64: at most 2.5x) and the kernel's speed-up over
//! the reference. Run: `cargo bench --bench cpu_dtypes` (optionally a filter word, e.g. `exp`
//! or `vjp`; `CPU_BENCH_SECS` seconds per line, default 3).

mod timing;

use op_runtime::backend::{CpuBackend, ReferenceBackend};
use op_runtime::{bf16, builtins, f16, BackendKind, CallOptions, DType, OpHandle, Registry, Tensor};
use std::hint::black_box;
use std::sync::Arc;

/// Elements of the elementwise and reduction inputs.
const N: usize = 1_000_000;

/// `n` values uniform in `[lo, hi)` from a fixed LCG.
fn values(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// `v` as a tensor of `dtype` with `shape`.
fn tensor(v: &[f64], dtype: DType, shape: &[usize]) -> Tensor {
    let shape = shape.to_vec();
    let t = match dtype {
        DType::f64 => Tensor::from_vec(shape, v.to_vec()),
        DType::f32 => Tensor::from_vec(shape, v.iter().map(|x| *x as f32).collect::<Vec<f32>>()),
        DType::f16 => Tensor::from_vec(shape, v.iter().map(|x| f16::from_f64(*x)).collect::<Vec<f16>>()),
        _ => Tensor::from_vec(shape, v.iter().map(|x| bf16::from_f64(*x)).collect::<Vec<bf16>>()),
    };
    t.expect("a tensor of the stated shape")
}

/// One line: an op (or its VJP op) and its inputs as `(values, shape)`.
struct Line {
    name: &'static str,
    shape: &'static str,
    vjp: bool,
    inputs: Vec<(Vec<f64>, Vec<usize>)>,
}

fn lines() -> Vec<Line> {
    let x = || (values(N, -1.0, 1.0, 1), vec![N]);
    let y = || (values(N, -1.0, 1.0, 2), vec![N]);
    let wide = || (values(N, -20.0, 20.0, 3), vec![N]);
    let pos = || (values(N, 1e-3, 100.0, 4), vec![N]);
    let g = || (values(N, -1.0, 1.0, 5), vec![N]);
    let scalar = || (vec![0.75], vec![]);
    let taps = || (values(64, -1.0, 1.0, 6), vec![64]);
    let conv_g = || (values(N - 63, -1.0, 1.0, 7), vec![N - 63]);
    let (mm, mk) = (256usize, "256x256x256");
    let mat = |seed| (values(mm * mm, -1.0, 1.0, seed), vec![mm, mm]);
    let l = |name, shape, vjp, inputs| Line { name, shape, vjp, inputs };
    vec![
        l("add", "n=1M", false, vec![x(), y()]),
        l("mul", "n=1M", false, vec![x(), y()]),
        l("div", "n=1M", false, vec![x(), pos()]),
        l("exp", "n=1M, x in [-20, 20)", false, vec![wide()]),
        l("log", "n=1M, x in [1e-3, 100)", false, vec![pos()]),
        l("tanh", "n=1M, x in [-20, 20)", false, vec![wide()]),
        l("relu", "n=1M", false, vec![x()]),
        l("sum", "n=1M", false, vec![x()]),
        l("mean", "n=1M", false, vec![x()]),
        l("mse_loss", "n=1M", false, vec![x(), y()]),
        l("conv1d", "n=1M, m=64", false, vec![x(), taps()]),
        l("add", "n=1M", true, vec![x(), y(), g()]),
        l("mul", "n=1M", true, vec![x(), y(), g()]),
        l("div", "n=1M", true, vec![x(), pos(), g()]),
        l("exp", "n=1M, x in [-20, 20)", true, vec![wide(), g()]),
        l("log", "n=1M, x in [1e-3, 100)", true, vec![pos(), g()]),
        l("tanh", "n=1M, x in [-20, 20)", true, vec![wide(), g()]),
        l("relu", "n=1M", true, vec![x(), g()]),
        l("sum", "n=1M", true, vec![x(), scalar()]),
        l("mean", "n=1M", true, vec![x(), scalar()]),
        l("mse_loss", "n=1M", true, vec![x(), y(), scalar()]),
        l("conv1d", "n=1M, m=64", true, vec![x(), taps(), conv_g()]),
        l("matmul", mk, true, vec![mat(8), mat(9), mat(10)]),
    ]
}

/// The op of `line` at `dtype` (its VJP op for a VJP line).
fn handle(r: &Registry, line: &Line, dtype: DType) -> OpHandle {
    let h = r.lookup(&format!("builtin/{}", line.name)).expect("a built-in");
    let h = if line.vjp { h.vjp_op().expect("a VJP op") } else { h };
    h.at(&[dtype]).expect("the instance")
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    let budget = timing::budget();
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::with_threads(1)), Arc::new(ReferenceBackend::default())]);
    builtins::register_all(&r);
    println!("cpu_dtypes: {}; {budget} s per line; one thread", timing::machine());
    println!(
        "{:<15} {:<22} {:<5} {:>10} {:>10} {:>9} {:>11} {:>8}",
        "op", "shape", "dtype", "kernel", "f32 kernel", "vs f32", "reference", "speed-up"
    );
    for line in lines() {
        let name = if line.vjp { format!("{}/vjp", line.name) } else { line.name.to_string() };
        if !filter.is_empty() && !name.contains(filter.as_str()) {
            continue;
        }
        let ins = |d: DType| -> Vec<Tensor> { line.inputs.iter().map(|(v, s)| tensor(v, d, s)).collect() };
        let base = ins(DType::f32);
        let base: Vec<&Tensor> = base.iter().collect();
        let f32h = handle(&r, &line, DType::f32);
        // A VJP line's f32 row shows its kernel against its rule at f32 too.
        let dtypes: &[DType] =
            if line.vjp { &[DType::f32, DType::f64, DType::f16, DType::bf16] } else { &[DType::f64, DType::f16, DType::bf16] };
        for &dtype in dtypes {
            let h = handle(&r, &line, dtype);
            let owned = ins(dtype);
            let refs: Vec<&Tensor> = owned.iter().collect();
            let ran = h.call(&refs, &[]).expect("runs");
            assert_eq!(ran.provenance.backend, BackendKind::Cpu, "{name} at {dtype}: default selection runs the cpu kernel");
            let kernel = || drop(black_box(h.call(&refs, &[]).expect("runs")));
            let reference = || drop(black_box(h.call_with(&refs, &[], CallOptions::on(BackendKind::Reference)).expect("runs")));
            let at_f32 = || drop(black_box(f32h.call(&base, &[]).expect("runs")));
            let t = timing::race(budget, &reference, &kernel, &at_f32);
            println!(
                "{:<15} {:<22} {:<5} {:>10} {:>10} {:>8.2}x {:>11} {:>7.1}x   ({} reference samples)",
                name,
                line.shape,
                dtype.name(),
                timing::fmt(t.one),
                timing::fmt(t.all),
                t.one / t.all,
                timing::fmt(t.reference),
                t.reference / t.one,
                t.samples
            );
        }
    }
}
