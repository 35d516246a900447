//! A candle model trained through a verified op: the windowed median declared in
//! `examples/windowed_median/median.rs` (a user op with its own `cpu` kernel) and the built-in
//! `conv1d`, applied to candle tensors with `op_candle::CandleOp`, mixed with candle's own ops
//! (the loss), differentiated by candle's `backward` and updated by candle's optimiser
//! (`candle_nn::SGD` on a candle `Var`). Before training, candle's gradient is checked against
//! this project's tape on the same data.
//!
//! ```text
//! cargo run --release --example candle_train
//! ```

#[path = "../../examples/windowed_median/median.rs"]
mod median;

use candle_core::{Device, Tensor as CTensor, Var};
use candle_nn::{Optimizer, SGD};
use op_candle::CandleOp;
use op_runtime::{DType, Scalar, Tape, Tensor};

/// Samples in the signal.
const N: usize = 8192;
/// Median window.
const W: u32 = 7;
/// Taps of the trainable pre-filter.
const TAPS: usize = 5;
/// SGD steps and learning rate.
const STEPS: usize = 8;
const LR: f64 = 0.2;
/// The largest difference allowed between candle's gradient and the tape's.
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

/// The model on candle: `median(conv1d(noisy, prefilter), W)`, and candle's own mean squared
/// error against the clean signal.
struct Model {
    conv: CandleOp,
    median: CandleOp,
}

impl Model {
    fn loss(&self, noisy: &CTensor, prefilter: &Var, clean: &CTensor) -> Result<CTensor, Box<dyn std::error::Error>> {
        let filtered = self.conv.apply(&[noisy, prefilter.as_tensor()])?;
        let despiked = self.median.apply(&[&filtered])?;
        Ok(despiked.sub(clean)?.sqr()?.mean_all()?)
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = op_runtime::registry();
    let median = registry.register(&median::windowed_median::DECL)?;
    let conv = registry.lookup("builtin/conv1d")?;
    let model = Model { conv: CandleOp::new(&conv, &[]), median: CandleOp::new(&median, &[Scalar::U32(W)]) };

    let (clean, noisy) = signal(N);
    let m = N - (TAPS - 1) - (W as usize - 1);
    let offset = (TAPS - 1) / 2 + (W as usize - 1) / 2;
    let target = clean[offset..offset + m].to_vec();
    let cpu = Device::Cpu;
    let xs = CTensor::from_slice(&noisy, N, &cpu)?;
    let ys = CTensor::from_slice(&target, m, &cpu)?;
    let start = vec![0.05f32, 0.1, 0.5, 0.1, 0.05];
    let prefilter = Var::from_slice(&start, TAPS, &cpu)?;
    println!(
        "model    : candle Var prefilter[{TAPS}] -> {} -> {}(w = {W}) -> candle (y - clean)^2 mean, {N} samples",
        conv.id(),
        median.id()
    );

    // candle's gradient against the tape's, on the same data and parameters.
    let loss = model.loss(&xs, &prefilter, &ys)?;
    let grads = loss.backward()?;
    let g_candle = grads.get(prefilter.as_tensor()).ok_or("candle computed no gradient")?.to_vec1::<f32>()?;
    let (l_tape, g_tape) = tape_gradient(&noisy, &start, &target)?;
    let diff = g_candle.iter().zip(&g_tape).map(|(a, b)| (*a as f64 - *b as f64).abs()).fold(0.0f64, f64::max);
    println!("loss     : candle {:.9}, tape {l_tape:.9}", loss.to_scalar::<f32>()?);
    println!("gradient : candle {g_candle:?}");
    println!("           tape   {g_tape:?}");
    println!("candle backward vs tape: max abs diff {diff:e}");
    if g_candle.len() != TAPS || diff > TOLERANCE {
        return Err(format!("candle's gradient differs from the tape's by {diff:e} (allowed {TOLERANCE:e})").into());
    }
    if let Some(f) = model.median.last_forward() {
        println!("median forward ran : {f}");
    }
    if let Some(b) = model.median.last_backward() {
        print!("median backward ran: {b}");
    }

    // Training: candle's backward through both ops, candle's SGD on the Var.
    let mut sgd = SGD::new(vec![prefilter.clone()], LR)?;
    let mut losses = Vec::with_capacity(STEPS + 1);
    for step in 0..STEPS {
        let loss = model.loss(&xs, &prefilter, &ys)?;
        let l = loss.to_scalar::<f32>()?;
        sgd.backward_step(&loss)?;
        let k: Vec<String> = prefilter.as_tensor().to_vec1::<f32>()?.iter().map(|v| format!("{v:.3}")).collect();
        println!("  step {step}: loss {l:.6}   prefilter [{}]", k.join(", "));
        losses.push(l);
    }
    let last = model.loss(&xs, &prefilter, &ys)?.to_scalar::<f32>()?;
    println!("  after {STEPS} steps: loss {last:.6}");
    if last >= losses[0] {
        return Err(format!("training did not lower the loss: {} -> {last}", losses[0]).into());
    }
    Ok(())
}
