//! The example's `cpu` kernel for the windowed median (`examples/windowed_median/median_cpu.rs`,
//! written with the runtime's public `par` and `simd`): bit-identical to the reference (IEEE
//! total order: NaNs of both signs and any payload, signed zeros, infinities, subnormals) on
//! every instruction-set path this CPU has (forced with `with_isa_override`) and on CPU backends
//! of 1, 2 and 3 threads, run through dispatch; plus the negative controls that prove these
//! checks can fail. Sizes are capped for debug builds on two cores (the kernel's own tile and
//! chunk boundaries are still crossed: 4096-output tiles, 16_384-output chunks).

use crate::median;

use op_runtime::backend::{CpuBackend, ReferenceBackend};
use op_runtime::cpu::simd::{key, unkey, with_isa_override, Isa};
use op_runtime::{BackendKind, CallOptions, OpHandle, Registry, Scalar, Tensor};
use std::sync::Arc;

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn pick(&mut self, pool: &[f32]) -> f32 {
        pool[(self.next() % pool.len() as u64) as usize]
    }
}

/// NaNs of both signs with quiet and signalling payloads.
fn nans() -> Vec<f32> {
    [0x7fc0_0000u32, 0xffc0_0000, 0x7f80_0001, 0xff80_0001, 0x7fff_ffff, 0xffd2_3456].map(f32::from_bits).to_vec()
}

/// Edge values (NaN aside).
const SPECIALS: [f32; 14] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::MAX,
    f32::MIN,
    f32::MIN_POSITIVE,
    1e-45,
    -1e-45,
    1.175_494_2e-38,
    -5e-40,
    3.0,
];

/// Named value patterns of length `n`.
fn patterns(r: &mut Rng, n: usize) -> Vec<(&'static str, Vec<f32>)> {
    let uniform = |r: &mut Rng| (0..n).map(|_| r.unit() * 2.0 - 1.0).collect::<Vec<f32>>();
    let mut sorted = uniform(r);
    sorted.sort_by(f32::total_cmp);
    let mut reverse = uniform(r);
    reverse.sort_by(|a, b| b.total_cmp(a));
    let mut with_nans: Vec<f32> = SPECIALS.to_vec();
    with_nans.extend(nans());
    vec![
        ("random", uniform(r)),
        ("constant", vec![0.7; n]),
        ("sorted", sorted),
        ("reverse", reverse),
        ("ties", (0..n).map(|_| r.pick(&[-1.0, 0.0, -0.0, 1.0, 2.0])).collect()),
        ("specials", (0..n).map(|_| r.pick(&SPECIALS)).collect()),
        ("subnormal", (0..n).map(|_| f32::from_bits((r.next() % 0x0080_0000) as u32 | ((r.next() as u32) & 0x8000_0000))).collect()),
        ("bits", (0..n).map(|_| f32::from_bits(r.next() as u32)).collect()),
        ("nan-specials", (0..n).map(|_| r.pick(&with_nans)).collect()),
    ]
}

/// The datasets for one window size: every length from `w` to `w + 40` (1 to 41 outputs, the
/// patterns in rotation), every pattern across several tiles, and zeros and NaNs packed densely
/// around the median.
fn datasets(w: usize, seed: u64) -> Vec<(String, Vec<f32>)> {
    let mut r = Rng(seed);
    let mut v = Vec::new();
    for n in w..=w + 40 {
        let pats = patterns(&mut r, n);
        let (name, x) = pats[n % pats.len()].clone();
        v.push((format!("{name} n={n}"), x));
    }
    for n in [w + 255, 4096 + 3 * w] {
        for (name, x) in patterns(&mut r, n) {
            v.push((format!("{name} n={n}"), x));
        }
    }
    let mut zn: Vec<f32> = vec![0.0, -0.0];
    zn.extend(nans());
    v.push(("zeros+nans".into(), (0..1500).map(|_| r.pick(&zn)).collect()));
    v.push(("zeros+ones".into(), (0..1500).map(|_| r.pick(&[0.0, -0.0, 1.0, -1.0])).collect()));
    v
}

/// Compares `f` with the reference on every dataset of every window size in `ws`, bit for bit.
fn check(f: &dyn Fn(&[f32], usize) -> Vec<f32>, ws: &[usize], seed: u64) -> Result<(), String> {
    for &w in ws {
        for (name, x) in datasets(w, seed + w as u64) {
            let want = median::windowed_median(&x, w as u32);
            let got = f(&x, w);
            if got.len() != want.len() {
                return Err(format!("w={w} {name}: {} outputs, want {}", got.len(), want.len()));
            }
            if let Some(i) = got.iter().zip(&want).position(|(g, e)| g.to_bits() != e.to_bits()) {
                return Err(format!(
                    "w={w} {name}: index {i}: got {:e} ({:#010x}), want {:e} ({:#010x})",
                    got[i],
                    got[i].to_bits(),
                    want[i],
                    want[i].to_bits()
                ));
            }
        }
    }
    Ok(())
}

/// The median registered in a registry whose CPU backend runs `threads` threads.
fn median_on(threads: usize) -> OpHandle {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::with_threads(threads)), Arc::new(ReferenceBackend::default())]);
    r.register(&median::windowed_median::DECL).expect("the median registers")
}

/// The kernel through dispatch on the CPU backend of `h`, forced onto `isa`.
fn via_dispatch(h: &OpHandle, isa: Isa, x: &[f32], w: usize) -> Vec<f32> {
    let t = Tensor::vector(x.to_vec());
    let out = with_isa_override(isa, || h.call_with(&[&t], &[Scalar::U32(w as u32)], CallOptions::on(BackendKind::Cpu)))
        .expect("an instruction set this CPU has")
        .expect("the cpu kernel runs");
    assert_eq!(out.provenance.backend, BackendKind::Cpu);
    out.outputs[0].as_slice::<f32>().expect("f32 output").to_vec()
}

const ALL_W: [usize; 16] = [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31];

#[test]
fn the_key_is_the_total_order_and_an_involution() {
    let mut r = Rng(1);
    let mut xs: Vec<f32> = (0..20_000).map(|_| f32::from_bits(r.next() as u32)).collect();
    xs.extend(SPECIALS);
    xs.extend(nans());
    for &a in &xs {
        assert_eq!(unkey(key(a)).to_bits(), a.to_bits());
    }
    for p in xs.windows(2) {
        assert_eq!(key(p[0]).cmp(&key(p[1])), p[0].total_cmp(&p[1]), "{:e} {:e}", p[0], p[1]);
    }
}

#[test]
fn the_median_kernel_is_bit_identical_to_the_reference_on_every_isa_and_thread_count() {
    for threads in [1, 2] {
        let h = median_on(threads);
        for isa in Isa::available() {
            check(&|x, w| via_dispatch(&h, isa, x, w), &ALL_W, 100).unwrap_or_else(|e| panic!("{isa:?}, {threads} threads: {e}"));
        }
    }
}

#[test]
fn large_inputs_split_over_chunks_give_the_same_bits_on_1_2_and_3_threads() {
    let mut r = Rng(5);
    let n = 50_000;
    let x: Vec<f32> = (0..n).map(|_| r.unit()).collect();
    let mut pool = vec![0.0, -0.0, 1.0, f32::INFINITY, -1.0, 2.0];
    pool.extend(nans());
    let xs: Vec<f32> = (0..n).map(|_| r.pick(&pool)).collect();
    let handles: Vec<OpHandle> = [1, 2, 3].map(median_on).into();
    for w in [3usize, 7, 9, 31] {
        for data in [&x, &xs] {
            let want = median::windowed_median(data, w as u32);
            for (t, h) in handles.iter().enumerate() {
                for isa in Isa::available() {
                    let got = via_dispatch(h, isa, data, w);
                    let bad = got.iter().zip(&want).position(|(g, e)| g.to_bits() != e.to_bits());
                    assert!(bad.is_none(), "{isa:?}, {} threads, w={w}: first difference at {bad:?}", t + 1);
                }
            }
        }
    }
}

// ---- Negative controls: deliberately wrong medians are caught by the same checks. ----

/// Sorted windows of `x` under `cmp`, each reduced by `pick`.
fn by_sorting(x: &[f32], w: usize, cmp: fn(&f32, &f32) -> std::cmp::Ordering, pick: fn(&[f32]) -> f32) -> Vec<f32> {
    x.windows(w)
        .map(|win| {
            let mut s = win.to_vec();
            s.sort_by(cmp);
            pick(&s)
        })
        .collect()
}

/// The real kernel (1 thread, detected ISA) with its output altered by `f`.
fn kernel_then(x: &[f32], w: usize, f: fn(&mut Vec<f32>)) -> Vec<f32> {
    let mut out = median::windowed_median_cpu(x, w as u32);
    f(&mut out);
    out
}

#[test]
fn wrong_medians_are_caught() {
    type F = fn(&[f32], usize) -> Vec<f32>;
    let mutants: [(&str, F); 7] = [
        ("the element of rank w/2 - 1", |x, w| by_sorting(x, w, f32::total_cmp, |s| s[(s.len() / 2).saturating_sub(1)])),
        ("sorted with partial_cmp (NaN unordered, -0 == +0)", |x, w| {
            by_sorting(x, w, |a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal), |s| s[s.len() / 2])
        }),
        ("-0 and +0 compared equal", |x, w| {
            by_sorting(x, w, |a, b| if *a == 0.0 && *b == 0.0 { std::cmp::Ordering::Equal } else { a.total_cmp(b) }, |s| s[s.len() / 2])
        }),
        ("raw bits compared as i32 (no total-order key)", |x, w| {
            x.windows(w)
                .map(|win| {
                    let mut k: Vec<i32> = win.iter().map(|v| v.to_bits() as i32).collect();
                    k.sort();
                    f32::from_bits(k[w / 2] as u32)
                })
                .collect()
        }),
        ("the kernel, -0 written as +0", |x, w| kernel_then(x, w, |o| o.iter_mut().filter(|v| **v == 0.0).for_each(|v| *v = 0.0))),
        ("the kernel, NaN payloads canonicalised", |x, w| {
            kernel_then(x, w, |o| o.iter_mut().filter(|v| v.is_nan()).for_each(|v| *v = f32::NAN.copysign(*v)))
        }),
        ("the kernel, last output missing", |x, w| {
            kernel_then(x, w, |o| {
                o.pop();
            })
        }),
    ];
    let ws = [1usize, 3, 7, 9, 31];
    for (name, f) in mutants {
        // Rank w/2 - 1 is the median itself when w = 1.
        let ws: &[usize] = if name.starts_with("the element of rank") { &ws[1..] } else { &ws };
        match check(&f, ws, 100) {
            Err(e) => println!("mutant `{name}` caught: {e}"),
            Ok(()) => panic!("mutant `{name}` passed the checks"),
        }
    }
    // And the real kernel passes the very same checks.
    check(&|x, w| median::windowed_median_cpu(x, w as u32), &ws, 100).unwrap_or_else(|e| panic!("the kernel: {e}"));
}
