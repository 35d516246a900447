//! Every built-in's `cpu` kernel through dispatch versus its reference function called directly,
//! at 1M elements (matmul 512 x 512 x 512, conv1d n = 1M with m = 64): the kernel on a registry
//! whose CPU backend has one thread and on one with all threads; the reference on one thread.
//! Run: `cargo bench --bench cpu_builtins` (optionally a filter word, e.g. `matmul`;
//! `CPU_BENCH_SECS` seconds per line, default 3). Ratios are reference / kernel medians.

mod timing;

use op_runtime::backends::{CpuBackend, ReferenceBackend};
use op_runtime::builtins;
use op_runtime::{BackendKind, Registry, Scalar, Tensor};
use std::hint::black_box;
use std::sync::Arc;

/// Elements of the elementwise and reduction inputs.
const N: usize = 1_000_000;

/// A registry holding the built-ins whose only backends are `cpu` and the reference.
fn registry(cpu: CpuBackend) -> Registry {
    let r = Registry::with_backends(vec![Arc::new(cpu), Arc::new(ReferenceBackend::default())]);
    builtins::register_all(&r);
    r
}

/// `n` values uniform in `[lo, hi)` from a fixed LCG.
fn values(n: usize, lo: f32, hi: f32, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

/// One line: the reference direct vs the op through dispatch on both registries.
struct Line<'a> {
    name: &'a str,
    shape: String,
    inputs: Vec<Tensor>,
    params: Vec<Scalar>,
    reference: Box<dyn Fn() + 'a>,
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    let budget = timing::budget();
    let (one, all) = (registry(CpuBackend::with_threads(1)), registry(CpuBackend::default()));
    let threads = CpuBackend::default().threads();
    println!("cpu_builtins: {}; {budget} s per line", timing::machine());
    let (x, y) = (values(N, -1.0, 1.0, 1), values(N, -1.0, 1.0, 2));
    let (wide, pos) = (values(N, -20.0, 20.0, 3), values(N, 1e-3, 100.0, 4));
    let (a, b) = (values(512 * 512, -1.0, 1.0, 5), values(512 * 512, -1.0, 1.0, 6));
    let taps = values(64, -1.0, 1.0, 7);
    let v = |d: &[f32]| Tensor::vector(d.to_vec());
    let m512 = |d: &[f32]| Tensor::from_vec(vec![512, 512], d.to_vec()).expect("a 512 x 512 matrix");
    let n = format!("n={N}");
    type R<'a> = Box<dyn Fn() + 'a>;
    let (xr, yr, wr, pr) = (&x, &y, &wide, &pos);
    let bin = |f: fn(&[f32], &[f32]) -> Vec<f32>| -> R<'_> { Box::new(move || drop(black_box(f(black_box(xr), black_box(yr))))) };
    let un = |f: fn(&[f32]) -> Vec<f32>, d: &'static str| -> R<'_> {
        let data: &Vec<f32> = match d {
            "wide" => wr,
            "pos" => pr,
            _ => xr,
        };
        Box::new(move || drop(black_box(f(black_box(data)))))
    };
    let lines = vec![
        Line { name: "add", shape: n.clone(), inputs: vec![v(&x), v(&y)], params: vec![], reference: bin(builtins::add::<f32>) },
        Line { name: "sub", shape: n.clone(), inputs: vec![v(&x), v(&y)], params: vec![], reference: bin(builtins::sub::<f32>) },
        Line { name: "mul", shape: n.clone(), inputs: vec![v(&x), v(&y)], params: vec![], reference: bin(builtins::mul::<f32>) },
        Line { name: "div", shape: n.clone(), inputs: vec![v(&x), v(&y)], params: vec![], reference: bin(builtins::div::<f32>) },
        Line { name: "neg", shape: n.clone(), inputs: vec![v(&x)], params: vec![], reference: un(builtins::neg::<f32>, "x") },
        Line {
            name: "scale",
            shape: n.clone(),
            inputs: vec![v(&x)],
            params: vec![Scalar::F32(1.7)],
            reference: Box::new(|| drop(black_box(builtins::scale::<f32>(black_box(&x), 1.7)))),
        },
        Line {
            name: "exp",
            shape: format!("{n}, x in [-20, 20)"),
            inputs: vec![v(&wide)],
            params: vec![],
            reference: un(builtins::exp::<f32>, "wide"),
        },
        Line {
            name: "log",
            shape: format!("{n}, x in [1e-3, 100)"),
            inputs: vec![v(&pos)],
            params: vec![],
            reference: un(builtins::log::<f32>, "pos"),
        },
        Line {
            name: "tanh",
            shape: format!("{n}, x in [-20, 20)"),
            inputs: vec![v(&wide)],
            params: vec![],
            reference: un(builtins::tanh::<f32>, "wide"),
        },
        Line { name: "relu", shape: n.clone(), inputs: vec![v(&x)], params: vec![], reference: un(builtins::relu::<f32>, "x") },
        Line { name: "sum", shape: n.clone(), inputs: vec![v(&x)], params: vec![], reference: un(builtins::sum::<f32>, "x") },
        Line { name: "mean", shape: n.clone(), inputs: vec![v(&x)], params: vec![], reference: un(builtins::mean::<f32>, "x") },
        Line { name: "mse_loss", shape: n.clone(), inputs: vec![v(&x), v(&y)], params: vec![], reference: bin(builtins::mse_loss::<f32>) },
        Line {
            name: "matmul",
            shape: "512x512x512".into(),
            inputs: vec![m512(&a), m512(&b)],
            params: vec![],
            reference: Box::new(|| drop(black_box(builtins::matmul::<f32>(black_box(&a), black_box(&b), 512, 512, 512)))),
        },
        Line {
            name: "conv1d",
            shape: format!("{n}, m=64"),
            inputs: vec![v(&x), v(&taps)],
            params: vec![],
            reference: Box::new(|| drop(black_box(builtins::conv1d::<f32>(black_box(&x), black_box(&taps))))),
        },
    ];
    println!(
        "{:<9} {:<22} {:>10} {:>11} {:>7} {:>11} {:>7}",
        "op",
        "shape",
        "reference",
        "cpu 1 thr",
        "ratio",
        format!("cpu {threads} thr"),
        "ratio"
    );
    for line in lines.iter().filter(|l| filter.is_empty() || l.name.contains(filter.as_str())) {
        let (h1, ha) = (
            one.lookup(&format!("builtin/{}", line.name)).expect("built-in"),
            all.lookup(&format!("builtin/{}", line.name)).expect("built-in"),
        );
        let refs: Vec<&Tensor> = line.inputs.iter().collect();
        let out = h1.call(&refs, &line.params).expect("runs");
        assert_eq!(out.provenance.backend, BackendKind::Cpu, "{}: default selection runs the cpu kernel", line.name);
        let call = |h: &op_runtime::OpHandle| drop(black_box(h.call(&refs, &line.params).expect("runs")));
        let r = timing::race(budget, &*line.reference, &|| call(&h1), &|| call(&ha));
        println!(
            "{:<9} {:<22} {:>10} {:>11} {:>6.1}x {:>11} {:>6.1}x   ({} reference samples)",
            line.name,
            line.shape,
            timing::fmt(r.reference),
            timing::fmt(r.one),
            r.reference / r.one,
            timing::fmt(r.all),
            r.reference / r.all,
            r.samples
        );
    }
}
