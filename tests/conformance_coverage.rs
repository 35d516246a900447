//! Conformance draws where kernels break (an outside review's findings), each with the wrong
//! kernel rejected and its correct twin conformed:
//! - **the interior of a one-sided parameter range**: under `k <= 16` the corpus held only
//!   `k` in `0..=3` (the boundary family) and `15..=17` (random draws around the literal), so a
//!   kernel wrong for `4..=14` got a receipt; random draws now run from 0 past the largest
//!   literal;
//! - **lengths that are whole numbers of blocks**: no random length was a multiple of 32, and
//!   the large case is odd on purpose, so a blocked loop whose last block is empty when `32 | n`
//!   got a receipt; one random draw in four now rounds its dims down to powers of two;
//! - **float parameters beyond the pool's `[-2.5, 7.25]`**: a kernel that clamped its
//!   parameter to `[-8, 8]` got a receipt; the pool now holds 12.5 and -40.
//!
//! The wrong fixtures declare `generated_tests = false`; the correct twins also conform in their
//! generated tests.

use op_runtime::conformance::{conform, ConformanceFailure};
use op_runtime::{op, BackendKind, OpDecl, Real, Registry};

fn cpu_verdict(decl: &'static OpDecl) -> Result<op_runtime::receipt::Receipt, ConformanceFailure> {
    let reg = Registry::with_builtins();
    let h = reg.register(decl).expect("registers");
    conform(&h, BackendKind::Cpu)
}

/// Rejected with a report whose first failing case satisfies `on`.
fn rejected_on(decl: &'static OpDecl, on: impl Fn(&op_runtime::conformance::Case) -> bool) {
    let e = cpu_verdict(decl).expect_err("a wrong kernel is rejected");
    let report = e.report().unwrap_or_else(|| panic!("a rejection, not {e}"));
    assert!(on(&report.first().case), "the case is one the kernel is wrong on: {report}");
}

// ---- An integer parameter under `k <= 16` ---------------------------------------------------

macro_rules! times_k {
    ($name:ident, $id:literal, $kernel:ident, $tests:literal) => {
        #[op(name = $id, version = 1, signature(x: f32[n], k: u32 where k <= 16) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none, cpu = $kernel, generated_tests = $tests)]
        pub fn $name<T: Real>(x: &[T], k: u32) -> Vec<T> {
            x.iter().map(|v| *v * T::from_f64(k as f64)).collect()
        }
    };
}

pub fn times_k_cpu(x: &[f32], k: u32) -> Vec<f32> {
    x.iter().map(|v| v * k as f32).collect()
}
/// Wrong for `k` in `4..=14` only.
pub fn times_k_inside_cpu(x: &[f32], k: u32) -> Vec<f32> {
    let f = if (4..=14).contains(&k) { k as f32 + 1.0 } else { k as f32 };
    x.iter().map(|v| v * f).collect()
}

times_k!(times_k, "test/coverage/times_k", times_k_cpu, true);
times_k!(times_k_inside, "test/coverage/times_k_inside", times_k_inside_cpu, false);

#[test]
fn a_kernel_wrong_inside_a_one_sided_parameter_range_is_rejected() {
    rejected_on(&times_k_inside::DECL, |c| c.sym("k").is_some_and(|k| (4..=14).contains(&k)));
    cpu_verdict(&times_k::DECL).expect("the correct twin conforms");
}

// ---- Lengths that are whole numbers of blocks ----------------------------------------------

/// `2x` in blocks of `C`, the last block's length taken as `n % C`: empty where `C | n`.
fn blocked<const C: usize>(x: &[f32]) -> Vec<f32> {
    let n = x.len();
    let mut y = vec![0.0f32; n];
    let blocks = n.div_ceil(C);
    for b in 0..blocks {
        let len = if b + 1 == blocks { n % C } else { C };
        for i in b * C..b * C + len {
            y[i] = x[i] * 2.0;
        }
    }
    y
}
/// The same loop, the last block's length right.
fn blocked_right<const C: usize>(x: &[f32]) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    for (yc, xc) in y.chunks_mut(C).zip(x.chunks(C)) {
        for (a, b) in yc.iter_mut().zip(xc) {
            *a = b * 2.0;
        }
    }
    y
}

pub fn blocked32_cpu(x: &[f32]) -> Vec<f32> {
    blocked::<32>(x)
}
pub fn blocked64_cpu(x: &[f32]) -> Vec<f32> {
    blocked::<64>(x)
}
pub fn blocked128_cpu(x: &[f32]) -> Vec<f32> {
    blocked::<128>(x)
}
pub fn blocked_right_cpu(x: &[f32]) -> Vec<f32> {
    blocked_right::<64>(x)
}

macro_rules! double {
    ($name:ident, $id:literal, $kernel:ident, $tests:literal) => {
        #[op(name = $id, version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none, cpu = $kernel, generated_tests = $tests)]
        pub fn $name<T: Real>(x: &[T]) -> Vec<T> {
            x.iter().map(|v| *v + *v).collect()
        }
    };
}

double!(blocked32, "test/coverage/blocked32", blocked32_cpu, false);
double!(blocked64, "test/coverage/blocked64", blocked64_cpu, false);
double!(blocked128, "test/coverage/blocked128", blocked128_cpu, false);
double!(blocked_ok, "test/coverage/blocked_ok", blocked_right_cpu, true);

#[test]
fn a_blocked_loop_wrong_on_whole_blocks_is_rejected() {
    for (decl, c) in [(&blocked32::DECL, 32), (&blocked64::DECL, 64), (&blocked128::DECL, 128)] {
        rejected_on(decl, |case| case.sym("n").is_some_and(|n| n > 0 && n % c == 0));
    }
    cpu_verdict(&blocked_ok::DECL).expect("the correct twin conforms");
}

// ---- A float parameter beyond the small pool -----------------------------------------------

macro_rules! times_s {
    ($name:ident, $id:literal, $kernel:ident, $tests:literal) => {
        #[op(name = $id, version = 1, signature(x: f32[n], s: f32) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none, cpu = $kernel, generated_tests = $tests)]
        pub fn $name<T: Real>(x: &[T], s: T) -> Vec<T> {
            x.iter().map(|v| *v * s).collect()
        }
    };
}

pub fn times_s_cpu(x: &[f32], s: f32) -> Vec<f32> {
    x.iter().map(|v| v * s).collect()
}
/// Clamps its parameter to `[-8, 8]`.
pub fn times_s_clamped_cpu(x: &[f32], s: f32) -> Vec<f32> {
    x.iter().map(|v| v * s.clamp(-8.0, 8.0)).collect()
}

times_s!(times_s, "test/coverage/times_s", times_s_cpu, true);
times_s!(times_s_clamped, "test/coverage/times_s_clamped", times_s_clamped_cpu, false);

#[test]
fn a_kernel_that_clamps_its_float_parameter_is_rejected() {
    let e = cpu_verdict(&times_s_clamped::DECL).expect_err("rejected");
    let report = e.report().unwrap_or_else(|| panic!("a rejection, not {e}"));
    let s = report.first().case.params[0].as_f64().expect("a float parameter");
    assert!(s.abs() > 8.0, "the case's parameter is one the kernel clamps: {report}");
    cpu_verdict(&times_s::DECL).expect("the correct twin conforms");
}
