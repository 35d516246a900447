//! Differentiating every way through one recorded pipeline, in f64: the loss
//! `mse_loss(tanh(windowed_median(conv1d(x, k), w = 3)), zeros)` (built-ins and the user's
//! median, whose VJP op the user declared differentiable in `median_vjp.rs`), its derivative
//! along a direction in forward mode, a Hessian-vector product (second order, forward over
//! reverse), and per-example gradients of a batch (`vmap` of the gradient). It prints exactly
//! these lines (values `{:.15e}`), which are compared with an independent implementation:
//!
//! ```text
//! loss: <value>
//! jvp: <d/de loss(x + e v) at e = 0>
//! hvp: <the first 8 values of H v>
//! vmap grad[b][0..4]: <4 values>        (one line per b in 0..4, for x_b = x * (1 + 0.1 b))
//! ```
//!
//! ```text
//! cargo run --release --example autodiff
//! ```

#[path = "../windowed_median/median.rs"]
mod median;
mod median_vjp;

use op_runtime::train::{vmap, InAxis, Tape, TensorFn};
use op_runtime::{DType, Scalar, Tensor};

/// Samples in the signal.
const N: usize = 64;
/// Median window.
const W: u32 = 3;
/// Examples in the batch.
const BATCH: usize = 4;

fn values(t: &Tensor) -> Vec<f64> {
    t.data().to_f64_vec().unwrap_or_default()
}

fn line(values: &[f64]) -> String {
    values.iter().map(|v| format!("{v:.15e}")).collect::<Vec<_>>().join(" ")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = op_runtime::registry();
    registry.register(&median::windowed_median::DECL)?;
    registry.register_vjp_op("user/example/windowed_median", &median_vjp::windowed_median_vjp_op::DECL)?;

    // The pipeline, recorded once over static shapes.
    let mut tape = Tape::new();
    let x = tape.input("x", DType::f64, [N]);
    let k = tape.param("k", Tensor::vector(vec![0.25f64, 0.5, 0.25]))?;
    let conv = tape.call1("builtin/conv1d", &[x, k], &[])?;
    let med = tape.call1("user/example/windowed_median", &[conv], &[Scalar::U32(W)])?;
    let y = tape.call1("builtin/tanh", &[med], &[])?;
    let m = N - 2 - (W as usize - 1);
    let zeros = tape.input("zeros", DType::f64, [m]);
    let loss = tape.call1("builtin/mse_loss", &[y, zeros], &[])?;

    let xs: Vec<f64> = (0..N).map(|i| (0.37 * i as f64).sin() + 0.1 * i as f64 / 64.0).collect();
    let v = Tensor::vector((0..N).map(|i| (0.11 * i as f64).cos()).collect::<Vec<f64>>());
    let (x0, z) = (Tensor::vector(xs.clone()), Tensor::vector(vec![0.0f64; m]));

    let mut run = tape.run(&[(x, &x0), (zeros, &z)])?;
    println!("loss: {:.15e}", run.scalar(loss).ok_or("the loss is a scalar")?);
    // Forward mode: the loss's tangent along v.
    let tangents = tape.jvp(&mut run, &[(x, &v)])?;
    let jvp = tangents.get(loss).and_then(|t| t.data().get_f64(0)).ok_or("the loss has a tangent")?;
    println!("jvp: {jvp:.15e}");
    // Second order: H v with respect to x.
    let hvp = tape.hvp(&mut run, loss, &[(x, &v)])?;
    let hv = values(hvp.hvp(x).ok_or("H v")?);
    println!("hvp: {}", line(&hv[..8]));
    // Per-example gradients: vmap of the gradient over x_b = x (1 + 0.1 b), zeros shared.
    let batch: Vec<f64> = (0..BATCH).flat_map(|b| xs.iter().map(move |v| v * (1.0 + 0.1 * b as f64))).collect();
    let batch = Tensor::from_vec([BATCH, N], batch)?;
    let grads = vmap(tape.grad_func(&[x, zeros], loss, &[x]), &[InAxis::Batched, InAxis::Shared])?.call(&[&batch, &z])?;
    let g = values(&grads[0]);
    for b in 0..BATCH {
        println!("vmap grad[{b}][0..4]: {}", line(&g[b * N..b * N + 4]));
    }
    Ok(())
}
