//! Classes that name the defect: what a rejected kernel's mismatches have in common, decided
//! from every mismatching element of a case (the classes its data shows, here; those that need
//! the reference run again, in `explain`), and then from the whole failing set: a report leads
//! with the class that explains the most failing cases, never with the class of whichever case
//! happened to fail first. Owns the classes, their order and that decision; it must not decide
//! a verdict (`compare`) or run anything.

use op_contract::contract::DType;
use op_core::tensor::Data;

/// What the defect of a rejected output is, decided from every element, not only the first.
#[derive(Clone, Debug, PartialEq)]
pub enum Class {
    /// A write into a guard band: past the end (`after`) or before the start (`before`).
    OutOfBounds(&'static str),
    /// At least one element still holds the canary: it was never written.
    Unwritten,
    /// Every mismatch is a zero of the other sign.
    SignOfZero,
    /// Every mismatch involves NaN: another payload, or NaN against a number.
    Nan,
    /// Every mismatch is a NaN where no input is NaN and a partial result can overflow: an
    /// overflow to infinity met the opposite infinity (`inf - inf`).
    OverflowNan,
    /// The output is the reference's on the same inputs with NaN placed elsewhere in the order
    /// (NaN taken as the largest or the smallest value whatever its sign, or its sign ignored),
    /// against the reference's IEEE 754 total order.
    NanOrder,
    /// Every mismatch is within 1 ulp (finite values).
    OneUlp,
    /// `out[i]` holds the reference's `out[i + k]` wherever that exists.
    Shifted(i64),
    /// The output is the reference's with another value of an integer parameter.
    WrongWindow {
        /// The parameter.
        param: String,
        /// The value the case has.
        was: i128,
        /// The value whose reference output the kernel returned.
        matches: i128,
    },
    /// Each output element is another order statistic of the elements the reference selects
    /// it from: the value `k` distinct values above (below, for negative `k`) the reference's
    /// (a median taking the wrong middle element).
    OrderStatistic(i64),
    /// Each output element is the largest (`max`) or smallest (`min`) of the elements the
    /// reference selects it from (a window's maximum where the op wants another statistic).
    WindowExtreme(&'static str),
    /// The output is the reference's on the same inputs with ties between equal elements
    /// broken the other way (later elements first).
    TieOrder,
    /// The output holds exactly the reference's values, in another order.
    Permuted,
    /// `accum` only: every mismatching element is bit for bit the reference's own output, which
    /// is itself outside the bound of the f64 reference (a reference that accumulates in its
    /// own precision, and any kernel that copies it).
    ReferenceBits,
    /// None of the above: wrong values.
    Value,
    /// `accum` only, where nothing above explains it: every mismatching element is finite and
    /// outside the bound, by at most the ratio held (`|actual - r64| / bound`, over them all).
    AccumBound(f64),
    /// The backend failed, or returned the wrong number or length of outputs.
    Failed,
    /// The kernel's process died on the case: a signal (`SIGSEGV`, `SIGABRT`, ...) or an exit
    /// in the middle of the call (it ran in a child process, so the verifier went on).
    Crashed,
    /// The kernel ran out of memory on the case: an allocation failed under the memory limit.
    OutOfMemory,
    /// The kernel ran past its time limit on the case, in two fresh runs.
    TimedOut,
    /// The kernel returned different results for the same case in two runs.
    NonDeterministic,
}

impl Class {
    /// A short name, one per kind (shifts by different `k` are one kind).
    pub fn name(&self) -> &'static str {
        match self {
            Class::OutOfBounds("before") => "write before the start (guard band)",
            Class::OutOfBounds(_) => "write past the end (guard band)",
            Class::Unwritten => "element never written (canary intact)",
            Class::SignOfZero => "differs only in the sign of zero",
            Class::Nan => "NaN payload or NaN against a number",
            Class::OverflowNan => "overflow to infinity meeting the opposite infinity",
            Class::NanOrder => "NaN ordering",
            Class::OneUlp => "within 1 ulp",
            Class::Shifted(_) => "output shifted",
            Class::WrongWindow { .. } => "values from the wrong window",
            Class::OrderStatistic(_) => "wrong order statistic",
            Class::WindowExtreme("max") => "window maximum",
            Class::WindowExtreme(_) => "window minimum",
            Class::TieOrder => "tie order",
            Class::Permuted => "right values in the wrong order",
            Class::ReferenceBits => "the reference's own bits, outside the bound",
            Class::Value => "wrong values",
            Class::AccumBound(_) => "exceeds the accum bound",
            Class::Failed => "the backend failed",
            Class::Crashed => "crashed",
            Class::OutOfMemory => "out of memory",
            Class::TimedOut => "timed out",
            Class::NonDeterministic => "non-deterministic",
        }
    }

    /// Whether two classes are the same kind of defect (a report lists one case per kind).
    pub fn same_kind(&self, other: &Class) -> bool {
        self.name() == other.name()
    }

    /// How telling the class is of its cause, most telling first: where one failing case is
    /// consistent with several classes (on sorted data, a median taking the next element is
    /// also a shifted output), the more specific one names it. It only breaks ties between
    /// classes that explain as many failing cases (the report orders classes by how many they explain).
    /// NaN ordering comes before the window and order classes: a case it explains holds a NaN
    /// and is the reference's with the NaN moved, which a one-window case also shows as
    /// another rank; a kernel whose rank or window is wrong fails NaN-free cases as well, so
    /// those classes lead by count, and a tie means every failing case turned on a NaN.
    pub fn rank(&self) -> u8 {
        match self {
            Class::OutOfBounds(_) => 0,
            Class::Unwritten => 1,
            Class::ReferenceBits => 2,
            Class::NanOrder => 3,
            Class::WrongWindow { .. } => 4,
            Class::WindowExtreme(_) => 5,
            Class::OrderStatistic(_) => 6,
            Class::Shifted(_) => 7,
            Class::TieOrder => 8,
            Class::OverflowNan => 9,
            Class::Nan => 10,
            Class::Permuted => 11,
            Class::OneUlp => 12,
            Class::SignOfZero => 13,
            Class::Value | Class::AccumBound(_) => 14,
            Class::Failed => 15,
            // A case that crashed, ran out of memory or timed out has no other class; a
            // non-deterministic one is named so whatever its values also show.
            Class::Crashed | Class::OutOfMemory | Class::TimedOut | Class::NonDeterministic => 0,
        }
    }
}

/// The elements of one guarded output a class is decided on: the anchor (the reference's
/// output, or for `accum` the f64 reference rounded to the dtype), the reference's own output,
/// the kernel's (with `guard` canaries each side) and the mismatching indices.
pub struct Mismatches<'a> {
    /// The output's dtype.
    pub dtype: DType,
    /// What the kernel should have returned.
    pub anchor: &'a Data,
    /// The reference's own output, where the anchor is another (`accum`).
    pub reference: Option<&'a Data>,
    /// The kernel's output, guarded.
    pub actual: &'a Data,
    /// Canary elements each side of `actual`.
    pub guard: usize,
    /// The mismatching indices, ascending.
    pub bad: &'a [usize],
    /// The canary's bits.
    pub canary: u64,
}

impl Mismatches<'_> {
    fn ab(&self, i: usize) -> u64 {
        self.actual.bits(self.guard + i).unwrap_or_default()
    }
    fn eb(&self, i: usize) -> u64 {
        self.anchor.bits(i).unwrap_or_default()
    }
    fn av(&self, i: usize) -> f64 {
        self.actual.get_f64(self.guard + i).unwrap_or(f64::NAN)
    }
    fn ev(&self, i: usize) -> f64 {
        self.anchor.get_f64(i).unwrap_or(f64::NAN)
    }

    /// Every class the data alone shows (most telling first; empty for wrong values): an
    /// unwritten element decides alone; otherwise each of the reference's own bits (`accum`),
    /// the sign of zero, NaN, 1 ulp, a shift and a permutation that holds of every mismatch.
    pub fn classes(&self) -> Vec<Class> {
        let bad = self.bad;
        if bad.iter().any(|&i| self.ab(i) == self.canary) {
            return vec![Class::Unwritten];
        }
        let mut out = Vec::new();
        if self.reference.is_some_and(|r| bad.iter().all(|&i| r.bits(i) == Some(self.ab(i)))) {
            out.push(Class::ReferenceBits);
        }
        if self.dtype.is_float() {
            if bad.iter().all(|&i| self.ev(i) == 0.0 && self.av(i) == 0.0) {
                out.push(Class::SignOfZero);
            }
            if bad.iter().all(|&i| self.ev(i).is_nan() || self.av(i).is_nan()) {
                out.push(Class::Nan);
            }
            // (Zeros of both signs are no ulp apart: that is the sign of zero's class.)
            let one_ulp = |i: usize| {
                self.ev(i).is_finite()
                    && self.av(i).is_finite()
                    && ulps(self.eb(i), self.ab(i), self.dtype) <= 1
                    && (self.ev(i) != 0.0 || self.av(i) != 0.0)
            };
            if bad.iter().all(|&i| one_ulp(i)) {
                out.push(Class::OneUlp);
            }
        }
        if let Some(k) = self.shift() {
            out.push(Class::Shifted(k));
        }
        if self.permuted() {
            out.push(Class::Permuted);
        }
        out.sort_by_key(Class::rank);
        out
    }

    /// The shift `k` (`1, -1, 2, -2, ..., 8, -8`) such that every element `out[i]` whose `i + k`
    /// lies in the output (not only the mismatching ones) holds the reference's `out[i + k]` bit
    /// for bit, explaining at least two mismatches and at least half of them, with at least two
    /// distinct values among those elements (so that few-valued data cannot make a coincidence
    /// look like a shift).
    fn shift(&self) -> Option<i64> {
        let n = self.anchor.len();
        (1..=8i64).flat_map(|k| [k, -k]).find(|&k| {
            let range = (0..n).filter(|i| (0..n as i64).contains(&(*i as i64 + k)));
            let mut first = None;
            let mut distinct = false;
            for i in range {
                let b = self.ab(i);
                if b != self.eb((i as i64 + k) as usize) {
                    return false;
                }
                distinct |= first.is_some_and(|f| f != b);
                first.get_or_insert(b);
            }
            let explained = self.bad.iter().filter(|i| (0..n as i64).contains(&(**i as i64 + k))).count();
            explained >= 2 && 2 * explained >= self.bad.len() && distinct
        })
    }

    /// Whether the output holds exactly the anchor's values (bit for bit, as a multiset) in
    /// another order, with at least two mismatches.
    fn permuted(&self) -> bool {
        let n = self.anchor.len();
        if self.bad.len() < 2 {
            return false;
        }
        let mut want: Vec<u64> = (0..n).map(|i| self.eb(i)).collect();
        let mut got: Vec<u64> = (0..n).map(|i| self.ab(i)).collect();
        want.sort_unstable();
        got.sort_unstable();
        want == got
    }
}

/// Units in the last place between two finite values of a float dtype (via ordered bits).
pub fn ulps(a_bits: u64, b_bits: u64, dtype: DType) -> u64 {
    let w = dtype.size() * 8;
    let sign = 1u64 << (w - 1);
    let ord = |b: u64| -> i128 {
        if b & sign != 0 {
            -((b & !sign) as i128)
        } else {
            b as i128
        }
    };
    (ord(a_bits) - ord(b_bits)).unsigned_abs().min(u64::MAX as u128) as u64
}

/// One class of a report and the failing cases behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct Covered {
    /// The class (its value from the first case it explains).
    pub class: Class,
    /// The first (smallest) failing case it explains, an index into the diagnoses.
    pub first: usize,
    /// How many of the failing cases it explains.
    pub explained: usize,
}

/// The classes a report lists, from the whole failing set: `diagnoses` holds, for every failing
/// case in corpus order (smallest first), every class it is consistent with (`[Value]` where
/// none is). The first listed is the kind that explains the most failing cases (ties: the most
/// telling, [`Class::rank`]); then, among the cases it leaves unexplained, the next; until every
/// failing case is explained. A class that holds only on a few cases (a shift on the sorted
/// ones, NaN on the cases with NaN) therefore never leads a defect that shows on all of them.
pub fn cover(diagnoses: &[Vec<Class>]) -> Vec<Covered> {
    let mut left: Vec<usize> = (0..diagnoses.len()).collect();
    let mut out: Vec<Covered> = Vec::new();
    while !left.is_empty() {
        // Every kind among the cases left, with how many it explains and its first case.
        let mut kinds: Vec<Covered> = Vec::new();
        for &c in &left {
            for class in &diagnoses[c] {
                match kinds.iter_mut().find(|k| k.class.same_kind(class)) {
                    Some(k) => k.explained += 1,
                    None => kinds.push(Covered { class: class.clone(), first: c, explained: 1 }),
                }
            }
        }
        let Some(best) = kinds.into_iter().min_by_key(|k| (std::cmp::Reverse(k.explained), k.class.rank())) else { break };
        left.retain(|c| !diagnoses[*c].iter().any(|k| k.same_kind(&best.class)));
        out.push(best);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_that_explains_most_failing_cases_leads() {
        use Class::*;
        // A median taking the next element: a shift too on the sorted cases, but only the order
        // statistic explains the random ones.
        let d = vec![
            vec![OrderStatistic(1), Shifted(1)],
            vec![OrderStatistic(1)],
            vec![OrderStatistic(1)],
            vec![Shifted(1), OrderStatistic(1)],
        ];
        let c = cover(&d);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].class.clone(), c[0].first, c[0].explained), (OrderStatistic(1), 0, 4));
        // NaN cases failing first do not lead a kernel wrong everywhere else.
        let d = vec![vec![Nan], vec![Nan], vec![Value], vec![Value], vec![Value]];
        let c = cover(&d);
        assert_eq!(c.iter().map(|k| (k.class.clone(), k.explained)).collect::<Vec<_>>(), vec![(Value, 3), (Nan, 2)]);
        // Equal counts: the most telling class.
        let d = vec![vec![SignOfZero, Permuted], vec![Permuted, SignOfZero]];
        assert_eq!(cover(&d)[0].class, Permuted);
        // A median ordering NaN last fails only where a window holds a NaN; a one-window case
        // also reads as the next rank. Tied, NaN ordering names it; a kernel taking the wrong
        // rank fails NaN-free cases too and leads by count.
        let d = vec![vec![OrderStatistic(1), NanOrder], vec![NanOrder, OrderStatistic(1)]];
        assert_eq!(cover(&d)[0].class, NanOrder);
        let d = vec![vec![OrderStatistic(1), NanOrder], vec![OrderStatistic(1)], vec![OrderStatistic(1)]];
        assert_eq!(cover(&d)[0].class, OrderStatistic(1));
        // Shifts by different amounts are one kind; the first case's shift represents it.
        let d = vec![vec![Shifted(-2)], vec![Shifted(1)]];
        assert_eq!(cover(&d), vec![Covered { class: Shifted(-2), first: 0, explained: 2 }]);
        assert!(cover(&[]).is_empty());
    }
}
