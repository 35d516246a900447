//! Gradcheck where interior draws do not go (an outside review's findings):
//! - **ties between two inputs**: at `a[i] == b[i]` a `max`'s valid gradients are `(t g, (1-t) g)`,
//!   `0 <= t <= 1`. Each coordinate alone only bounds its share between the one-sided
//!   derivatives, so masks `a >= b` and `b >= a` (the whole cotangent to both) and `a > b`,
//!   `b > a` (to neither) passed every salt; moving both together keeps the tie, and the
//!   backward along that direction must match its two-sided difference;
//! - **the reach of the parameter space**: every round drew one small interior binding (a
//!   median's window never above 17, inputs of at most a few dozen elements), so a rule wrong
//!   only for a wide window or a long input passed. After the rounds, one more round binds each
//!   integer parameter at the largest value its constraints admit and draws dims up to 64.
//!
//! Each rejecting fixture has correct twins that pass under every salt tried. The wrong fixtures
//! declare `generated_tests = false`.

use op_runtime::gradcheck::{gradcheck_with, GradcheckError, GradcheckOptions, GradcheckReport};
use op_runtime::{op, OpDecl, Real};
use std::cmp::Ordering;

/// Salts (identities) each fixture is checked under.
const SALTS: u64 = 16;

fn check(decl: &'static OpDecl, salt: u64) -> Result<GradcheckReport, GradcheckError> {
    gradcheck_with(op_runtime::registry(), decl, &GradcheckOptions { salt, ..GradcheckOptions::default() })
}

fn passes_every_salt(decl: &'static OpDecl) {
    for salt in 0..SALTS {
        let r = check(decl, salt).unwrap_or_else(|e| panic!("{} (salt {salt}): {e}", decl.rust_name));
        assert!(r.negative_control_rejected(), "{} (salt {salt}): {r}", decl.rust_name);
    }
}

/// Rejected under every salt, each rejection saying `says`; the messages.
fn rejected_every_salt(decl: &'static OpDecl, says: &str) -> Vec<String> {
    (0..SALTS)
        .map(|salt| {
            let e = check(decl, salt).expect_err("a wrong rule is rejected");
            let m = e.to_string();
            assert!(m.contains(says), "{} (salt {salt}) says `{says}`: {m}", decl.rust_name);
            m
        })
        .collect()
}

// ---- Ties between two inputs: the elementwise maximum ------------------------------------

macro_rules! maximum {
    ($name:ident, $id:literal, $vjp:ident, $tests:literal) => {
        #[op(name = $id, version = 1, signature(a: f32[n], b: f32[n]) -> f32[n], category = selection, tolerance = exact, backward = vjp($vjp), subgradient = "the cotangent to the selected operand", generated_tests = $tests)]
        pub fn $name<T: Real>(a: &[T], b: &[T]) -> Vec<T> {
            a.iter().zip(b).map(|(x, y)| if x.total_cmp(y) == Ordering::Greater { *x } else { *y }).collect()
        }
    };
}

/// The gradient of `max(a, b)` with `a`'s share of the cotangent given by `share(a, b)`.
fn routed<T: Real>(a: &[T], b: &[T], g: &[T], share: impl Fn(T, T) -> T) -> (Vec<T>, Vec<T>) {
    let ga: Vec<T> = a.iter().zip(b).zip(g).map(|((x, y), g)| *g * share(*x, *y)).collect();
    let gb: Vec<T> = a.iter().zip(b).zip(g).map(|((x, y), g)| *g * (T::one() - share(*x, *y))).collect();
    (ga, gb)
}

/// Ties to `b`, as the forward selects.
pub fn to_b_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    routed(a, b, g, |x, y| if x > y { T::one() } else { T::zero() })
}
/// Ties to `a`.
pub fn to_a_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    routed(a, b, g, |x, y| if x >= y { T::one() } else { T::zero() })
}
/// Ties split in half.
pub fn halves_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let half = T::from_f64(0.5);
    routed(a, b, g, |x, y| {
        if x > y {
            T::one()
        } else if x < y {
            T::zero()
        } else {
            half
        }
    })
}
/// The whole cotangent to both operands of a tie (`a >= b` and `b >= a`): counted twice.
pub fn both_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let ga = a.iter().zip(b).zip(g).map(|((x, y), g)| if x >= y { *g } else { T::zero() }).collect();
    let gb = a.iter().zip(b).zip(g).map(|((x, y), g)| if y >= x { *g } else { T::zero() }).collect();
    (ga, gb)
}
/// Neither operand of a tie (`a > b` and `b > a`): dropped.
pub fn neither_vjp<T: Real>(a: &[T], b: &[T], g: &[T]) -> (Vec<T>, Vec<T>) {
    let ga = a.iter().zip(b).zip(g).map(|((x, y), g)| if x > y { *g } else { T::zero() }).collect();
    let gb = a.iter().zip(b).zip(g).map(|((x, y), g)| if y > x { *g } else { T::zero() }).collect();
    (ga, gb)
}

maximum!(max_to_b, "test/reach/max_to_b", to_b_vjp, true);
maximum!(max_to_a, "test/reach/max_to_a", to_a_vjp, true);
maximum!(max_halves, "test/reach/max_halves", halves_vjp, true);
maximum!(max_both, "test/reach/max_both", both_vjp, false);
maximum!(max_neither, "test/reach/max_neither", neither_vjp, false);

const TIED: &str = "moved together";

#[test]
fn a_tie_between_two_inputs_counted_twice_is_rejected() {
    for m in rejected_every_salt(&max_both::DECL, TIED) {
        assert!(m.contains("`a`[") && m.contains("`b`["), "names both tied elements: {m}");
    }
}

#[test]
fn a_tie_between_two_inputs_dropped_is_rejected() {
    rejected_every_salt(&max_neither::DECL, TIED);
}

#[test]
fn ties_routed_to_either_operand_or_split_pass() {
    for decl in [&max_to_b::DECL, &max_to_a::DECL, &max_halves::DECL] {
        passes_every_salt(decl);
    }
}

// ---- The reach of the parameter space ------------------------------------------------------

/// `x * k`, `k` at most 31.
macro_rules! times_k {
    ($name:ident, $id:literal, $vjp:ident, $tests:literal) => {
        #[op(name = $id, version = 1, signature(x: f32[n], k: u32 where k <= 31) -> f32[n], category = elementwise, tolerance = ulp(1), backward = vjp($vjp), generated_tests = $tests)]
        pub fn $name<T: Real>(x: &[T], k: u32) -> Vec<T> {
            x.iter().map(|v| *v * T::from_f64(k as f64)).collect()
        }
    };
}

pub fn times_k_vjp<T: Real>(_x: &[T], k: u32, g: &[T]) -> Vec<T> {
    g.iter().map(|g| *g * T::from_f64(k as f64)).collect()
}
/// Wrong for `k = 31` only, the largest `k` admitted (a rule that caps a parameter it should
/// not).
pub fn times_k_capped_vjp<T: Real>(_x: &[T], k: u32, g: &[T]) -> Vec<T> {
    g.iter().map(|g| *g * T::from_f64(k.min(30) as f64)).collect()
}

times_k!(times_k_op, "test/reach/times_k", times_k_vjp, true);
times_k!(times_k_capped, "test/reach/times_k_capped", times_k_capped_vjp, false);

/// `x^3`.
macro_rules! cube {
    ($name:ident, $id:literal, $vjp:ident, $tests:literal) => {
        #[op(name = $id, version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(2), backward = vjp($vjp), generated_tests = $tests)]
        pub fn $name<T: Real>(x: &[T]) -> Vec<T> {
            x.iter().map(|v| *v * *v * *v).collect()
        }
    };
}

pub fn cube_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(v, g)| T::from_f64(3.0) * *v * *v * *g).collect()
}
/// Wrong on inputs of more than 40 elements only: the gradient past element 40 dropped (a
/// fixed-size buffer).
pub fn cube_long_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    let mut r = cube_vjp(x, g);
    r.iter_mut().skip(40).for_each(|v| *v = T::zero());
    r
}

cube!(cube_op, "test/reach/cube", cube_vjp, true);
cube!(cube_long, "test/reach/cube_long", cube_long_vjp, false);

#[test]
fn a_rule_wrong_only_at_the_largest_parameters_is_rejected_in_the_reach_round() {
    for m in rejected_every_salt(&times_k_capped::DECL, "k = 31") {
        // The reach round's salt has the top bits 0x5EA, and reproduces the rejection alone.
        let salt: u64 = m
            .split("with salt ")
            .nth(1)
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|s| s.parse().ok())
            .expect("names its salt");
        assert_eq!(salt >> 52, 0x5EA, "the reach round: {m}");
        assert_eq!(check(&times_k_capped::DECL, salt).expect_err("reproduced").to_string(), m);
    }
}

#[test]
fn a_rule_wrong_only_on_long_inputs_is_rejected_in_the_reach_round() {
    rejected_every_salt(&cube_long::DECL, "disagrees with central differences");
}

#[test]
fn correct_rules_pass_the_reach_round() {
    for decl in [&times_k_op::DECL, &cube_op::DECL] {
        passes_every_salt(decl);
    }
    // The reach round binds `k` at 31, the largest admitted, and a long input; the report says so.
    let r = check(&times_k_op::DECL, 0).expect("passes");
    let reach = r.reach.as_ref().unwrap_or_else(|why| panic!("a reach round, not {why}: {r}"));
    assert!(reach.bindings.contains(&("k".into(), "31".into())), "{r}");
    let n: usize = reach.bindings.iter().find(|(k, _)| k == "n").and_then(|(_, v)| v.parse().ok()).expect("n");
    assert!(n > 40 && reach.salt >> 52 == 0x5EA && reach.probes > reach.skipped, "{r}");
    assert!(r.to_string().contains("  reach    : one more round at k = 31, n = "), "{r}");
}
