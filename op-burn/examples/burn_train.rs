//! A burn model trained through a verified op: the windowed median declared in
//! `examples/windowed_median/median.rs` (a user op with its own `cpu` kernel) and the built-in
//! `conv1d`, applied to burn tensors with `op_burn::BurnOp`, mixed with burn's own ops (the loss),
//! differentiated by burn's autodiff and updated by burn's own Adam (`burn_optim::Adam`). Before
//! training, burn's gradient is checked against this project's tape on the same data.
//!
//! ```text
//! cargo run --release --example burn_train
//! ```

// burn 0.22 marks its NdArray backend deprecated; the adapter serves it (issue 36).
#![allow(deprecated)]

#[path = "../../examples/windowed_median/median.rs"]
mod median;

use burn_optim::{AdamConfig, Optimizer};
use burn_tensor::{Device, Tensor as BTensor, TensorData};
use op_burn::BurnOp;
use op_runtime::{DType, Scalar, Tape, Tensor};

/// Samples in the signal.
const N: usize = 8192;
/// Median window.
const W: u32 = 7;
/// Taps of the trainable pre-filter.
const TAPS: usize = 5;
/// Adam steps and learning rate.
const STEPS: usize = 8;
const LR: f64 = 0.02;
/// The largest difference allowed between burn's gradient and the tape's.
const TOLERANCE: f64 = 1e-6;

/// A smooth signal and the same with one-sample spikes (about one sample in 40).
fn signal(n: usize) -> (Vec<f32>, Vec<f32>) {
    let clean: Vec<f32> = (0..n).map(|i| (i as f32 * 0.01).sin() + 0.5 * (i as f32 * 0.037).sin()).collect();
    let mut noisy = clean.clone();
    let mut s: u64 = 0x5eed;
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 33) as u32
    };
    let mut i = 0usize;
    loop {
        i += 20 + (next() % 40) as usize;
        if i >= n {
            break;
        }
        let amp = 3.0 + (next() % 300) as f32 / 100.0;
        noisy[i] += if next() % 2 == 0 { amp } else { -amp };
    }
    (clean, noisy)
}

/// The model on burn: `median(conv1d(noisy, prefilter), W)`, and burn's own mean squared error
/// against the clean signal.
struct Model {
    conv: BurnOp,
    median: BurnOp,
}

impl Model {
    fn loss(&self, noisy: &BTensor<1>, prefilter: &BTensor<1>, clean: &BTensor<1>) -> Result<BTensor<1>, op_burn::Error> {
        let filtered: BTensor<1> = self.conv.apply(&[noisy.clone(), prefilter.clone()])?;
        let despiked: BTensor<1> = self.median.apply(&[filtered])?;
        Ok((despiked - clean.clone()).powi_scalar(2).mean())
    }
}

/// The same pipeline on this project's tape (`builtin/mse_loss` for the loss): the loss and the
/// gradient of the prefilter.
fn tape_gradient(noisy: &[f32], prefilter: &[f32], clean: &[f32]) -> Result<(f64, Vec<f32>), Box<dyn std::error::Error>> {
    let mut t = Tape::new();
    let x = t.input("noisy", DType::f32, [noisy.len()]);
    let k = t.param("prefilter", Tensor::vector(prefilter.to_vec()))?;
    let y = t.input("clean", DType::f32, [clean.len()]);
    let filtered = t.call1("builtin/conv1d", &[x, k], &[])?;
    let despiked = t.call1("user/example/windowed_median", &[filtered], &[Scalar::U32(W)])?;
    let loss = t.call1("builtin/mse_loss", &[despiked, y], &[])?;
    let (xs, ys) = (Tensor::vector(noisy.to_vec()), Tensor::vector(clean.to_vec()));
    let mut run = t.run(&[(x, &xs), (y, &ys)])?;
    let l = run.scalar(loss).ok_or("the tape computed no loss")?;
    let g = t.backward(&mut run, loss)?;
    let g = g.get(k).ok_or("the tape computed no gradient")?.try_slice::<f32>()?.to_vec();
    Ok((l, g))
}

fn vec1(t: BTensor<1>) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    Ok(t.into_data().to_vec::<f32>().map_err(|e| format!("{e:?}"))?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = op_runtime::registry();
    let median = registry.register(&median::windowed_median::DECL)?;
    let conv = registry.lookup("builtin/conv1d")?;
    let model = Model { conv: BurnOp::new(&conv, &[]), median: BurnOp::new(&median, &[Scalar::U32(W)]) };

    let (clean, noisy) = signal(N);
    let m = N - (TAPS - 1) - (W as usize - 1);
    let offset = (TAPS - 1) / 2 + (W as usize - 1) / 2;
    let target = clean[offset..offset + m].to_vec();
    // The data are plain NdArray tensors; the parameter lives on the autodiff device.
    let cpu = Device::ndarray();
    let ad = cpu.clone().autodiff();
    let xs = BTensor::<1>::from_data(TensorData::new(noisy.clone(), [N]), &cpu);
    let ys = BTensor::<1>::from_data(TensorData::new(target.clone(), [m]), &cpu);
    let start = vec![0.05f32, 0.1, 0.5, 0.1, 0.05];
    let mut prefilter = BTensor::<1>::from_data(TensorData::new(start.clone(), [TAPS]), &ad).require_grad();
    println!(
        "model    : burn NdArray prefilter[{TAPS}] -> {} -> {}(w = {W}) -> burn (y - clean)^2 mean, {N} samples",
        conv.id(),
        median.id()
    );

    // burn's gradient against the tape's, on the same data and parameters.
    let loss = model.loss(&xs, &prefilter, &ys)?;
    let grads = loss.backward();
    let g_burn = vec1(prefilter.grad(&grads).ok_or("burn computed no gradient")?)?;
    let (l_tape, g_tape) = tape_gradient(&noisy, &start, &target)?;
    let diff = g_burn.iter().zip(&g_tape).map(|(a, b)| (*a as f64 - *b as f64).abs()).fold(0.0f64, f64::max);
    println!("loss     : burn {:.9}, tape {l_tape:.9}", vec1(loss)?[0]);
    println!("gradient : burn {g_burn:?}");
    println!("           tape {g_tape:?}");
    println!("burn backward vs tape: max abs diff {diff:e}");
    if g_burn.len() != TAPS || diff > TOLERANCE {
        return Err(format!("burn's gradient differs from the tape's by {diff:e} (allowed {TOLERANCE:e})").into());
    }
    if let Some(f) = model.median.last_forward() {
        println!("median forward ran : {f}");
    }
    if let Some(b) = model.median.last_backward() {
        print!("median backward ran: {b}");
    }
    for op in [&model.conv, &model.median] {
        if let Some(e) = op.take_error() {
            return Err(e.into());
        }
    }

    // Training: burn's backward through both ops, burn's Adam on the parameter.
    let adam = AdamConfig::new().build();
    let mut state = None;
    let mut losses = Vec::with_capacity(STEPS + 1);
    for step in 0..STEPS {
        let loss = model.loss(&xs, &prefilter, &ys)?;
        let grads = loss.backward();
        let l = vec1(loss)?[0];
        let grad = prefilter.grad(&grads).ok_or("burn computed no gradient")?;
        let (next, s) = adam.step(LR, prefilter.clone().inner(), grad, state);
        state = s;
        prefilter = next.autodiff().require_grad();
        let k: Vec<String> = vec1(prefilter.clone())?.iter().map(|v| format!("{v:.3}")).collect();
        println!("  step {step}: loss {l:.6}   prefilter [{}]", k.join(", "));
        losses.push(l);
    }
    let last = vec1(model.loss(&xs, &prefilter, &ys)?)?[0];
    println!("  after {STEPS} steps: loss {last:.6}");
    if last >= losses[0] {
        return Err(format!("training did not lower the loss: {} -> {last}", losses[0]).into());
    }
    Ok(())
}
