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
fn median_time(rounds: usize, iters: usize, f: impl FnMut()) -> Duration {
    median_times(rounds, iters, f).0
}

/// The calling thread's CPU time (what machine noise from other processes does not add to).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID needs nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Medians over `rounds` of the mean wall and thread-CPU time of `iters` calls.
fn median_times(rounds: usize, iters: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let (mut wall, mut cpu): (Vec<Duration>, Vec<Duration>) = (0..rounds)
        .map(|_| {
            let (t, c) = (Instant::now(), thread_cpu());
            for _ in 0..iters {
                f();
            }
            (t.elapsed() / iters as u32, (thread_cpu() - c) / iters as u32)
        })
        .unzip();
    wall.sort();
    cpu.sort();
    (wall[wall.len() / 2], cpu[cpu.len() / 2])
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
    // 15 x 5 x 20,000 calls per path: the median of 15 resolves 5% on this machine.
    let (mut via, mut via_cpu, mut direct, mut direct_cpu) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..15 {
        let (w, c) = median_times(5, 20_000, || {
            black_box(add.call_with(black_box(&[&ta, &tb]), &[], opts).expect("call"));
        });
        via.push(w);
        via_cpu.push(c);
        let (w, c) = median_times(5, 20_000, || {
            black_box(builtins::add::<f32>(black_box(&a), black_box(&b)));
        });
        direct.push(w);
        direct_cpu.push(c);
    }
    let med = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_nanos() as f64
    };
    let (v, d, vc, dc) = (med(&mut via), med(&mut direct), med(&mut via_cpu), med(&mut direct_cpu));
    let spread = (via[via.len() * 3 / 4].as_nanos() as f64 - via[via.len() / 4].as_nanos() as f64) / v;
    println!(
        "tiny add (16 elements): registry {v:>8.1} ns   direct {d:>8.1} ns   overhead {:>6.1} ns/call   ratio {:.2}x   (wall; interquartile spread of the registry medians {:.1}%)",
        v - d,
        v / d,
        spread * 100.0
    );
    println!("tiny add (16 elements): registry {vc:>8.1} ns   direct {dc:>8.1} ns   overhead {:>6.1} ns/call   (thread CPU time)", vc - dc);

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
