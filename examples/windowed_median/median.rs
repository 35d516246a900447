//! The user's op: a sliding-window median the catalog lacks, declared in user code with no
//! change to the engine, with a WGSL and a CUDA kernel and fast CPU kernels, forward and
//! backward (`median_cpu.rs`, written with the runtime's public `par` and `simd` helpers).
//! Declared once over `f16 | bf16 | f32 | f64`: every instance has the reference (and its
//! gradient); the GPU kernels serve `f32`, the CPU kernels `f32` and `f64` (the backward's
//! `f32`), so another dtype on a kernel backend is a typed refusal, never a conversion.

use op_runtime::{op, Real};

#[path = "median_cpu.rs"]
pub mod median_cpu;
pub use median_cpu::{windowed_median_cpu, windowed_median_cpu_f64, windowed_median_vjp_cpu};

// Kernel paths resolve against the crate's Cargo.toml, then this file's directory: the kernels
// lie beside this file (`kernels/`), so every crate that includes it (the adapters' examples do)
// declares the same kernels.
/// Median of every odd-sized window of `x` (`w` at most 31): out[i] = median(x[i .. i + w]).
#[op(
    name = "user/example/windowed_median", version = 1,
    signature<T: f16 | bf16 | f32 | f64>(x: T[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> T[n - w + 1],
    category = selection, tolerance = exact,
    backward = vjp(windowed_median_vjp,
        kernel(wgsl = "kernels/windowed_median_vjp.wgsl", dtypes(T: f32),
               bindings(x: read, d_out: read, d_x: read_write, uniform(n, w)), threads = n),
        kernel(cuda = "kernels/windowed_median_vjp.cu", dtypes(T: f32),
               bindings(x: read, d_out: read, d_x: read_write, uniform(n, w)), threads = n, block = 128),
        cpu(windowed_median_vjp_cpu, dtypes(T: f32))),
    subgradient = "cotangent routed to the selected element",
    kernel(wgsl = "kernels/windowed_median.wgsl", dtypes(T: f32),
           bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1),
    kernel(cuda = "kernels/windowed_median.cu", dtypes(T: f32),
           bindings(x: read, out: read_write, uniform(n, w)), threads = (n - w + 17) / 17, block = 128),
    cpu(windowed_median_cpu, dtypes(T: f32)),
    cpu(windowed_median_cpu_f64, dtypes(T: f64)),
    license = "MIT",
)]
pub fn windowed_median<T: Real>(x: &[T], w: u32) -> Vec<T> {
    let w = w as usize;
    let mut win: Vec<T> = Vec::with_capacity(w);
    (0..x.len() + 1 - w)
        .map(|i| {
            win.clear();
            win.extend_from_slice(&x[i..i + w]);
            win.sort_by(|a, b| a.total_cmp(b));
            win[w / 2]
        })
        .collect()
}

/// Index (within `x`) of the element each window selects: the argmedian.
pub fn argmedian<T: Real>(x: &[T], w: u32) -> Vec<usize> {
    let w = w as usize;
    let mut idx: Vec<usize> = Vec::with_capacity(w);
    (0..x.len() + 1 - w)
        .map(|i| {
            idx.clear();
            idx.extend(i..i + w);
            idx.sort_by(|a, b| x[*a].total_cmp(&x[*b]));
            idx[w / 2]
        })
        .collect()
}

/// VJP: each output's cotangent is routed to the element its window selected.
pub fn windowed_median_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let mut grad = vec![T::zero(); x.len()];
    for (gi, j) in g.iter().zip(argmedian(x, w)) {
        grad[j] += *gi;
    }
    grad
}
