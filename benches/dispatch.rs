//! Dispatch overhead: the registry path (lookup, validation, backend choice, execution,
//! provenance) versus calling the same function directly, measured in one run.
//! Run: `cargo bench --bench dispatch`. Prints medians and ratios. `DISPATCH_TINY_ONLY=1` stops
//! after the tiny-op measurement (for profiling that path alone).

#[path = "../examples/windowed_median/median.rs"]
mod median;

use op_runtime::builtins;
use op_runtime::{BackendKind, CallOptions, Registry, Scalar, Tensor};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Median over `rounds` of the mean time of `iters` calls.
fn median_time(rounds: usize, iters: usize, mut f: impl FnMut()) -> Duration {
    let mut samples: Vec<Duration> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed() / iters as u32
        })
        .collect();
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let r = Registry::with_builtins();
    let opts = CallOptions::on(BackendKind::Reference);

    // Tiny op: 16-element add.
    let add = r.lookup("builtin/add").expect("add");
    let a: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..16).map(|i| (i * 3) as f32).collect();
    let (ta, tb) = (Tensor::vector(a.clone()), Tensor::vector(b.clone()));
    // `DISPATCH_PROFILE_CALLS=N`: N registry calls and nothing else, for an instruction-count
    // profile (`valgrind --tool=callgrind`), which machine noise does not move.
    if let Some(n) = std::env::var("DISPATCH_PROFILE_CALLS").ok().and_then(|v| v.parse::<usize>().ok()) {
        for _ in 0..n {
            black_box(add.call_with(black_box(&[&ta, &tb]), &[], opts).expect("call"));
        }
        return;
    }
    // Interleave the two measurements so machine noise hits both alike.
    let (mut via, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        via.push(median_time(5, 20_000, || {
            black_box(add.call_with(black_box(&[&ta, &tb]), &[], opts).expect("call"));
        }));
        direct.push(median_time(5, 20_000, || {
            black_box(builtins::add::<f32>(black_box(&a), black_box(&b)));
        }));
    }
    via.sort();
    direct.sort();
    let (v, d) = (via[via.len() / 2], direct[direct.len() / 2]);
    println!(
        "tiny add (16 elements): registry {:>8.1} ns   direct {:>8.1} ns   overhead {:>6.1} ns/call   ratio {:.2}x",
        v.as_nanos() as f64,
        d.as_nanos() as f64,
        v.as_nanos() as f64 - d.as_nanos() as f64,
        v.as_secs_f64() / d.as_secs_f64()
    );

    if std::env::var_os("DISPATCH_TINY_ONLY").is_some() {
        return; // for profiling the tiny path alone
    }

    // 1M-sample windowed median, w = 7, on the reference backend.
    let h = r.register(&median::windowed_median::DECL).expect("register");
    let x: Vec<f32> = (0..1_000_000u32).map(|i| ((i.wrapping_mul(2654435761) >> 8) % 1000) as f32).collect();
    let tx = Tensor::vector(x);
    // Both paths read the very same buffer.
    let x: &[f32] = tx.as_slice::<f32>().expect("f32");
    let (mut via, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        via.push(median_time(1, 3, || {
            black_box(h.call_with(&[&tx], &[Scalar::U32(7)], opts).expect("call"));
        }));
        direct.push(median_time(1, 3, || {
            black_box(median::windowed_median::<f32>(black_box(x), 7));
        }));
    }
    via.sort();
    direct.sort();
    let (v, d) = (via[via.len() / 2], direct[direct.len() / 2]);
    println!(
        "median 1M (w = 7):      registry {:>8.2} ms   direct {:>8.2} ms   ratio {:.3}x",
        v.as_secs_f64() * 1e3,
        d.as_secs_f64() * 1e3,
        v.as_secs_f64() / d.as_secs_f64()
    );
}
