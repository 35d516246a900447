//! Two threads against one (issue 37): the median (w = 7 and w = 31) and `exp` and `sum` at 16M
//! f32, and matmul at 1024^3 f32, each through dispatch on a registry whose CPU backend has one
//! thread (`CpuBackend::with_threads(1)`) and on one with two (`with_threads(2)`), timed
//! alternately round by round (`timing::race`; its reference column is the one-thread call
//! again, so the columns share the machine's noise). Prints the medians and the speedup.
//! Run: `cargo bench --bench cpu_scaling [-- <filter words>]` (`CPU_BENCH_SECS` seconds per
//! line, default 3). Goal: at least 1.7x for the median and exp at 16M on a quiet machine.

#[path = "../examples/windowed_median/median.rs"]
mod median;
mod timing;

use op_runtime::backend::{CpuBackend, ReferenceBackend};
use op_runtime::{BackendKind, OpHandle, Registry, Scalar, Tensor};
use std::hint::black_box;
use std::sync::Arc;

/// A registry whose CPU backend has `threads` threads, with the median registered.
fn registry(threads: usize) -> Registry {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::with_threads(threads)), Arc::new(ReferenceBackend::default())]);
    op_runtime::builtins::register_all(&r);
    r.register(&median::windowed_median::DECL).expect("the median registers");
    r
}

fn signal(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|i| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (i as f32 * 0.002).sin() + ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
        })
        .collect()
}

fn main() {
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let budget = timing::budget();
    let (one, two) = (registry(1), registry(2));
    println!("cpu_scaling: 1 vs 2 threads; {}; {budget} s per line", timing::machine());
    let n = 1 << 24;
    let x = Tensor::vector(signal(n, 0x5eed));
    let m = 1024;
    let a = Tensor::new(vec![m, m], op_runtime::Data::F32(signal(m * m, 1))).expect("a");
    let b = Tensor::new(vec![m, m], op_runtime::Data::F32(signal(m * m, 2))).expect("b");
    type Line<'a> = (&'a str, &'a str, Vec<&'a Tensor>, Vec<Scalar>);
    let lines: Vec<Line> = vec![
        ("median w=7 n=16M", "user/example/windowed_median@1", vec![&x], vec![Scalar::U32(7)]),
        ("median w=31 n=16M", "user/example/windowed_median@1", vec![&x], vec![Scalar::U32(31)]),
        ("exp n=16M", "builtin/exp@1", vec![&x], vec![]),
        ("sum n=16M", "builtin/sum@1", vec![&x], vec![]),
        ("matmul 1024^3", "builtin/matmul@1", vec![&a, &b], vec![]),
    ];
    for (label, id, args, params) in lines {
        if !filters.is_empty() && !filters.iter().any(|f| label.contains(f.as_str())) {
            continue;
        }
        let (h1, h2): (OpHandle, OpHandle) = (one.lookup(id).expect("registered"), two.lookup(id).expect("registered"));
        let call = |h: &OpHandle| {
            let out = h.call(&args, &params).expect("the call runs");
            debug_assert_eq!(out.provenance.backend, BackendKind::Cpu);
            black_box(out);
        };
        let first = h1.call(&args, &params).expect("runs");
        assert_eq!(first.provenance.backend, BackendKind::Cpu, "{label}: default selection runs the cpu kernel");
        let r = timing::race(budget, &|| call(&h1), &|| call(&h1), &|| call(&h2));
        let t1 = (r.reference + r.one) / 2.0;
        // What the machine allows: two independent one-thread calls at once, on two threads.
        let pair = || {
            std::thread::scope(|s| {
                s.spawn(|| call(&h1));
                call(&h1);
            })
        };
        let p = timing::race(budget, &|| call(&h1), &|| call(&h1), &pair);
        println!(
            "{label:<20} 1 thread {:>10}   2 threads {:>10}   speedup {:.2}x   ({} rounds); two 1-thread calls at once: {:.2}x the throughput",
            timing::fmt(t1),
            timing::fmt(r.all),
            t1 / r.all,
            r.samples,
            2.0 * (p.reference + p.one) / 2.0 / p.all
        );
    }
}
