//! Device-resident tensors vs the host round trip, measured in one run (release):
//! `cargo bench --bench device_chain`.
//!
//! The same computation, `-((a + b) * b)` over `n` f32 elements with the built-ins' WGSL
//! kernels on the process-wide wgpu engine, two ways:
//! - host round trip: three calls on host tensors (each uploads its inputs and reads its
//!   output back);
//! - device-resident: `to_device` of `a` and `b`, the three calls on device tensors (no
//!   transfer between them), `to_host` of the result.
//!
//! Prints, per size, the median time of each, the tensor bytes each moved between host and
//! device per chain (from `WgpuEngine::transfers`), and the line
//! `device-resident chain vs host round trip: <ratio>x (n = <n>)` (host time / device time:
//! above 1 the device-resident chain is faster). Before timing, the two ways are checked to
//! give the same tensor. Exits 0 without measuring when no wgpu adapter exists.

use op_runtime::wgpu::WgpuEngine;
use op_runtime::{BackendKind, CallOptions, Registry, Tensor};
use std::time::{Duration, Instant};

fn median_of(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn call(r: &Registry, name: &str, ins: &[&Tensor]) -> Tensor {
    let h = r.lookup(name).expect("built-in");
    h.call_with(ins, &[], CallOptions::on(BackendKind::Wgpu)).expect("runs").outputs.remove(0)
}

fn chain(r: &Registry, a: &Tensor, b: &Tensor) -> Tensor {
    let s = call(r, "builtin/add", &[a, b]);
    let p = call(r, "builtin/mul", &[&s, b]);
    call(r, "builtin/neg", &[&p])
}

/// Median seconds of `f` over `iters` runs (after two warm-up runs) and the tensor bytes one
/// run moved.
fn measure(engine: &WgpuEngine, iters: usize, mut f: impl FnMut() -> Tensor) -> (Duration, u64, Tensor) {
    f();
    let out = f().to_host().expect("host result");
    let before = engine.transfers().tensor_bytes();
    f();
    let bytes = engine.transfers().tensor_bytes() - before;
    let times = (0..iters)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .collect();
    (median_of(times), bytes, out)
}

fn main() {
    let engine = match WgpuEngine::shared() {
        Ok(e) => e,
        Err(e) => {
            println!("no wgpu adapter ({e}); nothing measured");
            return;
        }
    };
    println!("adapter: {}", engine.profile().adapter);
    let r = op_runtime::registry();
    for (n, iters) in [(1024usize, 200usize), (1 << 20, 21)] {
        let a = Tensor::vector((0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect::<Vec<f32>>());
        let b = Tensor::vector((0..n).map(|i| 1.0 + (i as f32 * 0.11).cos()).collect::<Vec<f32>>());
        let (host, host_bytes, want) = measure(engine, iters, || chain(r, &a, &b));
        let (dev, dev_bytes, got) = measure(engine, iters, || {
            let (da, db) = (a.to_device(engine).expect("upload"), b.to_device(engine).expect("upload"));
            chain(r, &da, &db).to_host().expect("read back")
        });
        assert_eq!(got, want, "the device-resident chain equals the host round trip");
        println!("n = {n}: host round trip {host:?} ({host_bytes} tensor bytes moved per chain)");
        println!("n = {n}: device-resident chain {dev:?} ({dev_bytes} tensor bytes moved per chain)");
        println!("device-resident chain vs host round trip: {:.2}x (n = {n})", host.as_secs_f64() / dev.as_secs_f64());
    }
}
