//! A correct rule passes under 64 different identities (issue 33, item 5). An op's identity
//! (its content hash, which seeds every draw of gradcheck) changes with its name, so 64 copies of
//! one op under 64 names are 64 independent draws of bindings, values and probes, as an
//! unrelated rename would make them. The op is the hardest correct case known: a moving sum as
//! differences of prefix sums, whose outputs round at the scale of the prefix sums (up to 1e3
//! times the outputs' own), and whose correct VJP one draw in about a hundred used to accuse
//! (a difference over `h` off by the rounding of `x + h` on the prefix sums' grid, the same at
//! every dyadic step). Each copy is checked at salt 0, as the generated tests check it.

use op_runtime::gradcheck::{gradcheck_with, GradcheckOptions};
use op_runtime::{op, OpDecl, Real};

/// Sums of `w` consecutive elements, as differences of the running sum.
fn prefix_moving_sum<T: Real>(x: &[T], w: u32) -> Vec<T> {
    let mut prefix = vec![T::zero()];
    for v in x {
        let last = prefix[prefix.len() - 1];
        prefix.push(last + *v);
    }
    let w = w as usize;
    (0..x.len() + 1 - w).map(|i| prefix[i + w] - prefix[i]).collect()
}

/// Each element's cotangent: the sum of the cotangents of the windows holding it.
pub fn window_vjp<T: Real>(x: &[T], w: u32, g: &[T]) -> Vec<T> {
    let mut d = vec![T::zero(); x.len()];
    for (i, gi) in g.iter().enumerate() {
        for dj in &mut d[i..i + w as usize] {
            *dj += *gi;
        }
    }
    d
}

/// One copy of the moving sum per `(fn name, op name)`, each with the correct VJP.
macro_rules! copies {
    ($($f:ident, $name:literal;)*) => {
        $(
            /// The moving sum by prefix differences, under its own name.
            #[op(name = $name, version = 1,
                 signature(x: f64[n], w: u32 where 1 <= w, w <= n) -> f64[n - w + 1],
                 category = reduction, tolerance = accum(2), backward = vjp(window_vjp), generated_tests = false)]
            pub fn $f<T: Real>(x: &[T], w: u32) -> Vec<T> {
                prefix_moving_sum(x, w)
            }
        )*
        /// Every copy's declaration.
        const COPIES: &[&OpDecl] = &[$(&$f::DECL),*];
    };
}

copies! {
    moving_sum_00, "test/identities/moving_sum_00";
    moving_sum_01, "test/identities/moving_sum_01";
    moving_sum_02, "test/identities/moving_sum_02";
    moving_sum_03, "test/identities/moving_sum_03";
    moving_sum_04, "test/identities/moving_sum_04";
    moving_sum_05, "test/identities/moving_sum_05";
    moving_sum_06, "test/identities/moving_sum_06";
    moving_sum_07, "test/identities/moving_sum_07";
    moving_sum_08, "test/identities/moving_sum_08";
    moving_sum_09, "test/identities/moving_sum_09";
    moving_sum_10, "test/identities/moving_sum_10";
    moving_sum_11, "test/identities/moving_sum_11";
    moving_sum_12, "test/identities/moving_sum_12";
    moving_sum_13, "test/identities/moving_sum_13";
    moving_sum_14, "test/identities/moving_sum_14";
    moving_sum_15, "test/identities/moving_sum_15";
    moving_sum_16, "test/identities/moving_sum_16";
    moving_sum_17, "test/identities/moving_sum_17";
    moving_sum_18, "test/identities/moving_sum_18";
    moving_sum_19, "test/identities/moving_sum_19";
    moving_sum_20, "test/identities/moving_sum_20";
    moving_sum_21, "test/identities/moving_sum_21";
    moving_sum_22, "test/identities/moving_sum_22";
    moving_sum_23, "test/identities/moving_sum_23";
    moving_sum_24, "test/identities/moving_sum_24";
    moving_sum_25, "test/identities/moving_sum_25";
    moving_sum_26, "test/identities/moving_sum_26";
    moving_sum_27, "test/identities/moving_sum_27";
    moving_sum_28, "test/identities/moving_sum_28";
    moving_sum_29, "test/identities/moving_sum_29";
    moving_sum_30, "test/identities/moving_sum_30";
    moving_sum_31, "test/identities/moving_sum_31";
    moving_sum_32, "test/identities/moving_sum_32";
    moving_sum_33, "test/identities/moving_sum_33";
    moving_sum_34, "test/identities/moving_sum_34";
    moving_sum_35, "test/identities/moving_sum_35";
    moving_sum_36, "test/identities/moving_sum_36";
    moving_sum_37, "test/identities/moving_sum_37";
    moving_sum_38, "test/identities/moving_sum_38";
    moving_sum_39, "test/identities/moving_sum_39";
    moving_sum_40, "test/identities/moving_sum_40";
    moving_sum_41, "test/identities/moving_sum_41";
    moving_sum_42, "test/identities/moving_sum_42";
    moving_sum_43, "test/identities/moving_sum_43";
    moving_sum_44, "test/identities/moving_sum_44";
    moving_sum_45, "test/identities/moving_sum_45";
    moving_sum_46, "test/identities/moving_sum_46";
    moving_sum_47, "test/identities/moving_sum_47";
    moving_sum_48, "test/identities/moving_sum_48";
    moving_sum_49, "test/identities/moving_sum_49";
    moving_sum_50, "test/identities/moving_sum_50";
    moving_sum_51, "test/identities/moving_sum_51";
    moving_sum_52, "test/identities/moving_sum_52";
    moving_sum_53, "test/identities/moving_sum_53";
    moving_sum_54, "test/identities/moving_sum_54";
    moving_sum_55, "test/identities/moving_sum_55";
    moving_sum_56, "test/identities/moving_sum_56";
    moving_sum_57, "test/identities/moving_sum_57";
    moving_sum_58, "test/identities/moving_sum_58";
    moving_sum_59, "test/identities/moving_sum_59";
    moving_sum_60, "test/identities/moving_sum_60";
    moving_sum_61, "test/identities/moving_sum_61";
    moving_sum_62, "test/identities/moving_sum_62";
    moving_sum_63, "test/identities/moving_sum_63";
}

#[test]
fn a_correct_rule_passes_under_64_identities() {
    let mut hashes = std::collections::BTreeSet::new();
    let mut rounds = 0;
    for d in COPIES {
        let r = gradcheck_with(op_runtime::registry(), d, &GradcheckOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", d.rust_name));
        assert!(r.negative_control_rejected() && r.checked() > 0, "{r}");
        hashes.insert(r.content_hash.clone());
        rounds += r.rounds;
    }
    // 64 identities, not one drawn 64 times.
    assert_eq!(hashes.len(), 64);
    println!("64 identities passed, {rounds} rounds of draws in all");
}
