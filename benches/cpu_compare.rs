//! The built-ins' and the example median's `cpu` kernels against what a user would call instead
//! from Python, on the same data: numpy (OpenBLAS for matmul), scipy, bottleneck; and against the
//! physical limit, a plain copy. Our side runs through dispatch on a one-thread CPU backend; the
//! Python side is `scripts/compare_worker.py`, driven over a pipe. Both sides are timed in thread
//! CPU time (system time included: page faults count), the result freed inside the timing, round
//! by round, interleaved, and reported as medians; ratios are theirs / ours (above 1: we are
//! faster). Multi-threaded matmul lines compare wall time against OpenBLAS on as many threads.
//!
//! Run: `cargo bench --bench cpu_compare [filter words]` (e.g. `matmul`, `16M`, `median`).
//! `PYTHON` names the interpreter (default `python3`); without it, or without numpy, the bench
//! prints why and skips the comparison (our side alone is still timed). `CMP_ROUNDS` (default 7)
//! rounds of about `CMP_ROUND_SECS` (default 0.2) seconds per side.

#[path = "../examples/windowed_median/median.rs"]
mod median;
#[allow(dead_code)] // the other benches use the rest
mod timing;

use op_runtime::backend::{CpuBackend, ReferenceBackend};
use op_runtime::{builtins, BackendKind, DType, OpHandle, Registry, Scalar, Tensor};
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

/// The calling thread's CPU time in seconds (user and system).
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec; CLOCK_THREAD_CPUTIME_ID exists on every Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).filter(|v: &f64| *v > 0.0).unwrap_or(default)
}

/// The Python worker: one process, one pipe each way.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    banner: String,
}

impl Worker {
    /// Starts the worker with BLAS on `threads` threads; `Err` says why there is none.
    fn start(threads: usize) -> Result<Worker, String> {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/compare_worker.py");
        let t = threads.to_string();
        let mut child = Command::new(&python)
            .arg(&script)
            .env("OPENBLAS_NUM_THREADS", &t)
            .env("OMP_NUM_THREADS", &t)
            .env("MKL_NUM_THREADS", &t)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start `{python}`: {e}"))?;
        let (stdin, stdout) = (child.stdin.take().ok_or("no stdin")?, child.stdout.take().ok_or("no stdout")?);
        let mut w = Worker { child, stdin, stdout: BufReader::new(stdout), banner: String::new() };
        let first = w.line()?;
        match first.strip_prefix("ready ") {
            Some(b) => w.banner = b.to_string(),
            None => return Err(format!("`{python}`: {first}")),
        }
        Ok(w)
    }

    fn line(&mut self) -> Result<String, String> {
        let mut s = String::new();
        self.stdout.read_line(&mut s).map_err(|e| format!("worker: {e}"))?;
        if s.is_empty() {
            return Err("the worker exited".into());
        }
        Ok(s.trim().to_string())
    }

    fn ask(&mut self, req: &str) -> Result<String, String> {
        writeln!(self.stdin, "{req}").and_then(|_| self.stdin.flush()).map_err(|e| format!("worker: {e}"))?;
        let r = self.line()?;
        match r.strip_prefix("error ") {
            Some(e) => Err(format!("worker ({req}): {e}")),
            None => Ok(r),
        }
    }

    fn run(&mut self, imp: &str, op: &str, reps: usize, args: &[String]) -> Result<Vec<f64>, String> {
        let r = self.ask(&format!("run {imp} {op} {reps} {}", args.join(" ")))?;
        r.split_whitespace().map(|t| t.parse::<f64>().map_err(|e| format!("worker time `{t}`: {e}"))).collect()
    }

    fn save(&mut self, imp: &str, op: &str, path: &Path, args: &[String]) -> Result<Vec<f64>, String> {
        self.ask(&format!("save {imp} {op} {} {}", path.display(), args.join(" ")))?;
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

/// The inputs, shared by both sides (written to `dir` for the worker).
struct Inputs {
    dir: tempfile::TempDir,
    tensors: Vec<(String, Tensor)>,
}

impl Inputs {
    fn get(&self, name: &str) -> &Tensor {
        &self.tensors.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("input `{name}`")).1
    }
    /// Writes every input raw (little-endian) and has `w` load it.
    fn send(&self, w: &mut Worker) -> Result<(), String> {
        for (name, t) in &self.tensors {
            let path = self.dir.path().join(name);
            if !path.exists() {
                std::fs::write(&path, t.data().to_le_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            let dims: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
            let dtype = match t.dtype() {
                DType::f64 => "float64",
                _ => "float32",
            };
            w.ask(&format!("load {name} {} {dtype} {}", path.display(), dims.join(" ")))?;
        }
        Ok(())
    }
}

/// `n` values uniform in `[lo, hi)` from a fixed LCG.
fn values(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn inputs() -> Inputs {
    const M: usize = 1 << 20;
    const BIG: usize = 16 << 20;
    let vec32 = |n: usize, lo, hi, seed| Tensor::vector(values(n, lo, hi, seed).into_iter().map(|v| v as f32).collect::<Vec<f32>>());
    // The example's signal: smooth plus noise.
    let signal = |n: usize| {
        let noise = values(n, -0.5, 0.5, 9);
        Tensor::vector((0..n).map(|i| ((i as f64 * 0.002).sin() + noise[i]) as f32).collect::<Vec<f32>>())
    };
    let mut tensors = vec![
        ("x".to_string(), vec32(M, -1.0, 1.0, 1)),
        ("y".to_string(), vec32(M, -1.0, 1.0, 2)),
        ("wide".to_string(), vec32(M, -20.0, 20.0, 3)),
        ("pos".to_string(), vec32(M, 1e-3, 100.0, 4)),
        ("taps".to_string(), vec32(64, -1.0, 1.0, 7)),
        ("wide16m".to_string(), vec32(BIG, -20.0, 20.0, 8)),
        ("x16m".to_string(), vec32(BIG, -1.0, 1.0, 12)),
        ("y16m".to_string(), vec32(BIG, -1.0, 1.0, 13)),
        ("pos16m".to_string(), vec32(BIG, 1e-3, 100.0, 14)),
        ("sig".to_string(), signal(M)),
        ("sig16m".to_string(), signal(BIG)),
    ];
    for n in [256usize, 512, 1024, 2048] {
        for (d, tag) in [(DType::f32, "f32"), (DType::f64, "f64")] {
            for (side, seed) in [("a", 10), ("b", 11)] {
                let t = Tensor::from_f64(d, vec![n, n], &values(n * n, -1.0, 1.0, seed + n as u64)).expect("a matrix");
                tensors.push((format!("{side}{n}{tag}"), t));
            }
        }
    }
    Inputs { dir: tempfile::tempdir().expect("a temporary directory"), tensors }
}

/// One comparison line.
struct Line {
    /// The op (`builtin/<op>`, or the example's median for `median`).
    op: &'static str,
    /// What the line computes, for the table and the filter.
    label: String,
    /// Input names (ours and the worker's), then literal worker arguments.
    inputs: Vec<&'static str>,
    params: Vec<Scalar>,
    worker_args: Vec<String>,
    /// Python implementations timed against ours.
    rivals: Vec<&'static str>,
    /// Bytes the op must move (inputs read plus outputs written), for the bandwidth table.
    bytes: Option<f64>,
}

fn lines() -> Vec<Line> {
    let names = |v: &[&'static str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let plain = |op: &'static str, label: &str, inputs: Vec<&'static str>| Line {
        op,
        label: label.to_string(),
        worker_args: names(&inputs),
        inputs,
        params: vec![],
        rivals: vec!["numpy"],
        bytes: None,
    };
    let mut v = vec![
        plain("add", "add n=1M", vec!["x", "y"]),
        plain("sub", "sub n=1M", vec!["x", "y"]),
        plain("mul", "mul n=1M", vec!["x", "y"]),
        plain("div", "div n=1M", vec!["x", "y"]),
        plain("neg", "neg n=1M", vec!["x"]),
        Line { params: vec![Scalar::F32(1.7)], worker_args: names(&["x", "1.7"]), ..plain("scale", "scale n=1M", vec!["x"]) },
        plain("exp", "exp n=1M", vec!["wide"]),
        plain("log", "log n=1M", vec!["pos"]),
        plain("tanh", "tanh n=1M", vec!["wide"]),
        plain("relu", "relu n=1M", vec!["x"]),
        plain("abs", "abs n=1M", vec!["x"]),
        plain("sqrt", "sqrt n=1M", vec!["pos"]),
        plain("square", "square n=1M", vec!["x"]),
        Line { rivals: vec!["numpy", "scipy"], ..plain("sigmoid", "sigmoid n=1M", vec!["wide"]) },
        plain("maximum", "maximum n=1M", vec!["x", "y"]),
        plain("minimum", "minimum n=1M", vec!["x", "y"]),
        plain("sum", "sum n=1M", vec!["x"]),
        plain("mean", "mean n=1M", vec!["x"]),
        plain("mse_loss", "mse_loss n=1M", vec!["x", "y"]),
        Line { rivals: vec!["numpy", "scipy"], ..plain("conv1d", "conv1d n=1M m=64", vec!["x", "taps"]) },
        Line { bytes: Some(2.0 * 4.0 * (16 << 20) as f64), ..plain("exp", "exp n=16M", vec!["wide16m"]) },
        Line { bytes: Some(2.0 * 4.0 * (16 << 20) as f64), ..plain("tanh", "tanh n=16M", vec!["wide16m"]) },
    ];
    // Every other elementwise built-in at 16M (issue 37): inputs read plus the output written.
    let (unary, binary) = (Some(2.0 * 4.0 * (16 << 20) as f64), Some(3.0 * 4.0 * (16 << 20) as f64));
    for op in ["add", "sub", "mul", "div"] {
        v.push(Line { bytes: binary, ..plain(op, &format!("{op} n=16M"), vec!["x16m", "y16m"]) });
    }
    v.push(Line { bytes: unary, ..plain("neg", "neg n=16M", vec!["x16m"]) });
    v.push(Line {
        bytes: unary,
        params: vec![Scalar::F32(1.7)],
        worker_args: names(&["x16m", "1.7"]),
        ..plain("scale", "scale n=16M", vec!["x16m"])
    });
    v.push(Line { bytes: unary, ..plain("log", "log n=16M", vec!["pos16m"]) });
    v.push(Line { bytes: unary, ..plain("relu", "relu n=16M", vec!["x16m"]) });
    for (op, input) in [("abs", "x16m"), ("sqrt", "pos16m"), ("square", "x16m")] {
        v.push(Line { bytes: unary, ..plain(op, &format!("{op} n=16M"), vec![input]) });
    }
    v.push(Line { bytes: unary, rivals: vec!["numpy", "scipy"], ..plain("sigmoid", "sigmoid n=16M", vec!["wide16m"]) });
    for op in ["maximum", "minimum"] {
        v.push(Line { bytes: binary, ..plain(op, &format!("{op} n=16M"), vec!["x16m", "y16m"]) });
    }
    for (w, n, name, tag) in [(7u32, 1usize << 20, "sig", "1M"), (31, 1 << 20, "sig", "1M"), (7, 16 << 20, "sig16m", "16M")] {
        v.push(Line {
            op: "median",
            label: format!("median n={tag} w={w}"),
            inputs: vec![name],
            params: vec![Scalar::U32(w)],
            worker_args: vec![name.to_string(), w.to_string()],
            rivals: if n > 1 << 20 { vec!["bottleneck"] } else { vec!["bottleneck", "scipy"] },
            bytes: Some(4.0 * (2 * n - w as usize + 1) as f64),
        });
    }
    for tag in ["f32", "f64"] {
        for n in [256usize, 512, 1024, 2048] {
            let (a, b): (&'static str, &'static str) = (leak(format!("a{n}{tag}")), leak(format!("b{n}{tag}")));
            v.push(plain("matmul", &format!("matmul {tag} {n}^3"), vec![a, b]));
        }
    }
    v
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Registries of the built-ins and the example median on a CPU backend of `threads` threads
/// (0: all) and the reference.
fn registry(threads: usize) -> (Registry, OpHandle) {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::with_threads(threads)), Arc::new(ReferenceBackend::default())]);
    builtins::register_all(&r);
    let m = r.register(&median::windowed_median::DECL).expect("the median registers");
    (r, m)
}

fn handle(reg: &(Registry, OpHandle), op: &str) -> OpHandle {
    if op == "median" {
        reg.1.clone()
    } else {
        reg.0.lookup(&format!("builtin/{op}")).expect("a built-in")
    }
}

/// Max |ours - theirs| over max |theirs| (0 when identical), or why they cannot be compared.
fn difference(ours: &Tensor, theirs: &[f64]) -> String {
    let o = ours.data().to_f64_vec().unwrap_or_default();
    if o.len() != theirs.len() {
        return format!("{} vs {} elements", o.len(), theirs.len());
    }
    if o.iter().zip(theirs).all(|(a, b)| a.to_bits() == b.to_bits()) {
        return "identical".into();
    }
    let scale = theirs.iter().fold(0f64, |m, v| m.max(v.abs())).max(f64::MIN_POSITIVE);
    let d = o.iter().zip(theirs).fold(0f64, |m, (a, b)| m.max((a - b).abs()));
    format!("{:.1e}", d / scale)
}

struct Timed {
    ours: f64,
    theirs: Vec<(String, f64, String)>,
}

/// Times `line` on one thread: ours through dispatch and each rival, `rounds` interleaved rounds.
fn race(line: &Line, inputs: &Inputs, one: &(Registry, OpHandle), worker: Option<&mut Worker>, rounds: usize, secs: f64) -> Timed {
    let h = handle(one, line.op);
    let refs: Vec<&Tensor> = line.inputs.iter().map(|n| inputs.get(n)).collect();
    let call = || h.call(&refs, &line.params).expect("the call runs");
    let first = call();
    assert_eq!(first.provenance.backend, BackendKind::Cpu, "{}: default selection runs the cpu kernel", line.label);
    let ours_out = first.outputs[0].clone();
    drop(first);
    let time_ours = || {
        let t = thread_cpu();
        drop(black_box(call()));
        thread_cpu() - t
    };
    let per = ((secs / time_ours().max(1e-7)) as usize).clamp(1, 50);
    let mut theirs: Vec<(String, Vec<f64>, String, usize)> = Vec::new();
    let mut worker = worker;
    if let Some(w) = worker.as_deref_mut() {
        for r in &line.rivals {
            let path = inputs.dir.path().join("result");
            let diff = match w.save(r, line.op, &path, &line.worker_args) {
                Ok(v) => difference(&ours_out, &v),
                Err(e) => {
                    println!("  {}: {r} skipped: {e}", line.label);
                    continue;
                }
            };
            let t = w.run(r, line.op, 1, &line.worker_args).map(|v| v[0]).unwrap_or(1.0);
            theirs.push((r.to_string(), Vec::new(), diff, ((secs / t.max(1e-7)) as usize).clamp(1, 50)));
        }
    }
    let mut ours = Vec::new();
    for _ in 0..rounds {
        ours.extend((0..per).map(|_| time_ours()));
        if let Some(w) = worker.as_deref_mut() {
            for (r, v, _, reps) in theirs.iter_mut() {
                v.extend(w.run(r, line.op, *reps, &line.worker_args).unwrap_or_else(|e| panic!("{}: {e}", line.label)));
            }
        }
    }
    Timed { ours: median(&ours), theirs: theirs.into_iter().map(|(r, v, d, _)| (r, median(&v), d)).collect() }
}

/// The physical limit: a plain copy of the 16M input into a buffer already mapped, thread CPU
/// time, ours (`copy_from_slice`) and numpy's (`np.copyto`), interleaved.
fn copy_limit(inputs: &Inputs, worker: Option<&mut Worker>, rounds: usize) -> (f64, Option<f64>) {
    let src = inputs.get("wide16m").as_slice::<f32>().expect("f32");
    let mut dst = vec![1f32; src.len()];
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let mut worker = worker;
    let args = vec!["wide16m".to_string(), "dst16m".to_string()];
    for _ in 0..rounds {
        for _ in 0..5 {
            let t = thread_cpu();
            dst.copy_from_slice(black_box(src));
            ours.push(thread_cpu() - t);
            black_box(&dst);
        }
        if let Some(w) = worker.as_deref_mut() {
            theirs.extend(w.run("numpy", "copy", 5, &args).unwrap_or_default());
        }
    }
    (median(&ours), (!theirs.is_empty()).then(|| median(&theirs)))
}

/// Multi-threaded matmul: ours on all threads and on one (wall time), OpenBLAS on as many.
fn scaling(inputs: &Inputs, threads: usize, worker: Option<&mut Worker>, rounds: usize) {
    let (one, all) = (registry(1), registry(0));
    let mut worker = worker;
    for (tag, n) in [("f32", 1024usize), ("f64", 1024), ("f32", 2048)] {
        let (a, b) = (format!("a{n}{tag}"), format!("b{n}{tag}"));
        let refs = [inputs.get(&a), inputs.get(&b)];
        let wall = |reg: &(Registry, OpHandle)| {
            let h = handle(reg, "matmul");
            let t = Instant::now();
            drop(black_box(h.call(&refs, &[]).expect("runs")));
            t.elapsed().as_secs_f64()
        };
        wall(&one);
        wall(&all);
        let (mut v1, mut vn, mut vb) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            v1.push(wall(&one));
            vn.push(wall(&all));
            if let Some(w) = worker.as_deref_mut() {
                vb.extend(w.run("numpy", "matmul", 1, &[a.clone(), b.clone()]).unwrap_or_default());
            }
        }
        let (t1, tn) = (median(&v1), median(&vn));
        let flops = 2.0 * (n * n * n) as f64;
        let blas = if vb.is_empty() {
            String::new()
        } else {
            let tb = median(&vb);
            format!("   OpenBLAS {threads} thr {:>9} ({:5.1} GFLOP/s)   ratio {:.2}x", timing::fmt(tb), flops / tb / 1e9, tb / tn)
        };
        println!(
            "matmul {tag} {n}^3 wall: ours 1 thr {:>9}  {threads} thr {:>9} ({:5.1} GFLOP/s, scaling {:.2}x){blas}",
            timing::fmt(t1),
            timing::fmt(tn),
            flops / tn / 1e9,
            t1 / tn
        );
    }
}

fn main() {
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let wanted = |label: &str| filters.is_empty() || filters.iter().any(|f| label.contains(f.as_str()));
    let rounds = env_f64("CMP_ROUNDS", 7.0) as usize;
    let secs = env_f64("CMP_ROUND_SECS", 0.2);
    let threads = CpuBackend::default().threads();
    println!("cpu_compare: {}; {rounds} rounds", timing::machine());
    println!(
        "transparent huge pages: {}",
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default().trim()
    );
    let inputs = inputs();
    let mut worker = match Worker::start(1).and_then(|mut w| inputs.send(&mut w).map(|_| w)) {
        Ok(w) => {
            println!("python: {}", w.banner);
            Some(w)
        }
        Err(e) => {
            println!("skipped the comparison with numpy/scipy/bottleneck: {e}");
            None
        }
    };
    if let Some(w) = worker.as_mut() {
        let dst = inputs.dir.path().join("dst16m");
        std::fs::write(&dst, vec![0u8; 4 << 24]).expect("the copy destination");
        w.ask(&format!("load dst16m {} float32 {}", dst.display(), 16 << 20)).expect("the worker loads the destination");
    }
    let one = registry(1);
    let (copy, np_copy) = copy_limit(&inputs, worker.as_mut(), rounds);
    let copy_bw = 2.0 * 4.0 * (16 << 20) as f64 / copy;
    println!(
        "copy n=16M f32 (into a mapped buffer): ours {} = {:.1} GB/s{}",
        timing::fmt(copy),
        copy_bw / 1e9,
        np_copy.map(|t| format!(", numpy {} = {:.1} GB/s", timing::fmt(t), 2.0 * 4.0 * (16 << 20) as f64 / t / 1e9)).unwrap_or_default()
    );
    println!("{:<22} {:>10}   rivals: time, ratio theirs/ours, max |ours - theirs| / max |theirs|", "line", "ours");
    let mut bandwidth = Vec::new();
    let mut matmul_times = Vec::new();
    for line in lines().iter().filter(|l| wanted(&l.label)) {
        let t = race(line, &inputs, &one, worker.as_mut(), rounds, secs);
        let rivals: Vec<String> =
            t.theirs.iter().map(|(r, tt, d)| format!("{r} {:>9} {:>6.2}x  diff {d}", timing::fmt(*tt), tt / t.ours)).collect();
        println!("{:<22} {:>10}   {}", line.label, timing::fmt(t.ours), rivals.join("   "));
        if let Some(b) = line.bytes {
            bandwidth.push((line.label.clone(), b / t.ours, t.theirs.first().map(|(r, tt, _)| (r.clone(), b / tt))));
        }
        if line.op == "matmul" {
            matmul_times.push((line.label.clone(), t.ours));
        }
    }
    for (label, bw, rival) in &bandwidth {
        let r = rival.as_ref().map(|(r, b)| format!(", {r} {:.1} GB/s = {:.0}%", b / 1e9, 100.0 * b / copy_bw)).unwrap_or_default();
        println!(
            "bandwidth {label}: ours {:.1} GB/s of CPU time = {:.0}% of the copy's {:.1} GB/s{r}",
            bw / 1e9,
            100.0 * bw / copy_bw,
            copy_bw / 1e9
        );
    }
    for (f32_label, t32) in matmul_times.iter().filter(|(l, _)| l.contains("f32")) {
        if let Some((_, t64)) = matmul_times.iter().find(|(l, _)| *l == f32_label.replace("f32", "f64")) {
            println!("{}: f64 / f32 time {:.2}x", f32_label.replace("f32 ", ""), t64 / t32);
        }
    }
    if wanted("matmul scaling") && threads > 1 {
        let mut blas = match Worker::start(threads).and_then(|mut w| inputs.send(&mut w).map(|_| w)) {
            Ok(w) => Some(w),
            Err(e) => {
                println!("no multi-threaded OpenBLAS to compare with: {e}");
                None
            }
        };
        scaling(&inputs, threads, blas.as_mut(), rounds);
    }
}
