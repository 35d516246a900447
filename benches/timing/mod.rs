//! Shared timing for the CPU benchmarks: the reference and the kernel (on a one-thread and on an
//! all-threads CPU backend) are timed alternately, round by round, so load from other processes
//! hits all three alike; each sample is one call; the figures are medians over the samples.

use std::time::Instant;

/// Medians, in seconds, of one race.
pub struct Race {
    /// The reference function called directly (one thread).
    pub reference: f64,
    /// The kernel through dispatch on a one-thread CPU backend.
    pub one: f64,
    /// The kernel through dispatch on the all-threads CPU backend.
    pub all: f64,
    /// Reference samples taken.
    pub samples: usize,
}

/// Seconds per measured line: `CPU_BENCH_SECS`, default 3.
pub fn budget() -> f64 {
    std::env::var("CPU_BENCH_SECS").ok().and_then(|s| s.parse().ok()).filter(|s: &f64| *s > 0.0).unwrap_or(3.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time(f: &dyn Fn()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

/// Times the three alternately within about `budget` seconds: 11 to 101 reference samples
/// (about 70% of the budget), each round followed by the same number (1 to 50) of samples of
/// each kernel column (about 15% of the budget each).
pub fn race(budget: f64, reference: &dyn Fn(), one: &dyn Fn(), all: &dyn Fn()) -> Race {
    // Warm-up (allocations, the pools' threads, instruction caches) and calibration.
    let tr = time(reference);
    let tk = time(one).max(time(one));
    time(all);
    let nr = ((budget * 0.7 / tr) as usize).clamp(11, 101);
    let per = ((budget * 0.15 / nr as f64 / tk.max(1e-7)) as usize).clamp(1, 50);
    let (mut vr, mut v1, mut v2) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..nr {
        vr.push(time(reference));
        v1.extend((0..per).map(|_| time(one)));
        v2.extend((0..per).map(|_| time(all)));
    }
    Race { reference: median(vr), one: median(v1), all: median(v2), samples: nr }
}

/// A duration for humans.
pub fn fmt(t: f64) -> String {
    if t >= 0.1 {
        format!("{:.1} ms", t * 1e3)
    } else if t >= 1e-3 {
        format!("{:.3} ms", t * 1e3)
    } else {
        format!("{:.1} us", t * 1e6)
    }
}

/// The machine, for the record: CPU model, logical CPUs, the instruction set the kernels use,
/// and the load average when the run started.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|s| s.trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let load =
        std::fs::read_to_string("/proc/loadavg").ok().and_then(|t| t.split_whitespace().next().map(str::to_string)).unwrap_or_default();
    format!("{model}, {cpus} logical CPUs, kernels on {:?}, load average {load}", op_runtime::cpu::simd::Isa::detect())
}
