//! The whole story, as a user writes it: declare a sliding-window median the catalog lacks
//! (`median.rs`, with a fast CPU kernel of the user's own in `median_cpu.rs`), register it next
//! to the built-ins with no change to the engine, conform it on every backend here, show which
//! backend a default call runs on and why, gradcheck its declared backward, then train a
//! despiking pipeline through it and print the provenance of the run. Last, the same median as
//! a composite of two built-ins (`composite.rs`: `median_rows(unfold(x, w, 1))`), whose backward
//! the tape derives: same bits forward and backward, and its window buffer in the memory plan.
//!
//! ```text
//! cargo run --release --example windowed_median            # add `-- --json` for the provenance JSON
//! cargo run --example windowed_median -- --identity         # only the op's `name@version identity`
//! ```

mod composite;
mod median;
mod summary;

use op_runtime::cuda::CudaEngine;
use op_runtime::gradcheck;
use op_runtime::train::Sgd;
use op_runtime::train::{human_bytes, SharedDevice, Tape};
use op_runtime::wgpu::WgpuEngine;
use op_runtime::{BackendKind, DType, OpHandle, Registry, Scalar, Tensor};
use std::time::Instant;

/// Samples in the signal.
const N: usize = 1_000_000;
/// Median window.
const W: u32 = 7;
/// Taps of the trainable pre-filter.
const TAPS: usize = 5;
/// SGD steps and rate.
const STEPS: usize = 6;
const LR: f64 = 0.1;

/// A smooth signal and the same with one-sample spikes (about one sample in 40).
fn signal(n: usize) -> (Vec<f32>, Vec<f32>) {
    let clean: Vec<f32> = (0..n)
        .map(|i| {
            let t = i as f32;
            (t * 0.002).sin() + 0.5 * (t * 0.0131).sin() + 0.25 * (t * 0.00037).cos()
        })
        .collect();
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

fn energy(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum()
}

/// Prints the order default selection tries the backends in for `h`, why each one before the
/// chosen one is passed over and why the ones after it rank lower; returns the chosen backend's
/// name.
fn explain_default(registry: &Registry, h: &OpHandle) -> String {
    let op = h.op();
    let mut chosen: Option<String> = None;
    for b in registry.default_order_for(&op) {
        let kind = b.kind();
        let device = b.profile().map(|p| p.to_string()).unwrap_or_default();
        let why = match (b.supports(&op), b.availability()) {
            (Err(e), _) => format!("passed over: {e}"),
            (_, Err(e)) => format!("passed over: {e}"),
            _ if chosen.is_some() && b.is_software() => {
                format!("ranks below the host backends: its adapter is a software rasteriser on the CPU ({device})")
            }
            _ if chosen.is_some() => "ranks lower".to_string(),
            _ => {
                chosen = Some(kind.name().to_string());
                match kind.name() {
                    "cpu" => format!("CHOSEN: the op's own `cpu` kernel, natively on this CPU ({device})"),
                    _ => format!("CHOSEN: {device}"),
                }
            }
        };
        println!("  {:<9} {why}", kind.name());
    }
    chosen.unwrap_or_else(|| "none".to_string())
}

/// A call that names no backend: prints the order default selection tries (a GPU adapter that
/// is a software rasteriser, such as lavapipe/llvmpipe, ranks below the native CPU backend; an
/// explicit `CallOptions::on(BackendKind::Wgpu)` still reaches it), makes one such call and
/// checks that it ran where the order says.
fn default_call(registry: &Registry, median: &OpHandle) -> Result<BackendKind, Box<dyn std::error::Error>> {
    println!("\ndefault selection for {} (the order default calls try, and why):", median.id());
    let expected = explain_default(registry, median);
    let probe = Tensor::vector(signal(4096).1);
    let ran = median.call(&[&probe], &[Scalar::U32(W)])?.provenance;
    println!("  a default call ran on: {} ({})", ran.backend, ran.device);
    if ran.backend.name() != expected {
        return Err(format!("the default call ran on {}, default selection says {expected}", ran.backend).into());
    }
    Ok(ran.backend)
}

/// Where the pipeline trains: on the device of the GPU backend default selection chose for the
/// median (its tape keeps intermediates and gradients there), on host tensors otherwise.
/// `OP_EXAMPLE_DEVICE=host|wgpu|cuda` overrides the choice.
fn training_device(chosen: BackendKind) -> Result<Option<SharedDevice>, Box<dyn std::error::Error>> {
    let wanted = match std::env::var("OP_EXAMPLE_DEVICE").as_deref() {
        Ok("host") => return Ok(None),
        Ok("wgpu") => BackendKind::Wgpu,
        Ok("cuda") => BackendKind::Cuda,
        Ok(other) => return Err(format!("OP_EXAMPLE_DEVICE={other}: expected host, wgpu or cuda").into()),
        Err(_) => chosen,
    };
    Ok(match wanted {
        BackendKind::Wgpu => Some(WgpuEngine::shared()?),
        BackendKind::Cuda => Some(CudaEngine::shared()?),
        _ => None,
    })
}

/// Points `XDG_RUNTIME_DIR` at a private directory where it is unset or not a directory, before
/// anything starts a thread: the Vulkan loader's window-system layers (probed when wgpu looks
/// for adapters) print `error: XDG_RUNTIME_DIR is invalid or not set` on a headless machine.
#[cfg(unix)]
fn quiet_headless_vulkan() {
    use std::os::unix::fs::PermissionsExt;
    let valid = std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| std::path::Path::new(&d).is_dir());
    if valid {
        return;
    }
    let dir = std::env::temp_dir().join("op-xdg-runtime");
    let made = std::fs::create_dir_all(&dir).and_then(|()| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)));
    if made.is_ok() {
        std::env::set_var("XDG_RUNTIME_DIR", &dir);
    }
}

#[cfg(not(unix))]
fn quiet_headless_vulkan() {}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    quiet_headless_vulkan();
    let started = Instant::now();
    let registry = op_runtime::registry();
    let median = registry.register(&median::windowed_median::DECL)?;
    let op = median.op();
    if std::env::args().any(|a| a == "--identity") {
        // `name@version identity`, for scripts comparing it with `cargo op list --json`.
        println!("{} {}", op.id(), op.hash_hex());
        return Ok(());
    }
    println!("op       : {} ({:?} op, registered like any built-in)", op.id(), op.source());
    println!("identity : {}", op.hash_hex());

    // 1. Conformance on every backend compiled in: the kernel is trusted only as far as it
    //    matches the reference on engine-generated cases, the median on every instance. The
    //    pipeline below trains at f32: the built-ins it calls and the VJP kernels
    //    (`backward = vjp(rule, kernel(...), cpu(...))`, conformed against their rules) go
    //    through the same procedure at that instance (their own tests conform every instance);
    //    one table shows them all.
    println!("\nconformance (engine-generated cases, every backend compiled in):");
    let conv = registry.lookup("builtin/conv1d")?.at(&[DType::f32])?;
    let mse = registry.lookup("builtin/mse_loss")?.at(&[DType::f32])?;
    let mut conformance = summary::Summary::default();
    conformance.add(&median);
    conformance.add_instance(&conv);
    conformance.add_instance(&mse);
    for h in [&median.at(&[DType::f32])?, &conv, &mse] {
        if let Some(v) = h.vjp_op() {
            conformance.add_instance(&v);
        }
    }
    conformance.print();
    let receipts = std::mem::take(&mut conformance.receipts);

    // 2. Default selection: which backend a call that names none runs on, and why.
    let chosen = default_call(registry, &median)?;

    // 3. Gradcheck of the declared backward, with its negative control.
    println!();
    let report = gradcheck(&median::windowed_median::DECL)?;
    print!("{report}");

    // 4. A despiking pipeline: trainable pre-filter -> median -> loss against the clean signal.
    let (clean, noisy) = signal(N);
    let m = N - (TAPS - 1) - (W as usize - 1);
    let offset = (TAPS - 1) / 2 + (W as usize - 1) / 2;
    let target = clean[offset..offset + m].to_vec();
    let mut tape = Tape::new();
    tape.present_receipts(receipts);
    let device = training_device(chosen)?;
    tape.set_device(device)?;
    let x = tape.input("noisy", DType::f32, [N]);
    let kernel = tape.param("prefilter", Tensor::vector(vec![0.05f32, 0.1, 0.5, 0.1, 0.05]))?;
    let filtered = tape.apply1(&conv, &[x, kernel], &[])?;
    let despiked = tape.apply1(&median, &[filtered], &[Scalar::U32(W)])?;
    let y = tape.input("clean", DType::f32, [m]);
    let loss = tape.apply1(&mse, &[despiked, y], &[])?;
    tape.set_budget(Some(64 << 20));

    println!("\npipeline : conv1d(noisy, prefilter[{TAPS}]) -> windowed_median(w = {W}) -> mse_loss(., clean), {N} samples");
    print!("{}", tape.plan());

    // On a device the inputs are uploaded once; each step then moves only the parameters, the
    // loss and the parameters' gradients.
    let place = |t: Tensor| -> Result<Tensor, Box<dyn std::error::Error>> {
        Ok(match device {
            Some(d) => t.to_device(d)?,
            None => t,
        })
    };
    match device {
        Some(d) => println!("training on: {} (inputs uploaded once; intermediates and gradients stay there)", d.id()),
        None => println!("training on: host tensors (each call runs on the backend dispatch chooses)"),
    }
    let xs = place(Tensor::vector(noisy.clone()))?;
    let ys = place(Tensor::vector(target.clone()))?;
    let mut last = None;
    for step in 0..STEPS {
        let t0 = Instant::now();
        let moved = gpu_bytes();
        let mut run = tape.run(&[(x, &xs), (y, &ys)])?;
        let l = run.scalar(loss).ok_or("the loss was not computed")?;
        let grads = tape.backward(&mut run, loss)?;
        Sgd::new(LR).step(&mut tape, &grads)?;
        let k: Vec<String> =
            tape.param_value(kernel).and_then(|t| t.as_slice::<f32>()).unwrap_or_default().iter().map(|v| format!("{v:.3}")).collect();
        let crossed = gpu_bytes() - moved;
        println!(
            "  step {step}: loss {l:.6}   prefilter [{}]   ({} ms; host<->device bytes this step: {})",
            k.join(", "),
            t0.elapsed().as_millis(),
            human_bytes(crossed as usize)
        );
        last = Some(run);
    }
    let final_run = tape.run(&[(x, &xs), (y, &ys)])?;
    println!("  after {STEPS} steps: loss {:.6}", final_run.scalar(loss).ok_or("the loss was not computed")?);

    // 5. How much of the spikes' energy is gone.
    let out = final_run.value(despiked).ok_or("the despiked signal was not computed")?.to_host()?;
    let out = out.as_slice::<f32>().ok_or("the despiked signal is not f32")?;
    let spikes = energy(&noisy[offset..offset + m], &target);
    let residual = energy(out, &target);
    println!("\nspike energy   : {spikes:.1} in the input, {residual:.3} left after the trained pipeline");
    println!("removed        : {:.2}% of the spike energy", 100.0 * (1.0 - residual / spikes));

    // 6. Provenance of the last training run: the user op and the built-ins pinned alike.
    if let Some(run) = last {
        println!();
        print!("{}", run.provenance);
        let json = run.provenance.to_json();
        if std::env::args().any(|a| a == "--json") {
            println!("{json}");
        } else {
            println!("(serialised: {} of JSON; `-- --json` prints it)", human_bytes(json.len()));
        }
    }
    // 7. The first rung of the backward ladder: the median as a composite of built-ins.
    composite_story(&conv, &mse, &noisy, &target)?;

    println!("\ntotal {:.1} s", started.elapsed().as_secs_f64());
    println!("(tensor bytes between host and GPU per step count both engines' transfers: on a device only the parameters,");
    println!(" the loss's seed, the loss and the parameters' gradients cross; on host tensors every GPU call uploads its");
    println!(" inputs and reads its outputs back)");
    Ok(())
}

/// The pipeline `conv1d -> median -> mse_loss` on host tensors through `median` (a handle), and
/// the prefilter's variable, the loss and the despiked signal's variable.
fn median_pipeline(
    median: &OpHandle,
    conv: &OpHandle,
    mse: &OpHandle,
    m: usize,
) -> Result<(Tape, [op_runtime::Var; 5]), Box<dyn std::error::Error>> {
    let mut tape = Tape::new();
    let x = tape.input("noisy", DType::f32, [N]);
    let kernel = tape.param("prefilter", Tensor::vector(vec![0.05f32, 0.1, 0.5, 0.1, 0.05]))?;
    let filtered = tape.apply1(conv, &[x, kernel], &[])?;
    let despiked = tape.apply1(median, &[filtered], &[Scalar::U32(W)])?;
    let y = tape.input("clean", DType::f32, [m]);
    let loss = tape.apply1(mse, &[despiked, y], &[])?;
    Ok((tape, [x, y, kernel, despiked, loss]))
}

/// The same median declared as a composite of built-ins (`composite.rs`): gradchecked, its
/// graph's forward compared bit for bit with the hand-written median, its plan's window buffer
/// shown, its first gradient compared with the hand-written VJP's, then trained.
fn composite_story(conv: &OpHandle, mse: &OpHandle, noisy: &[f32], target: &[f32]) -> Result<(), Box<dyn std::error::Error>> {
    let registry = op_runtime::registry();
    let comp = registry.register(&composite::windowed_median_composite::DECL)?;
    let direct = registry.lookup("user/example/windowed_median")?;
    println!("\nthe same median as a composite: {} (backward = composite(windowed_median_graph))", comp.id());
    print!("{}", gradcheck(&composite::windowed_median_composite::DECL)?);

    // The graph's forward (unfold -> median_rows, each through dispatch) against the median.
    let mut g = Tape::new();
    let xv = g.input("x", DType::f32, [N]);
    let out = composite::windowed_median_graph(&mut g, &[xv], &[Scalar::U32(W)])?[0];
    let xs = Tensor::vector(noisy.to_vec());
    let run = g.run(&[(xv, &xs)])?;
    let by_graph = run.value(out).and_then(|t| t.as_slice::<f32>()).ok_or("the graph computed nothing")?;
    let by_median = median::windowed_median(noisy, W);
    let same = by_graph.len() == by_median.len() && by_graph.iter().zip(&by_median).all(|(a, b)| a.to_bits() == b.to_bits());
    let ran: Vec<String> = run.provenance.entries.iter().map(|e| format!("{} on {}", e.op, e.backend)).collect();
    println!("  graph forward ({}): {} outputs, bit-identical to the hand-written median: {same}", ran.join(", "), by_graph.len());
    if !same {
        return Err("the composite's graph disagrees with the hand-written median".into());
    }

    // Training through the composite: the plan shows the window buffer before anything runs.
    let m = target.len();
    let (mut tape, [x, y, kernel, _, loss]) = median_pipeline(&comp, conv, mse, m)?;
    let (hand, [hx, hy, hkernel, _, hloss]) = median_pipeline(&direct, conv, mse, m)?;
    tape.set_budget(Some(512 << 20));
    let plan = tape.plan();
    for e in plan.entries.iter().filter(|e| e.op == "builtin/unfold@1") {
        println!("  plan: {e}");
    }
    println!(
        "  plan total: {} (the hand-written median's pipeline: {})",
        human_bytes(plan.total_bytes),
        human_bytes(hand.plan().total_bytes)
    );
    let ys = Tensor::vector(target.to_vec());
    let grad_bits = |t: &Tape, run: &mut op_runtime::train::Run, loss, k| -> Result<Vec<u32>, Box<dyn std::error::Error>> {
        let g = t.backward(run, loss)?;
        Ok(g.get(k).and_then(|t| t.as_slice::<f32>()).ok_or("no prefilter gradient")?.iter().map(|v| v.to_bits()).collect())
    };
    let mut hrun = hand.run(&[(hx, &xs), (hy, &ys)])?;
    let hand_grad = grad_bits(&hand, &mut hrun, hloss, hkernel)?;
    let mut first = None;
    for step in 0..STEPS {
        let mut run = tape.run(&[(x, &xs), (y, &ys)])?;
        let l = run.scalar(loss).ok_or("the loss was not computed")?;
        let grads = tape.backward(&mut run, loss)?;
        if step == 0 {
            let bits: Vec<u32> =
                grads.get(kernel).and_then(|t| t.as_slice::<f32>()).ok_or("no prefilter gradient")?.iter().map(|v| v.to_bits()).collect();
            println!("  step 0 prefilter gradient bit-identical to the hand-written VJP's: {}", bits == hand_grad);
            if bits != hand_grad {
                return Err("the composite's gradient disagrees with the hand-written VJP".into());
            }
        }
        Sgd::new(LR).step(&mut tape, &grads)?;
        println!("  step {step}: loss {l:.6}");
        first.get_or_insert(l);
    }
    let after = tape.run(&[(x, &xs), (y, &ys)])?.scalar(loss).ok_or("the loss was not computed")?;
    println!("  after {STEPS} steps through the composite: loss {after:.6} (from {:.6})", first.unwrap_or(after));
    Ok(())
}

/// Tensor bytes moved between the host and a GPU so far, by the engines this process started
/// (wgpu's shared engine and CUDA's; one that is not available adds nothing).
fn gpu_bytes() -> u64 {
    let mut total = 0;
    if let Ok(e) = op_runtime::wgpu::WgpuEngine::shared() {
        total += e.transfers().tensor_bytes();
    }
    if let Ok(e) = op_runtime::cuda::CudaEngine::shared() {
        total += e.transfers().tensor_bytes();
    }
    total
}
