//! The integration tests that run the example's windowed median (`examples/windowed_median`),
//! one module per file, in one test binary: the median and its CPU kernels (SIMD, every dtype)
//! are compiled once for all of them, where eighteen binaries compiled them eighteen times
//! (about twenty seconds each, most of a clean build of the root package's tests).
//!
//! A file's tests are filtered by its module: `cargo test --test example_median trust::` runs
//! what `tests/example_median/trust.rs` holds. The tests of every file share this process, so
//! none counts what a process-wide object does while others run (engine transfer counters are
//! read on private engines, or, on the shared CUDA engine, by the device check one filter at a
//! time with `--test-threads=1`).

#[path = "../common/mod.rs"]
mod common;
#[path = "../../examples/windowed_median/composite.rs"]
mod composite;
#[path = "../../examples/windowed_median/median.rs"]
mod median;
#[path = "../../examples/autodiff/median_vjp.rs"]
mod median_vjp;

mod autodiff;
mod batching;
mod composite_median;
mod conformance_median;
mod cpu_kernels;
mod cuda_device_tensors;
mod device_training;
mod dtype_generic;
mod dtype_kernels;
mod gradcheck_median;
mod host_buffers;
mod launch_any_size;
mod runtime_dispatch;
mod sharing;
mod training;
mod trust;
mod vjp_kernels;
mod vmap;
