//! Every built-in's `cpu` kernel through dispatch versus its reference function called directly,
//! at 1M elements (matmul 512 x 512 x 512, conv1d n = 1M with m = 64): the kernel on a registry
//! whose CPU backend has one thread and on one with all threads; the reference on one thread.
//! Run: `cargo bench --bench cpu_builtins` (optionally a filter word, e.g. `matmul`;
//! `CPU_BENCH_SECS` seconds per line, default 3). Ratios are reference / kernel medians.

mod timing;

use op_runtime::backend::{CpuBackend, ReferenceBackend};
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

/// The inputs, made once.
struct Data {
    x: Vec<f32>,
    y: Vec<f32>,
    /// exp and tanh inputs.
    wide: Vec<f32>,
    /// log inputs (its domain).
    pos: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
    taps: Vec<f32>,
}

/// Every built-in's line.
fn lines(d: &Data) -> Vec<Line<'_>> {
    type R<'a> = Box<dyn Fn() + 'a>;
    let v = |s: &[f32]| Tensor::vector(s.to_vec());
    let m512 = |s: &[f32]| Tensor::from_vec(vec![512, 512], s.to_vec()).expect("a 512 x 512 matrix");
    let n = format!("n={N}");
    let bin = |name, f: fn(&[f32], &[f32]) -> Vec<f32>| Line {
        name,
        shape: n.clone(),
        inputs: vec![v(&d.x), v(&d.y)],
        params: vec![],
        reference: Box::new(move || drop(black_box(f(black_box(&d.x), black_box(&d.y))))) as R<'_>,
    };
    let un = |name, shape: String, x: &'static str, f: fn(&[f32]) -> Vec<f32>| {
        let data: &Vec<f32> = match x {
            "wide" => &d.wide,
            "pos" => &d.pos,
            _ => &d.x,
        };
        Line {
            name,
            shape,
            inputs: vec![v(data)],
            params: vec![],
            reference: Box::new(move || drop(black_box(f(black_box(data))))) as R<'_>,
        }
    };
    vec![
        bin("add", builtins::add::<f32>),
        bin("sub", builtins::sub::<f32>),
        bin("mul", builtins::mul::<f32>),
        bin("div", builtins::div::<f32>),
        un("neg", n.clone(), "x", builtins::neg::<f32>),
        Line {
            name: "scale",
            shape: n.clone(),
            inputs: vec![v(&d.x)],
            params: vec![Scalar::F32(1.7)],
            reference: Box::new(|| drop(black_box(builtins::scale::<f32>(black_box(&d.x), 1.7)))),
        },
        un("exp", format!("{n}, x in [-20, 20)"), "wide", builtins::exp::<f32>),
        un("log", format!("{n}, x in [1e-3, 100)"), "pos", builtins::log::<f32>),
        un("tanh", format!("{n}, x in [-20, 20)"), "wide", builtins::tanh::<f32>),
        un("relu", n.clone(), "x", builtins::relu::<f32>),
        un("sum", n.clone(), "x", builtins::sum::<f32>),
        un("mean", n.clone(), "x", builtins::mean::<f32>),
        bin("mse_loss", builtins::mse_loss::<f32>),
        Line {
            name: "matmul",
            shape: "512x512x512".into(),
            inputs: vec![m512(&d.a), m512(&d.b)],
            params: vec![],
            reference: Box::new(|| drop(black_box(builtins::matmul::<f32>(black_box(&d.a), black_box(&d.b), 512, 512, 512)))),
        },
        Line {
            name: "conv1d",
            shape: format!("{n}, m=64"),
            inputs: vec![v(&d.x), v(&d.taps)],
            params: vec![],
            reference: Box::new(|| drop(black_box(builtins::conv1d::<f32>(black_box(&d.x), black_box(&d.taps))))),
        },
    ]
}

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    let budget = timing::budget();
    let (one, all) = (registry(CpuBackend::with_threads(1)), registry(CpuBackend::default()));
    let threads = CpuBackend::default().threads();
    println!("cpu_builtins: {}; {budget} s per line", timing::machine());
    let d = Data {
        x: values(N, -1.0, 1.0, 1),
        y: values(N, -1.0, 1.0, 2),
        wide: values(N, -20.0, 20.0, 3),
        pos: values(N, 1e-3, 100.0, 4),
        a: values(512 * 512, -1.0, 1.0, 5),
        b: values(512 * 512, -1.0, 1.0, 6),
        taps: values(64, -1.0, 1.0, 7),
    };
    println!(
        "{:<9} {:<26} {:>10} {:>11} {:>7} {:>11} {:>7}",
        "op",
        "shape",
        "reference",
        "cpu 1 thr",
        "ratio",
        format!("cpu {threads} thr"),
        "ratio"
    );
    for line in lines(&d).iter().filter(|l| filter.is_empty() || l.name.contains(filter.as_str())) {
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
            "{:<9} {:<26} {:>10} {:>11} {:>6.1}x {:>11} {:>6.1}x   ({} reference samples)",
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
