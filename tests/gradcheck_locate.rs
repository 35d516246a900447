//! Gradcheck that locates and never flakes (issue 33, item 5):
//! - kinks are probed for every op that declares a `subgradient`, whatever its category: a clip
//!   (category `elementwise`) gets points placed on its bounds, a rule wrong there is rejected
//!   and correct rules of either convention (bounds passing the cotangent or not) pass;
//! - a round in which more than half of the probes were skipped draws another, so correct rules
//!   with kinks and flat regions (a clip, a clipped prefix sum: inconclusive at one identity in
//!   three and one in sixteen before) pass under 64 identities, while a step wider than every
//!   kink spacing stays inconclusive and says why;
//! - every rejection names the input element, its shape, the dims and parameters and the salt
//!   that reproduces it; a failing random direction is narrowed down to its element.
//!
//! Each rejecting test has a correct twin that passes on the same salts. The identity of a
//! gradcheck is its seed, drawn from the content hash and `GradcheckOptions::salt` together
//! (`Rng::from_hash`): 64 salts are 64 identities of the same content, as 64 renamed copies
//! would be. The wrong fixtures declare `generated_tests = false`.

use op_runtime::gradcheck::{gradcheck_with, GradcheckError, GradcheckOptions, GradcheckReport, Locus};
use op_runtime::testing::assert_gradcheck_rejected;
use op_runtime::{op, OpDecl, Real};

/// Identities (salts) every correct twin passes under.
const IDENTITIES: u64 = 64;

fn check(decl: &'static OpDecl, o: GradcheckOptions) -> Result<GradcheckReport, GradcheckError> {
    gradcheck_with(op_runtime::registry(), decl, &o)
}

fn salted(salt: u64) -> GradcheckOptions {
    GradcheckOptions { salt, ..GradcheckOptions::default() }
}

/// Passes under every identity, its negative control rejected; the reports.
fn passes_everywhere(decl: &'static OpDecl, o: impl Fn(u64) -> GradcheckOptions) -> Vec<GradcheckReport> {
    (0..IDENTITIES)
        .map(|salt| {
            let r = check(decl, o(salt)).unwrap_or_else(|e| panic!("{} (salt {salt}): {e}", decl.rust_name));
            assert!(r.negative_control_rejected(), "{} (salt {salt}): {r}", decl.rust_name);
            r
        })
        .collect()
}

/// Asserts that `locus` names a real element of a real case: the element's index lies inside
/// its shape, every dim in the signature's shape is among the bindings, and the salt, run
/// again, reproduces the same rejection (same locus, same message).
fn reproduces(decl: &'static OpDecl, e: &GradcheckError, locus: &Locus, o: &GradcheckOptions) {
    let m = e.to_string();
    assert!(locus.index < locus.shape.iter().product::<usize>().max(1), "{m}");
    assert!(m.contains(&locus.element()) && m.contains(&format!("with shape {:?}", locus.shape)), "{m}");
    for (k, v) in &locus.bindings {
        assert!(m.contains(&format!("{k} = {v}")), "{m}");
    }
    assert!(m.contains(&format!("content hash {} with salt {}", locus.content_hash, locus.salt)), "{m}");
    let again = check(decl, GradcheckOptions { salt: locus.salt, ..o.clone() }).expect_err("the named salt reproduces the rejection");
    assert_eq!(again, *e, "salt {} does not reproduce {m}", locus.salt);
}

// ---- Fixtures: a clip, with its rules at the bounds ------------------------------------------

/// Clamps every element to `[lo, hi]`.
#[op(name = "test/locate/clip", version = 1,
     signature(x: f32[n], lo: f32, hi: f32 where lo <= hi) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = vjp(clip_vjp),
     subgradient = "the cotangent passes where lo <= x <= hi (the bounds included)")]
pub fn clip<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    x.iter()
        .map(|v| {
            if *v < lo {
                lo
            } else if *v > hi {
                hi
            } else {
                *v
            }
        })
        .collect()
}
/// The cotangent where `lo <= x <= hi`, else zero.
pub fn clip_vjp<T: Real>(x: &[T], lo: T, hi: T, g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(v, g)| if *v >= lo && *v <= hi { *g } else { T::zero() }).collect()
}

/// The same clip with the other convention at the bounds (nothing passes there): also a
/// subgradient, so also correct.
#[op(name = "test/locate/clip_exclusive", version = 1,
     signature(x: f32[n], lo: f32, hi: f32 where lo <= hi) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = vjp(clip_exclusive_vjp),
     subgradient = "the cotangent passes where lo < x < hi (zero at the bounds)")]
pub fn clip_exclusive<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    clip(x, lo, hi)
}
/// The cotangent where `lo < x < hi`, else zero.
pub fn clip_exclusive_vjp<T: Real>(x: &[T], lo: T, hi: T, g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(v, g)| if *v > lo && *v < hi { *g } else { T::zero() }).collect()
}

/// A clip whose rule doubles the cotangent exactly at the bounds (as a mask summed from
/// `x >= lo` and `x <= hi` would), right everywhere else: only points on the bounds show it.
#[op(name = "test/bad/clip_doubled_at_bounds", version = 1,
     signature(x: f32[n], lo: f32, hi: f32 where lo <= hi) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = vjp(clip_doubled_vjp),
     subgradient = "twice the cotangent at the bounds (wrong on purpose)", generated_tests = false)]
pub fn clip_doubled<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    clip(x, lo, hi)
}
/// Wrong at `x == lo` and `x == hi` only.
pub fn clip_doubled_vjp<T: Real>(x: &[T], lo: T, hi: T, g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(v, g)| if *v == lo || *v == hi { *g * T::from_f64(2.0) } else { clip_vjp(&[*v], lo, hi, &[*g])[0] }).collect()
}

/// A clip whose rule is 1% too large between the bounds: wrong on every element that passes
/// anything, which a draw with most elements clipped hardly shows.
#[op(name = "test/bad/clip_scaled", version = 1,
     signature(x: f32[n], lo: f32, hi: f32 where lo <= hi) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = vjp(clip_scaled_vjp),
     subgradient = "the cotangent passes where lo <= x <= hi", generated_tests = false)]
pub fn clip_scaled<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    clip(x, lo, hi)
}
/// Wrong: `1.01 g` where the cotangent passes.
pub fn clip_scaled_vjp<T: Real>(x: &[T], lo: T, hi: T, g: &[T]) -> Vec<T> {
    clip_vjp(x, lo, hi, g).into_iter().map(|v| v * T::from_f64(1.01)).collect()
}

/// Prefix sum with each running value clipped to `[lo, hi]`: `y[i] = clip(y[i - 1] + x[i])`,
/// the running value carried in f64 and each output rounded once (a running value carried in
/// `T` drifts by up to an ulp per step over a long unclipped stretch, beyond `accum(2)`:
/// conformance names that "the reference's own bits, outside the bound").
#[op(name = "test/locate/clipped_scan", version = 1,
     signature(x: f32[n], lo: f32, hi: f32 where lo <= hi) -> f32[n],
     category = reduction, tolerance = accum(2), backward = vjp(clipped_scan_vjp),
     subgradient = "the cotangent passes where the running value lies in [lo, hi] (the bounds included)")]
pub fn clipped_scan<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
    let (lo, hi) = (lo.to_f64(), hi.to_f64());
    let mut acc = 0.0f64;
    x.iter()
        .map(|v| {
            let s = acc + v.to_f64();
            acc = if s < lo {
                lo
            } else if s > hi {
                hi
            } else {
                s
            };
            T::from_f64(acc)
        })
        .collect()
}
/// Back through the scan: a running value that was clipped passes nothing back.
pub fn clipped_scan_vjp<T: Real>(x: &[T], lo: T, hi: T, g: &[T]) -> Vec<T> {
    let (lo, hi) = (lo.to_f64(), hi.to_f64());
    let mut acc = 0.0f64;
    let pass: Vec<bool> = x
        .iter()
        .map(|v| {
            let s = acc + v.to_f64();
            acc = if s < lo {
                lo
            } else if s > hi {
                hi
            } else {
                s
            };
            s >= lo && s <= hi
        })
        .collect();
    let mut out = vec![T::zero(); x.len()];
    let mut carry = T::zero();
    for i in (0..x.len()).rev() {
        carry = if pass[i] { g[i] + carry } else { T::zero() };
        out[i] = carry;
    }
    out
}

// ---- Fixtures: a rule wrong at one element ------------------------------------------------
//
// The vector fixtures declare magnitudes of 0.5..2, so that every element's derivative is of
// one size and a random direction's sum over 200 of them resolves the error of one: at the
// default magnitudes, an element of 1e-3 has a derivative far below the rounding of a sum whose
// other terms reach 1e6, and only the sweep (turned off below) could see it.

/// The element the wrong rules below get wrong.
const WRONG: usize = 17;

/// `x^3`, with its correct VJP.
#[op(name = "test/locate/cube", version = 1, signature(x: f32[n] where n >= 18) -> f32[n], magnitude(x: 0.5..2),
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp))]
pub fn cube<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| *v * *v * *v).collect()
}
/// `3 x^2 g`.
pub fn cube_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter().zip(g).map(|(x, g)| T::from_f64(3.0) * *x * *x * *g).collect()
}

/// `x^3` whose VJP is 10% too large at element 17 alone.
#[op(name = "test/bad/cube_off_at_17", version = 1, signature(x: f32[n] where n >= 18) -> f32[n], magnitude(x: 0.5..2),
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_off_vjp), generated_tests = false)]
pub fn cube_off<T: Real>(x: &[T]) -> Vec<T> {
    cube(x)
}
/// Wrong at element 17 only.
pub fn cube_off_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    let mut out = cube_vjp(x, g);
    out[WRONG] = out[WRONG] * T::from_f64(1.1);
    out
}

/// `x^3` with a correct VJP and a JVP rule 10% too large at element 17 alone: only the
/// VJP/JVP consistency check sees it.
#[op(name = "test/bad/cube_jvp_off_at_17", version = 1, signature(x: f32[n] where n >= 18) -> f32[n], magnitude(x: 0.5..2),
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp) + jvp(cube_jvp_wrong), generated_tests = false)]
pub fn cube_jvp_off<T: Real>(x: &[T]) -> Vec<T> {
    cube(x)
}
/// Wrong at element 17 only.
pub fn cube_jvp_wrong<T: Real>(x: &[T], t: &[T]) -> Vec<T> {
    let mut out: Vec<T> = x.iter().zip(t).map(|(x, t)| T::from_f64(3.0) * *x * *x * *t).collect();
    out[WRONG] = out[WRONG] * T::from_f64(1.1);
    out
}
/// The correct JVP.
pub fn cube_jvp<T: Real>(x: &[T], t: &[T]) -> Vec<T> {
    x.iter().zip(t).map(|(x, t)| T::from_f64(3.0) * *x * *x * *t).collect()
}

/// `x^3` with a correct VJP and JVP: the twin of `cube_jvp_off`.
#[op(name = "test/locate/cube_both", version = 1, signature(x: f32[n] where n >= 18) -> f32[n], magnitude(x: 0.5..2),
     category = elementwise, tolerance = ulp(2), backward = vjp(cube_vjp) + jvp(cube_jvp))]
pub fn cube_both<T: Real>(x: &[T]) -> Vec<T> {
    cube(x)
}

/// `x^3` over a matrix, whose VJP is 10% too large at row 1, column 2.
#[op(name = "test/bad/cube2d_off_at_1_2", version = 1, signature(x: f32[m, n] where m >= 2, n >= 3) -> f32[m, n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube2d_off_vjp), generated_tests = false)]
pub fn cube2d_off<T: Real>(x: &[T], m: usize, n: usize) -> Vec<T> {
    debug_assert_eq!(x.len(), m * n);
    cube(x)
}
/// Wrong at `[1, 2]` only.
pub fn cube2d_off_vjp<T: Real>(x: &[T], m: usize, n: usize, g: &[T]) -> Vec<T> {
    debug_assert_eq!(x.len(), m * n);
    let mut out = cube_vjp(x, g);
    out[n + 2] = out[n + 2] * T::from_f64(1.1);
    out
}

/// `x^3` over a matrix, with its correct VJP.
#[op(name = "test/locate/cube2d", version = 1, signature(x: f32[m, n] where m >= 2, n >= 3) -> f32[m, n],
     category = elementwise, tolerance = ulp(2), backward = vjp(cube2d_vjp))]
pub fn cube2d<T: Real>(x: &[T], m: usize, n: usize) -> Vec<T> {
    debug_assert_eq!(x.len(), m * n);
    cube(x)
}
/// `3 x^2 g`.
pub fn cube2d_vjp<T: Real>(x: &[T], m: usize, n: usize, g: &[T]) -> Vec<T> {
    debug_assert_eq!(x.len(), m * n);
    cube_vjp(x, g)
}

// ---- Kinks probed wherever a subgradient is declared ---------------------------------------

#[test]
fn an_elementwise_clip_gets_points_on_its_bounds_and_both_conventions_hold() {
    for d in [&clip::DECL, &clip_exclusive::DECL] {
        let reports = passes_everywhere(d, salted);
        // Points were placed on the bounds of every draw that had room for them (two bounds
        // within three steps of each other leave none) and the rule held at each.
        let with = reports.iter().filter(|r| r.kink_bounds > 0).count();
        assert!(4 * with >= 3 * reports.len(), "{}: bounds probed under only {with} of {} identities", d.rust_name, reports.len());
        for r in &reports {
            let (ties, zeros) = r.kinks.unwrap_or_else(|| panic!("{}: a declared subgradient gets the kink check:\n{r}", d.rust_name));
            let text = r.to_string();
            let line = format!("kinks    : {} probed ({ties} ties, {zeros} zeros, {} bounds)", ties + zeros + r.kink_bounds, r.kink_bounds);
            assert!(text.contains(&line), "{text}");
        }
    }
}

#[test]
fn a_clip_rule_wrong_only_at_its_bounds_is_rejected_there() {
    for salt in 0..IDENTITIES {
        let o = salted(salt);
        match check(&clip_doubled::DECL, o.clone()) {
            Err(e @ GradcheckError::KinkConvention { .. }) => {
                let m = e.to_string();
                assert!(
                    m.contains("the value of parameter `lo`")
                        || m.contains("the value of parameter `hi`")
                        || m.contains("the value of output `out`["),
                    "{m}"
                );
                assert!(m.contains("the convention names a value between the one-sided derivatives"), "{m}");
                let GradcheckError::KinkConvention { locus, analytic, left, right, .. } = &e else { unreachable!() };
                // Twice one of the one-sided derivatives: outside them.
                assert!(*analytic > left.max(*right) || *analytic < left.min(*right), "{m}");
                assert_eq!(locus.input, "x", "{m}");
                assert!(locus.bindings.iter().any(|(k, _)| k == "lo") && locus.bindings.iter().any(|(k, _)| k == "hi"), "{m}");
                reproduces(&clip_doubled::DECL, &e, locus, &o);
            }
            other => panic!("salt {salt}: must be rejected at a bound, got {other:?}"),
        }
    }
}

// ---- Inconclusive draws more -------------------------------------------------------------

#[test]
fn correct_rules_with_kinks_and_flat_regions_pass_under_64_identities() {
    let mut more = 0;
    for d in [&clip::DECL, &clipped_scan::DECL] {
        for r in passes_everywhere(d, salted) {
            // What was certified: at most half of the probes skipped, over the rounds drawn.
            let skipped = r.skipped + r.skipped_nonfinite + r.skipped_unresolved;
            assert!(2 * skipped <= r.probes + r.swept || r.rounds > 1, "{r}");
            assert!(r.checked() > 0 && r.rounds >= 1, "{r}");
            if r.rounds > 1 {
                more += 1;
                assert!(r.to_string().contains(&format!("over {} rounds of draws", r.rounds)), "{r}");
                assert_eq!(r.probes, r.rounds * GradcheckOptions::default().probes, "{r}");
            }
        }
    }
    // Some identities skipped more than half of their first round (all of them failed as
    // inconclusive before more rounds were drawn): the rounds were needed.
    println!("{more} of {} identities drew more than one round", 2 * IDENTITIES);
    assert!(more > 0, "no identity needed a second round");
}

#[test]
fn a_wrong_rule_is_rejected_even_where_a_round_is_mostly_skipped() {
    let mut later = 0;
    for salt in 0..IDENTITIES {
        let o = salted(salt);
        match check(&clip_scaled::DECL, o.clone()) {
            Err(e @ GradcheckError::Mismatch { .. }) => {
                let GradcheckError::Mismatch { locus, diff, allowed, .. } = &e else { unreachable!() };
                assert!(diff > allowed, "{e}");
                reproduces(&clip_scaled::DECL, &e, locus, &o);
                // Rejected in a later round: the salt named is that round's, not the one asked.
                later += (locus.salt != salt) as usize;
            }
            other => panic!("salt {salt}: must be rejected, got {other:?}"),
        }
    }
    println!("{later} of {IDENTITIES} rejections came in a later round");
    assert!(later > 0, "no rejection needed a later round");
}

/// `|x|`, whose only kink is at 0.
#[op(name = "test/locate/abs", version = 1, signature(x: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = vjp(abs_vjp), subgradient = "zero at x = 0")]
pub fn abs<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().map(|v| v.abs()).collect()
}
/// `sign(x) g`.
pub fn abs_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {
    x.iter()
        .zip(g)
        .map(|(x, g)| {
            if *x > T::zero() {
                *g
            } else if *x < T::zero() {
                -*g
            } else {
                T::zero()
            }
        })
        .collect()
}

#[test]
fn a_step_wider_than_the_kinks_stays_inconclusive_and_says_why() {
    // At h = 2e3 every probe straddles the kink at 0 (the step is h |x| below |x| = 1 and h
    // above it, for values up to 1e3): no round can be conclusive, and more rounds stop once
    // nine in ten probes of four rounds were within h of a kink. Over 400 identities: a random
    // direction whose kinks' one-sided differences cancel passes the kink test, and its
    // difference then measures the kinks (salt 179, and salt 1 at an earlier identity, accused
    // this correct rule so); it is skipped because the element its failure narrows down to is
    // itself within h of a kink (`verdict::judge`).
    let wide = |salt| GradcheckOptions { salt, h: 2.0e3, ..GradcheckOptions::default() };
    for salt in 0..400 {
        match check(&abs::DECL, wide(salt)) {
            Err(e @ GradcheckError::Inconclusive { .. }) => {
                let m = e.to_string();
                let GradcheckError::Inconclusive { rounds, skipped, probes, kinks, ref why, .. } = e else { unreachable!() };
                assert!(rounds > 1 && 2 * skipped > probes && 2 * kinks > skipped, "{m}");
                assert!(why.contains(&format!("salts {salt}, ")) && why.contains("more draws cannot bring the skips below half"), "{m}");
                assert!(m.contains(&format!("over {rounds} rounds of fresh draws")), "{m}");
                assert!(m.contains("the kinks lie closer together than the steps reach (h = 2e3)"), "{m}");
            }
            other => panic!("salt {salt}: must be inconclusive, got {other:?}"),
        }
    }
    // The same op at the default step passes under every identity.
    passes_everywhere(&abs::DECL, salted);
}

// ---- Every rejection names its element, shape, parameters and seed ---------------------------

#[test]
fn a_failing_random_direction_is_narrowed_down_to_its_element() {
    // 200 elements, nothing swept: most of the coordinates sampled miss element 17, the dense
    // directions all move it, and each failing one is narrowed down to it.
    let sparse = |salt| GradcheckOptions { salt, sweep: 0, pin: vec![("n".into(), 200)], ..GradcheckOptions::default() };
    let mut narrowed = 0;
    for salt in 0..IDENTITIES {
        match check(&cube_off::DECL, sparse(salt)) {
            Err(e @ GradcheckError::Mismatch { .. }) => {
                let m = e.to_string();
                let GradcheckError::Mismatch { locus, at, diff, allowed, .. } = &e else { unreachable!() };
                assert_eq!((locus.index, locus.shape.as_slice()), (WRONG, &[200usize][..]), "{m}");
                assert!(at.starts_with(&format!("`x`[{WRONG}]")) && diff > allowed, "{m}");
                assert!(m.contains(&format!("element `x`[{WRONG}] of `x` with shape [200], at n = 200; seed: content hash ")), "{m}");
                narrowed += at.contains("narrowed down from a failing random direction") as usize;
                reproduces(&cube_off::DECL, &e, locus, &sparse(salt));
            }
            other => panic!("salt {salt}: must be rejected, got {other:?}"),
        }
    }
    println!("{narrowed} of {IDENTITIES} rejections narrowed down from a random direction");
    assert!(2 * narrowed > IDENTITIES as usize, "only {narrowed} rejections came from a random direction");
    // The correct twin passes the same checks.
    passes_everywhere(&cube::DECL, sparse);
}

#[test]
fn a_rejection_names_the_element_of_a_matrix_by_row_and_column() {
    for salt in 0..IDENTITIES {
        let o = salted(salt);
        match check(&cube2d_off::DECL, o.clone()) {
            Err(e @ GradcheckError::Mismatch { .. }) => {
                let m = e.to_string();
                let GradcheckError::Mismatch { locus, .. } = &e else { unreachable!() };
                let n = locus.shape[1];
                assert_eq!((locus.element(), locus.index), ("`x`[1, 2]".to_string(), n + 2), "{m}");
                assert!(m.contains(&format!("(flat index {})", n + 2)), "{m}");
                let dims: Vec<&str> = locus.bindings.iter().map(|(k, _)| k.as_str()).collect();
                assert_eq!(dims, ["m", "n"], "{m}");
                reproduces(&cube2d_off::DECL, &e, locus, &o);
            }
            other => panic!("salt {salt}: must be rejected, got {other:?}"),
        }
    }
    passes_everywhere(&cube2d::DECL, salted);
}

#[test]
fn a_vjp_and_jvp_disagreeing_at_one_element_name_it() {
    let sparse = |salt| GradcheckOptions { salt, sweep: 0, pin: vec![("n".into(), 200)], ..GradcheckOptions::default() };
    for salt in 0..IDENTITIES {
        match check(&cube_jvp_off::DECL, sparse(salt)) {
            Err(e @ GradcheckError::Inconsistent { .. }) => {
                let m = e.to_string();
                assert!(m.contains(&format!("`x`[{WRONG}]")) && m.contains("with shape [200], at n = 200"), "{m}");
                assert!(m.contains(&format!("content hash {} with salt {salt} ", hash(&cube_jvp_off::DECL))), "{m}");
                assert_eq!(check(&cube_jvp_off::DECL, sparse(salt)).expect_err("deterministic"), e);
            }
            other => panic!("salt {salt}: must be rejected, got {other:?}"),
        }
    }
    passes_everywhere(&cube_both::DECL, sparse);
}

/// The content hash gradcheck reports for `decl` (from a passing twin's report would do too;
/// this asks the registry, as a user would).
fn hash(decl: &'static OpDecl) -> String {
    op_runtime::Registry::new().register(decl).expect("registers").op().hash_hex()
}

#[test]
fn the_negative_controls_still_reject_the_fixtures() {
    for d in [&clip_doubled::DECL, &clip_scaled::DECL, &cube_off::DECL, &cube2d_off::DECL] {
        assert!(assert_gradcheck_rejected(d).is_rejection(), "{}", d.rust_name);
    }
}
