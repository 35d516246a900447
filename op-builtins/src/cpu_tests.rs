//! Unit tests of the built-ins' `cpu` kernels, run the way dispatch runs them (on the calling
//! thread, chunks on a backend pool of 1, 2 or 3 threads) and on every instruction set this CPU
//! has (forced with `with_isa_override`): exact ops bit-identical to the reference, the
//! transcendentals within 2 ulp with exact specials, reductions and contractions within their
//! `accum` bound by the conformance engine's own checker and bit-identical for any thread count.
//! Sizes are capped for debug builds on two cores; the exhaustive transcendental sweep is an
//! ignored test (see [`exhaustive_transcendentals`] for the command).

use crate as builtins;
use op_backends::cpu::kernels::{conv1d, elementwise as ew, matmul, pointwise as pw, reduce};
use op_backends::cpu::par::run_in;
use op_backends::cpu::simd::{with_isa_override, Isa};
use op_backends::{CpuBackend, ReferenceBackend};
use op_contract::sample::Rng;
use op_core::decl::OpDecl;
use op_core::kind::BackendKind;
use op_core::registry::{OpHandle, Registry};
use op_core::tensor::Tensor;
use op_verify::conformance::{self, cases, Case, Pattern};
use std::mem::MaybeUninit;
use std::sync::{Arc, OnceLock};

/// Runs `f` as dispatch runs a kernel: on this thread, forced onto `isa`, with a backend pool
/// of `threads` threads for its chunks.
fn on<R>(isa: Isa, threads: usize, f: impl FnOnce() -> R) -> R {
    static POOLS: OnceLock<Vec<Arc<rayon::ThreadPool>>> = OnceLock::new();
    let pools =
        POOLS.get_or_init(|| (1..=3).map(|t| Arc::new(rayon::ThreadPoolBuilder::new().num_threads(t).build().expect("a pool"))).collect());
    with_isa_override(isa, || run_in(&pools[threads - 1], f)).expect("an instruction set this CPU has")
}

/// `out` as the elementwise kernels take it. Sound: they store only initialised floats.
fn uninit(out: &mut [f32]) -> &mut [MaybeUninit<f32>] {
    // SAFETY: same layout; nothing uninitialised is ever written through the result.
    unsafe { &mut *(out as *mut [f32] as *mut [MaybeUninit<f32>]) }
}

/// Every (instruction set, threads) pair the exact and reduction tests cover.
fn configs(threads: &[usize]) -> Vec<(Isa, usize)> {
    Isa::available().into_iter().flat_map(|i| threads.iter().map(move |t| (i, *t))).collect()
}

/// Edge values: zeros of both signs, infinities, extremes, subnormals, NaNs of both signs with
/// quiet and signalling payloads, and a few ordinary values.
fn specials() -> Vec<f32> {
    let mut v = vec![0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1.0 / 3.0, 7.0, 1e-30, -2.5e38];
    v.extend([f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, f32::MIN_POSITIVE, -f32::MIN_POSITIVE]);
    v.extend([1e-45, -1e-45, 1.175_494_2e-38, -5e-40]);
    v.extend([0x7fc0_0000u32, 0xffc0_0000, 0x7f80_0001, 0xff80_0001, 0x7fff_ffff, 0xffd2_3456].map(f32::from_bits));
    v
}

/// `n` random bit patterns (every class, NaN included).
fn bits(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| f32::from_bits(rng.next_u64() as u32)).collect()
}

/// `n` values uniform in `[lo, hi)`.
fn uniform(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<f32> {
    (0..n).map(|_| rng.uniform(lo, hi) as f32).collect()
}

/// Bits equal, or both NaN where `nan_any` (a binary op of two NaNs may return either payload).
fn same(got: &[f32], want: &[f32], nan_any: bool) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("length {} vs {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits() && !(nan_any && g.is_nan() && w.is_nan())) {
        None => Ok(()),
        Some(i) => {
            Err(format!("index {i}: got {:e} ({:#010x}), want {:e} ({:#010x})", got[i], got[i].to_bits(), want[i], want[i].to_bits()))
        }
    }
}

type Bin = fn(&[f32], &[f32], &mut [MaybeUninit<f32>]);
type BinRef = fn(&[f32], &[f32]) -> Vec<f32>;
type Un = fn(&[f32], &mut [MaybeUninit<f32>]);
type UnRef = fn(&[f32]) -> Vec<f32>;
type Scalar1 = fn(f32) -> f32;

const BINS: [(&str, Bin, BinRef); 4] = [
    ("add", ew::add, builtins::add::<f32>),
    ("sub", ew::sub, builtins::sub::<f32>),
    ("mul", ew::mul, builtins::mul::<f32>),
    ("div", ew::div, builtins::div::<f32>),
];
const EXACT_UNS: [(&str, Un, UnRef); 5] = [
    ("neg", ew::neg, builtins::neg::<f32>),
    ("relu", ew::relu, builtins::relu::<f32>),
    ("abs", pw::abs, builtins::abs::<f32>),
    ("sqrt", pw::sqrt, builtins::sqrt::<f32>),
    ("square", pw::square, builtins::square::<f32>),
];
/// Selections: bit-identical, NaN payloads included (the NaN operand itself is the result).
const SELECTS: [(&str, Bin, BinRef); 2] =
    [("maximum", pw::maximum, builtins::maximum::<f32>), ("minimum", pw::minimum, builtins::minimum::<f32>)];
/// tanh's reference is f64's tanh rounded once (the correctly rounded value but for rare
/// ties): `f32::tanh` (the platform's `tanhf`) is itself up to 2 ulp off (glibc, at 0.2045).
const TRANSCENDENTALS: [(&str, Un, Scalar1); 3] =
    [("exp", ew::exp, f32::exp), ("log", ew::log, f32::ln), ("tanh", ew::tanh, |x| (x as f64).tanh() as f32)];

/// Lengths around vector widths and chunk boundaries (`GRAIN` splits in two and three).
fn lengths() -> Vec<usize> {
    let mut v: Vec<usize> = (0..=34).collect();
    v.extend([ew::GRAIN - 1, 2 * ew::GRAIN + 17, 3 * ew::GRAIN + 1]);
    v
}

#[test]
fn exact_elementwise_kernels_are_bit_identical_to_the_reference_on_every_isa_and_thread_count() {
    let mut rng = Rng::new(11);
    let sp = specials();
    // Every pair of edge values, then random bit patterns at every length.
    let pairs: (Vec<f32>, Vec<f32>) = sp.iter().flat_map(|x| sp.iter().map(move |y| (*x, *y))).unzip();
    let mut cases = vec![pairs];
    cases.extend(lengths().into_iter().map(|n| (bits(&mut rng, n), bits(&mut rng, n))));
    for (isa, t) in configs(&[1, 2]) {
        for (a, b) in &cases {
            let mut got = vec![f32::from_bits(0x7fa5_a5a5); a.len()];
            for (name, k, reference) in BINS {
                on(isa, t, || k(a, b, uninit(&mut got)));
                same(&got, &reference(a, b), true).unwrap_or_else(|e| panic!("{name} {isa:?} {t} threads n={}: {e}", a.len()));
            }
            for (name, k, reference) in EXACT_UNS {
                on(isa, t, || k(a, uninit(&mut got)));
                same(&got, &reference(a), false).unwrap_or_else(|e| panic!("{name} {isa:?} {t} threads n={}: {e}", a.len()));
            }
            for (name, k, reference) in SELECTS {
                on(isa, t, || k(a, b, uninit(&mut got)));
                same(&got, &reference(a, b), false).unwrap_or_else(|e| panic!("{name} {isa:?} {t} threads n={}: {e}", a.len()));
            }
            for s in [1.7f32, -0.0, f32::INFINITY, f32::from_bits(0xffc0_0001), 1e-40] {
                on(isa, t, || ew::scale(a, s, uninit(&mut got)));
                same(&got, &builtins::scale::<f32>(a, s), true).unwrap_or_else(|e| panic!("scale by {s:e} {isa:?} {t} threads: {e}"));
            }
        }
    }
}

#[test]
fn relu_keeps_nan_payloads_and_maps_negative_zero_to_positive_zero() {
    let x = [-0.0f32, 0.0, f32::from_bits(0x7fc0_0001), f32::from_bits(0xff80_0001), -1.0, 1e-45, -1e-45];
    for isa in Isa::available() {
        let mut got = [1f32; 7];
        on(isa, 1, || ew::relu(&x, uninit(&mut got)));
        let want = [0.0f32, 0.0, x[2], x[3], 0.0, 1e-45, 0.0];
        same(&got, &want, false).unwrap_or_else(|e| panic!("{isa:?}: {e}"));
    }
}

/// The largest ulp distance of `k` from `reference` over every `step`-th f32 bit pattern, and
/// every `special_step`-th in the special ranges (subnormals, the exponent ends, NaN and
/// infinities of both signs); `u64::MAX` for a special-value mismatch. Returns (ulps, input).
fn sweep(isa: Isa, k: Un, reference: Scalar1, step: u64, special_step: u64) -> (u64, u32) {
    let mut worst = (0u64, 0u32);
    let mut xs = Vec::with_capacity(1 << 16);
    let mut got = vec![0f32; 1 << 16];
    for hi in 0..(1u64 << 16) {
        let special = matches!(hi & 0x7fff, 0..=0x80 | 0x7f80..);
        xs.clear();
        xs.extend(
            (0..(1u64 << 16))
                .step_by(if special { special_step } else { step } as usize)
                .map(|lo| f32::from_bits(((hi << 16) | lo) as u32)),
        );
        let got = &mut got[..xs.len()];
        on(isa, 1, || k(&xs, uninit(got)));
        for (x, a) in xs.iter().zip(got.iter()) {
            let e = reference(*x);
            let d =
                if a.to_bits() == e.to_bits() || (a.is_nan() && e.is_nan()) || (*a == 0.0 && e == 0.0) || (e.is_subnormal() && *a == 0.0) {
                    0
                } else if a.is_nan() || e.is_nan() || a.is_infinite() || e.is_infinite() || a.is_sign_negative() != e.is_sign_negative() {
                    u64::MAX
                } else {
                    (a.to_bits() as i64 - e.to_bits() as i64).unsigned_abs()
                };
            if d > worst.0 {
                worst = (d, x.to_bits());
            }
        }
    }
    worst
}

#[test]
fn transcendentals_are_within_2_ulp_of_std_with_exact_specials_on_every_isa() {
    // A sample (every 100_003rd pattern, every 1021st in the special ranges): the debug-build
    // share of the exhaustive sweep below.
    for isa in Isa::available() {
        for (name, k, reference) in TRANSCENDENTALS {
            let (u, x) = sweep(isa, k, reference, 100_003, 1021);
            assert!(u <= 2, "{name} {isa:?}: {u} ulp at {:e} ({x:#010x})", f32::from_bits(x));
        }
    }
    // Thread count and chunking change nothing.
    let mut rng = Rng::new(12);
    let x = uniform(&mut rng, 2 * ew::GRAIN + 5, -90.0, 90.0);
    for (name, k, _) in TRANSCENDENTALS {
        let results: Vec<Vec<f32>> = configs(&[1, 2])
            .into_iter()
            .filter(|(i, _)| *i == Isa::detect())
            .map(|(i, t)| {
                let mut o = vec![0f32; x.len()];
                on(i, t, || k(&x, uninit(&mut o)));
                o
            })
            .collect();
        same(&results[0], &results[1], false).unwrap_or_else(|e| panic!("{name}: 1 vs 2 threads: {e}"));
    }
}

#[test]
fn sigmoid_is_within_3_ulp_of_the_reference_on_every_isa() {
    // exp within 1 ulp of `f32::exp`; `1 + e` may round that one ulp into two of `e` (at a tie):
    // the quotient within 3.
    // Every 4099th bit pattern (both signs, every exponent), the specials, and the saturating
    // ends: 1 / (1 + inf) = 0 and 1 / (1 + 0) = 1.
    let mut x: Vec<f32> = (0..u32::MAX / 4099).map(|i| f32::from_bits(i * 4099)).collect();
    x.extend(specials());
    x.extend([-88.7f32, -89.0, -104.0, 17.0, 88.8, 104.0]);
    let want = builtins::sigmoid::<f32>(&x);
    for isa in Isa::available() {
        let mut got = vec![0f32; x.len()];
        on(isa, 1, || pw::sigmoid(&x, uninit(&mut got)));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let ulps = if g.is_nan() || w.is_nan() {
                if g.is_nan() == w.is_nan() {
                    0
                } else {
                    u32::MAX
                }
            } else {
                g.to_bits().abs_diff(w.to_bits())
            };
            assert!(ulps <= 3, "{isa:?}: sigmoid({:e}) = {g:e}, reference {w:e} ({ulps} ulp)", x[i]);
        }
    }
}

/// Every f32 input of exp, ln and tanh on every instruction set: at most 2 ulp from std (exp
/// and ln: 1), specials exact. Minutes in release (`OP_SWEEP_ONLY=tanh` sweeps one function):
/// `cargo test --release -p op-builtins --lib exhaustive_transcendentals -- --ignored --nocapture`
#[test]
#[ignore = "all 2^32 inputs per function and instruction set: run in release (command in the doc comment)"]
fn exhaustive_transcendentals() {
    let only = std::env::var("OP_SWEEP_ONLY").ok();
    for isa in Isa::available() {
        for (name, k, reference) in TRANSCENDENTALS.into_iter().filter(|t| only.as_deref().is_none_or(|o| o == t.0)) {
            let (u, x) = sweep(isa, k, reference, 1, 1);
            println!("{name} {isa:?}: max {u} ulp at {:e} ({x:#010x})", f32::from_bits(x));
            assert!(u <= 2, "{name} {isa:?}: {u} ulp at {:e} ({x:#010x})", f32::from_bits(x));
        }
    }
}

// ---- Reductions and contractions, through dispatch and the conformance engine's checker. ----

/// A registry holding the built-ins on a CPU backend of `threads` threads (and the reference).
fn registry(threads: usize) -> Registry {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::with_threads(threads)), Arc::new(ReferenceBackend::default())]);
    for d in builtins::decls() {
        r.register_builtin(d).expect("a built-in registers");
    }
    r
}

/// A hand-made case of `h`'s op with these inputs (symbols bound by validating them).
fn case(h: &OpHandle, inputs: Vec<Tensor>) -> Case {
    let op = h.op();
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let bound = op.plan.validate(&refs, &[], None).expect("an admissible case");
    Case {
        index: 0,
        family: "hand-made (cpu kernel tests)",
        pattern: Pattern::Random,
        seed: 0,
        shape: cases::Shape { syms: bound.values.to_vec(), float_params: vec![] },
        sym_names: op.plan.syms.clone(),
        inputs,
        params: vec![],
        param_names: vec![],
    }
}

/// Runs `name` on `inputs` on the CPU backend with 1, 2 and 3 threads and on every instruction
/// set: the conformance checker accepts each result (the op's `accum` bound, its non-finite
/// rules), and the results are bit-identical across thread counts, and across instruction sets
/// where `isa_independent` (the f64 reductions; the FMA paths of the contractions agree with
/// each other but not with the unfused portable path).
fn check_accum(name: &str, inputs: Vec<Tensor>, isa_independent: bool) {
    // The first result of each instruction set (1 thread); every later one must match it.
    let mut firsts: Vec<(Isa, Vec<u32>)> = Vec::new();
    for threads in [1, 2, 3] {
        let r = registry(threads);
        let h = r.lookup(name).expect("a built-in");
        let c = case(&h, inputs.clone());
        let refs: Vec<&Tensor> = inputs.iter().collect();
        for isa in Isa::available() {
            let out = with_isa_override(isa, || h.call_with(&refs, &[], op_core::registry::dispatch::CallOptions::on(BackendKind::Cpu)))
                .expect("isa")
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let bits: Vec<u32> = out.outputs[0].as_slice::<f32>().expect("f32").iter().map(|v| v.to_bits()).collect();
            match firsts.iter().find(|(i, _)| *i == isa) {
                Some((_, b)) => assert!(*b == bits, "{name} {c}: {isa:?} on {threads} threads differs from 1 thread"),
                None => firsts.push((isa, bits)),
            }
            with_isa_override(isa, || conformance::check_case(&h, BackendKind::Cpu, &c))
                .expect("isa")
                .unwrap_or_else(|e| panic!("{name} on {isa:?}, {threads} threads, {c}:\n{e}"));
        }
    }
    // Across instruction sets: all of them for the f64 reductions, the fused (x86) ones for the
    // contractions.
    let compared: Vec<&(Isa, Vec<u32>)> = firsts.iter().filter(|(i, _)| isa_independent || *i != Isa::Portable).collect();
    for pair in compared.windows(2) {
        assert!(pair[0].1 == pair[1].1, "{name}: {:?} and {:?} differ", pair[0].0, pair[1].0);
    }
}

#[test]
fn reductions_conform_and_give_the_same_bits_on_any_thread_count_and_isa() {
    let mut rng = Rng::new(21);
    let block = reduce::BLOCK;
    let lens =
        [0usize, 1, 2, 15, 16, 17, 255, block - 1, block + 1, reduce::GRAIN_BLOCKS * block + 3, 3 * reduce::GRAIN_BLOCKS * block + 7];
    for n in lens {
        let xs: [(&str, Vec<f32>); 4] = [
            ("random", uniform(&mut rng, n, -1e3, 1e3)),
            ("positive", uniform(&mut rng, n, 0.0, 1e3)),
            ("biased", vec![0.1; n]),
            ("specials", (0..n).map(|i| specials()[i % 20]).collect()),
        ];
        for (what, x) in xs {
            let y: Vec<f32> = x.iter().rev().map(|v| v * 0.5 + 0.25).collect();
            eprintln!("reductions: {what}, n = {n}");
            check_accum("builtin/sum", vec![Tensor::vector(x.clone())], true);
            if n > 0 {
                check_accum("builtin/mean", vec![Tensor::vector(x.clone())], true);
                check_accum("builtin/mse_loss", vec![Tensor::vector(x.clone()), Tensor::vector(y)], true);
            }
        }
    }
    // Non-finite terms combine exactly as in the f64 reference: `inf + MIN + MIN` stays inf,
    // `MAX + MAX - MAX` does not overflow, NaN propagates.
    for x in [
        vec![f32::INFINITY, f32::MIN, f32::MIN],
        vec![f32::MAX, f32::MAX, -f32::MAX],
        vec![f32::NAN, 1.0],
        vec![f32::INFINITY, f32::NEG_INFINITY],
    ] {
        check_accum("builtin/sum", vec![Tensor::vector(x)], true);
    }
}

#[test]
fn matmul_conforms_on_tile_edges_and_long_reductions_with_the_same_bits_on_any_thread_count() {
    let mut rng = Rng::new(31);
    let mat = |rows: usize, cols: usize, v: Vec<f32>| Tensor::from_vec(vec![rows, cols], v).expect("a matrix");
    for &(m, k, n) in &[(1usize, 1usize, 1usize), (2, 16, 15), (5, 17, 16), (6, 255, 17), (7, 257, 33), (13, 40, 65), (65, 70, 64)] {
        let (a, b) = (uniform(&mut rng, m * k, -1.0, 1.0), uniform(&mut rng, k * n, -1.0, 1.0));
        check_accum("builtin/matmul", vec![mat(m, k, a), mat(k, n, b)], false);
    }
    // Long reductions: super-panels of 4096 combined pairwise (the conformance corpus's biased
    // case, k = 131_071, drifts out of the bound when the panels are summed in sequence).
    for &(m, k, n) in &[(2usize, 4097usize, 3usize), (1, 9000, 2), (1, 131_071, 1)] {
        check_accum("builtin/matmul", vec![mat(m, k, vec![0.1; m * k]), mat(k, n, vec![0.2; k * n])], false);
        check_accum(
            "builtin/matmul",
            vec![mat(m, k, uniform(&mut rng, m * k, 0.0, 1e3)), mat(k, n, uniform(&mut rng, k * n, 0.0, 1e3))],
            false,
        );
    }
    // More rows than one chunk: several row chunks, on 2 and 3 threads.
    let (m, k, n) = (200, 64, 90);
    check_accum(
        "builtin/matmul",
        vec![mat(m, k, uniform(&mut rng, m * k, -1.0, 1.0)), mat(k, n, uniform(&mut rng, k * n, -1.0, 1.0))],
        false,
    );
}

#[test]
fn contractions_recompute_non_finite_outputs_in_f64() {
    // `inf` followed by 300 `MIN`: the reference stays +inf; a blocked f32 sum overflows the MIN
    // block to -inf and would give NaN. And products that overflow f32 but cancel exactly.
    let k = 301;
    let mut a = vec![f32::MIN; k];
    a[0] = f32::INFINITY;
    let mat = |rows: usize, cols: usize, v: Vec<f32>| Tensor::from_vec(vec![rows, cols], v).expect("a matrix");
    check_accum("builtin/matmul", vec![mat(1, k, a.clone()), mat(k, 1, vec![1.0; k])], false);
    check_accum("builtin/matmul", vec![mat(1, 3, vec![f32::MAX, f32::MAX, 1.0]), mat(3, 1, vec![f32::MAX, -f32::MAX, 0.5])], false);
    let mut x = vec![f32::MIN; 100];
    x[0] = f32::INFINITY;
    check_accum("builtin/conv1d", vec![Tensor::vector(x), Tensor::vector(vec![1.0f32; 48])], false);
    for isa in Isa::available() {
        let mut o = [0f32];
        on(isa, 1, || matmul::matmul(&a, &vec![1.0; k], 1, k, 1, &mut o));
        assert_eq!(o[0], f32::INFINITY, "{isa:?}");
    }
}

#[test]
fn conv1d_conforms_on_every_layout_with_the_same_bits_on_any_thread_count() {
    let mut rng = Rng::new(41);
    // Short (direct layout) and long (transposed layout) outputs, taps around blocks (16) and
    // panels (256), and m > 512 (direct layout for every length).
    for &(n, m) in &[(1usize, 1usize), (20, 7), (16, 16), (300, 17), (700, 255), (2000, 257), (1500, 600), (40_000, 64)] {
        let (x, w) = (uniform(&mut rng, n, -1.0, 1.0), uniform(&mut rng, m, -1.0, 1.0));
        check_accum("builtin/conv1d", vec![Tensor::vector(x), Tensor::vector(w)], false);
    }
    check_accum("builtin/conv1d", vec![Tensor::vector(vec![0.1f32; 5000]), Tensor::vector(vec![0.2f32; 1000])], false);
}

#[test]
fn each_output_is_computed_in_the_same_order_whatever_the_tiling() {
    // An output of a big call equals the same output computed alone (a 1-output conv1d takes the
    // direct path, a 1-row matmul a single row block): the summation order is per element.
    let mut rng = Rng::new(44);
    for isa in Isa::available() {
        for &(n, m) in &[(3000usize, 64usize), (2000, 300), (700, 700)] {
            let (x, w) = (uniform(&mut rng, n, -1.0, 1.0), uniform(&mut rng, m, -1.0, 1.0));
            let mut full = vec![0f32; n - m + 1];
            on(isa, 2, || conv1d::conv1d(&x, &w, &mut full));
            for i in (0..full.len()).step_by(37) {
                let mut one = [0f32];
                on(isa, 1, || conv1d::conv1d(&x[i..i + m], &w, &mut one));
                assert_eq!(one[0].to_bits(), full[i].to_bits(), "{isa:?} n={n} m={m} i={i}");
            }
        }
        let (m, k, n) = (37usize, 600usize, 70usize);
        let (a, b) = (uniform(&mut rng, m * k, -1.0, 1.0), uniform(&mut rng, k * n, -1.0, 1.0));
        let mut full = vec![0f32; m * n];
        on(isa, 2, || matmul::matmul(&a, &b, m, k, n, &mut full));
        for i in 0..m {
            let mut row = vec![0f32; n];
            on(isa, 1, || matmul::matmul(&a[i * k..(i + 1) * k], &b, 1, k, n, &mut row));
            same(&row, &full[i * n..(i + 1) * n], false).unwrap_or_else(|e| panic!("{isa:?} row {i}: {e}"));
        }
    }
}

// ---- Negative control: the checks above can fail. ----

/// The scratch crate's former matmul order for one output: blocks of 16 fused multiply-adds,
/// blocks added in sequence, and every panel of 256 added in sequence (no pairwise
/// super-panels).
fn matmul_sequential_panels(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut total = 0f32;
            for p0 in (0..k).step_by(256) {
                let mut panel = 0f32;
                for q0 in (p0..(p0 + 256).min(k)).step_by(16) {
                    let mut blk = 0f32;
                    for p in q0..(q0 + 16).min(k).min(p0 + 256) {
                        blk = a[i * k + p].mul_add(b[p * n + j], blk);
                    }
                    panel += blk;
                }
                total = if p0 == 0 { panel } else { total + panel };
            }
            out[i * n + j] = total;
        }
    }
    out
}

#[crate::op(name = "test/cpu/matmul_sequential_panels", version = 1, signature(a: f32[m, k], b: f32[k, n]) -> f32[m, n],
     category = contraction, tolerance = accum(2), nan = propagate, backward = none, cpu = matmul_sequential_panels,
     generated_tests = false)]
fn matmul_panels_reference<T: crate::Real>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<T> {
    builtins::matmul(a, b, m, k, n)
}

#[test]
fn a_matmul_summing_its_panels_in_sequence_is_rejected_where_the_kernel_conforms() {
    let decl: &'static OpDecl = &matmul_panels_reference::DECL;
    let r = registry(1);
    let h = r.register(decl).expect("registers");
    let (m, k, n) = (1, 131_071, 1);
    let inputs =
        vec![Tensor::from_vec(vec![m, k], vec![0.1f32; m * k]).expect("a"), Tensor::from_vec(vec![k, n], vec![0.2f32; k * n]).expect("b")];
    match conformance::check_case(&h, BackendKind::Cpu, &case(&h, inputs.clone())) {
        Err(e) => println!("rejected, as it must be:\n{e}"),
        Ok(()) => panic!("a matmul adding 512 panels in sequence passed the accum bound on the biased case"),
    }
    let mm = r.lookup("builtin/matmul").expect("built-in");
    conformance::check_case(&mm, BackendKind::Cpu, &case(&mm, inputs)).unwrap_or_else(|e| panic!("the kernel: {e}"));
}
