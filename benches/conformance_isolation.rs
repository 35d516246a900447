//! What running a kernel under test in a child process costs (release):
//! `cargo bench --bench conformance_isolation`.
//!
//! Conformance of the windowed median's `cpu` kernel (the example's, a user op) and of
//! `builtin/exp`'s and `builtin/matmul`'s (f32), each on its whole corpus, in a child process
//! (`Isolation::Child`: one fork per run, every case sent over a pipe and its outputs read
//! back) and in the verifier's own process (`Isolation::InProcess`). Prints the median of 5
//! runs of each and their ratio.

#[path = "../examples/windowed_median/median.rs"]
mod median;

use op_runtime::conformance::{conform, Isolation, RunLimits};
use op_runtime::{BackendKind, OpHandle, Registry};
use std::time::{Duration, Instant};

fn median_of(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(reg: &Registry, h: &OpHandle, isolation: Isolation) -> Duration {
    reg.set_run_limits(h, RunLimits::default().with_isolation(isolation));
    median_of(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                conform(h, BackendKind::Cpu).expect("conforms");
                t.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let reg = Registry::with_builtins();
    let med = reg.register(&median::windowed_median::DECL).expect("registers");
    let exp = reg.lookup("builtin/exp").expect("built-in").at(&[op_runtime::DType::f32]).expect("f32");
    let mm = reg.lookup("builtin/matmul").expect("built-in").at(&[op_runtime::DType::f32]).expect("f32");
    println!("conformance on cpu, median of 5 runs: child process vs in process");
    for (name, h) in [("windowed_median", &med), ("builtin/exp f32", &exp), ("builtin/matmul f32", &mm)] {
        let cases = op_runtime::conformance::corpus(&h.op()).cases.len();
        let child = time(&reg, h, Isolation::Child);
        let inproc = time(&reg, h, Isolation::InProcess);
        println!(
            "{name:<20} {cases:>4} cases: child {:>8.1} ms, in process {:>8.1} ms, ratio {:.2}",
            child.as_secs_f64() * 1e3,
            inproc.as_secs_f64() * 1e3,
            child.as_secs_f64() / inproc.as_secs_f64()
        );
    }
}
