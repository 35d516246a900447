//! What a passing gradcheck reports, and the corruptions its negative control applies. Owns
//! the report's data and its text; it must not measure or judge anything.

use super::draw::DrawRange;
#[cfg(test)]
use super::draw::Narrowed;
use std::fmt;

/// A deliberate corruption of a backward, applied to its result.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum Corruption {
    /// Every gradient element multiplied by a factor.
    Scaled(f64),
    /// Every gradient element negated.
    SignFlipped,
    /// Each element receives its right neighbour's gradient (routed one element over).
    Neighbour,
    /// Every gradient element zero.
    Zero,
}

impl Corruption {
    pub(super) fn apply(self, own: f64, neighbour: f64) -> f64 {
        match self {
            Corruption::Scaled(f) => own * f,
            Corruption::SignFlipped => -own,
            Corruption::Neighbour => neighbour,
            Corruption::Zero => 0.0,
        }
    }
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Corruption::Scaled(k) => write!(f, "scaled by {k}"),
            Corruption::SignFlipped => f.write_str("sign flipped"),
            Corruption::Neighbour => f.write_str("routed to the neighbouring element"),
            Corruption::Zero => f.write_str("zeroed"),
        }
    }
}

/// What the negative control did with one corruption.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ControlOutcome {
    /// The corruption.
    pub corruption: Corruption,
    /// Whether it must be rejected: always for scaling and sign flips; for neighbour routing,
    /// where it changes the backward beyond the bound at some probe (else it proves nothing).
    pub applicable: bool,
    /// Whether the check rejected it.
    pub rejected: bool,
    /// How far the corrupted backward landed from the numeric derivative, in units of the
    /// bound: the largest `|corrupted - numeric| / allowed` over the checked probes (above 1
    /// rejects; the margin by which the control was caught).
    pub margin: f64,
}

/// One checked probe: the declared backward against central differences, and the bound.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbePoint {
    /// Where it looked: `` `x`[3] `` (one element) or `a random direction`.
    pub at: String,
    /// The declared backward along the probe's direction.
    #[serde(with = "op_core::nonfinite")]
    pub analytic: f64,
    /// The central difference of the reference along it.
    #[serde(with = "op_core::nonfinite")]
    pub numeric: f64,
    /// The bound applied at this probe.
    #[serde(with = "op_core::nonfinite")]
    pub allowed: f64,
}

/// The backward form that was checked.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum BackwardForm {
    /// A declared VJP.
    Vjp {
        /// The VJP rule's path.
        path: String,
    },
    /// Declared JVP rules (one per differentiable input).
    Jvp {
        /// The JVP rules' paths.
        rules: Vec<String>,
    },
    /// Both; checked against each other too.
    VjpJvp {
        /// The VJP rule's path.
        vjp: String,
        /// The JVP rules' paths.
        rules: Vec<String>,
    },
    /// Derived from the composite graph on the tape.
    Composite {
        /// The graph builder's path (empty if unnamed).
        graph: String,
        /// The ops the graph recorded on the tape, in order.
        ops: Vec<String>,
    },
}

impl BackwardForm {
    pub(super) fn corrupted_name(&self) -> &'static str {
        match self {
            BackwardForm::Jvp { .. } => "jvp",
            _ => "vjp",
        }
    }
}

/// The round a gradcheck draws at the reach of the parameter space, once its rounds are
/// conclusive: each integer parameter at the largest value admitted among its constraints'
/// literals (one either side) and 8 to 64, dims up to 64. Its sweep's probes are judged (a
/// failing one rejects) but kept out of the report's other counts, which describe the rounds
/// the header's binding comes from.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ReachRound {
    /// Its dims and integer parameters.
    pub bindings: Vec<(String, String)>,
    /// Its salt (top 12 bits `0x5EA`; `GradcheckOptions::salt` draws its rounds there).
    pub salt: u64,
    /// Probes measured (its sweep: every element alone, up to 256 per value draw).
    pub probes: usize,
    /// Probes skipped (within h of a kink, below the outputs' resolution, forward not finite).
    pub skipped: usize,
    /// Largest |analytic - numeric| / allowed over its checked probes (below 1 passes).
    pub worst_ratio: f64,
}

/// The result of a passing gradcheck. `Display` prints the report.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GradcheckReport {
    /// `name@version`.
    pub op: String,
    /// Content hash (hex).
    pub content_hash: String,
    /// The generated binding shown in the header (parameters, else dims).
    pub bindings: Vec<(String, String)>,
    /// The reference function's name.
    pub reference: String,
    /// The op's description (first sentence).
    pub description: String,
    /// The backward form checked.
    pub backward: BackwardForm,
    /// The declared subgradient rule, if any.
    pub subgradient: Option<String>,
    /// Central-difference step.
    pub h: f64,
    /// Probes sampled (random cotangent; a coordinate chosen where the outputs resolve it, or a
    /// dense direction), over every round.
    pub probes: usize,
    /// Probes of the per-element sweep: elements probed one at a time along their own
    /// coordinate, under one cotangent per draw (every element where the inputs are small).
    pub swept: usize,
    /// Probes skipped because one-sided differences disagreed (a kink within h).
    pub skipped: usize,
    /// Probes skipped because the forward was not finite near the point.
    pub skipped_nonfinite: usize,
    /// Probes skipped because the outputs could not resolve the derivative: the backward
    /// agreed within the bound, but the bound was not small against the derivative.
    pub skipped_unresolved: usize,
    /// Rounds of draws (1 unless more than half of the first round's probes were skipped: each
    /// further round draws its own binding and values; the counts above cover them all).
    pub rounds: usize,
    /// The salt of the last round, whose binding the header shows and where the kinks were
    /// probed (`GradcheckOptions::salt` draws it first).
    pub salt: u64,
    /// The magnitudes each draw's values came from, for the inputs without a declared range
    /// (empty where every float input declares one).
    pub ranges: Vec<DrawRange>,
    /// Declared magnitude ranges, as `x: lo..hi`.
    pub declared_magnitudes: Vec<String>,
    /// `an order crossing` (selection ops) or `a kink`.
    pub kink_word: String,
    /// Points placed on kinks where the convention was checked (ties, zeros); `None` for ops
    /// without kinks (not a `selection` op, no `subgradient` declared: not probed).
    pub kinks: Option<(usize, usize)>,
    /// Points placed on bounds (an element set to a parameter's or an output's value, such as a
    /// clip's bound) where the convention was checked; 0 where kinks were not probed.
    pub kink_bounds: usize,
    /// Largest |analytic - numeric| over checked probes.
    pub max_abs_err: f64,
    /// That error relative to `max(|numeric|, |analytic|)` at its probe.
    pub max_rel_err: f64,
    /// The bound applied at that probe.
    pub bound_applied: f64,
    /// Largest |analytic - numeric| / allowed (below 1 passes).
    pub worst_ratio: f64,
    /// The declared tolerance class.
    pub tolerance: String,
    /// The relative term of the bound: f64 rounding, or a `loose` class's `rtol` (see
    /// `declared_bound`).
    pub rel_bound: f64,
    /// Largest |<u, J v> - <J^T u, v>| where both VJP and JVP are declared.
    pub consistency: Option<f64>,
    /// The negative control, one outcome per corruption tried.
    pub negative_control: Vec<ControlOutcome>,
    /// The smallest relative error of the backward the probes prove they catch (a backward
    /// scaled by `1 + delta` is among the corruptions, and was rejected); `None` where every
    /// checked probe has a zero backward.
    pub smallest_caught: Option<f64>,
    /// Every checked probe (sampled and swept, skips left out), in the order measured.
    pub points: Vec<ProbePoint>,
    /// The round at the reach of the parameter space, or why there was none (no admissible
    /// binding there, a reference not finite on its values, or a run whose own salt drew its
    /// rounds there).
    pub reach: Result<ReachRound, String>,
}

impl GradcheckReport {
    /// JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl fmt::Display for GradcheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut head: Vec<String> = self.bindings.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        head.push("reference path".into());
        head.push("f64".into());
        writeln!(f, "gradcheck  {}   ({})", self.op, head.join(", "))?;
        let desc = if self.description.is_empty() { String::new() } else { format!(" ({})", self.description) };
        writeln!(f, "  forward  : author reference `{}`{desc}", self.reference)?;
        let sub = self.subgradient.as_ref().map(|s| format!(" -- {s}")).unwrap_or_default();
        match &self.backward {
            BackwardForm::Vjp { path } => writeln!(f, "  vjp      : declared backward `{path}`{sub}")?,
            BackwardForm::Jvp { rules } => writeln!(f, "  jvp      : declared rules {}{sub}", ticks(rules))?,
            BackwardForm::VjpJvp { vjp, rules } => {
                writeln!(f, "  vjp      : declared backward `{vjp}`{sub}")?;
                let c = self.consistency.map(|c| format!(" (max difference {c:.1e})")).unwrap_or_default();
                writeln!(f, "  jvp      : declared rules {}; <u, J v> = <J^T u, v> on every probe{c}", ticks(rules))?;
            }
            BackwardForm::Composite { graph, ops } => {
                writeln!(f, "  vjp      : derived from the composite graph `{graph}` ({} on the tape){sub}", ops.join(" -> "))?
            }
        }
        write!(
            f,
            "  probes   : {} sampled and {} swept (each element alone), {} checked, central differences, h = {:e} (relative below |x| = 1)",
            self.probes,
            self.swept,
            self.checked(),
            self.h
        )?;
        if self.rounds > 1 {
            write!(f, ", over {} rounds of draws (more than half of a round skipped draws another)", self.rounds)?;
        }
        writeln!(f)?;
        writeln!(f, "  values   : {}", self.values_line())?;
        match &self.reach {
            Ok(r) => {
                let at: Vec<String> = r.bindings.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                writeln!(
                    f,
                    "  reach    : one more round at {} (integer parameters at their largest admitted value, dims up to 64; salt {}): {} probes swept, {} skipped, worst |difference| / bound {:.2}",
                    at.join(", "),
                    r.salt,
                    r.probes,
                    r.skipped,
                    r.worst_ratio
                )?;
            }
            Err(why) => writeln!(f, "  reach    : no round at the reach of the parameter space: {why}")?,
        }
        write!(f, "  skipped  : {} within h of {} (no derivative exists there)", self.skipped, self.kink_word)?;
        if self.skipped_unresolved > 0 {
            write!(
                f,
                "; {} below the outputs' resolution (the backward agreed, within a bound too wide to certify it)",
                self.skipped_unresolved
            )?;
        }
        if self.skipped_nonfinite > 0 {
            write!(f, "; {} where the forward is not finite", self.skipped_nonfinite)?;
        }
        writeln!(f)?;
        match self.kinks {
            Some((ties, zeros)) => writeln!(
                f,
                "  kinks    : {} probed ({ties} ties, {zeros} zeros, {} bounds), convention held (ties in index order: the earlier element's derivative from below, the later's from above; zeros and bounds between the one-sided derivatives)",
                ties + zeros + self.kink_bounds,
                self.kink_bounds
            )?,
            None => writeln!(f, "  kinks    : not probed (no kinks in this category)")?,
        }
        writeln!(
            f,
            "  bound    : max |analytic - numeric| = {:.1e} (relative {:.1e}) against the bound applied there {:.1e} (declared {}: relative {:.1e} plus the probe's truncation, rounding and the outputs' resolution in f64)",
            self.max_abs_err, self.max_rel_err, self.bound_applied, self.tolerance, self.rel_bound
        )?;
        write!(f, "  negative control : corrupted {} {}", self.backward.corrupted_name(), self.negative_control_verdict())?;
        match (self.smallest_caught, self.negative_control_rejected()) {
            (Some(d), true) => writeln!(f, "; a relative error of {d:.1e} or more is caught"),
            _ => writeln!(f),
        }
    }
}

impl GradcheckReport {
    /// Probes compared with the bound: sampled and swept, less every skip.
    pub fn checked(&self) -> usize {
        (self.probes + self.swept).saturating_sub(self.skipped + self.skipped_nonfinite + self.skipped_unresolved)
    }

    /// The values line: the declared ranges, then the default ladder's ranges the draws used
    /// and why any was narrowed.
    fn values_line(&self) -> String {
        let mut parts: Vec<String> = self.declared_magnitudes.iter().map(|m| format!("{m} (declared)")).collect();
        let mut ranges: Vec<(String, usize, Vec<String>)> = Vec::new();
        for r in &self.ranges {
            let text = format!("{:e}..{:e}", r.lo, r.hi);
            let mut why: Vec<String> = r.narrowed.iter().map(|n| n.to_string()).collect();
            why.dedup();
            match ranges.iter_mut().find(|(t, _, _)| *t == text) {
                Some((_, n, w)) => {
                    *n += 1;
                    for x in why {
                        if !w.contains(&x) {
                            w.push(x);
                        }
                    }
                }
                None => ranges.push((text, 1, why)),
            }
        }
        for (text, n, why) in ranges {
            let why = if why.is_empty() { String::new() } else { format!(", narrowed: {}", why.join(", ")) };
            parts.push(format!("{text} in {n} of {} draws{why}", self.ranges.len()));
        }
        format!("log-uniform magnitudes, both signs, inside each input's domain: {}", parts.join("; "))
    }

    /// Whether the negative control did its job, judged from the recorded outcomes: at least
    /// one corruption applied, and every applicable one was rejected.
    pub fn negative_control_rejected(&self) -> bool {
        self.negative_control.iter().any(|c| c.applicable) && self.negative_control.iter().all(|c| !c.applicable || c.rejected)
    }

    /// The negative-control verdict as the report prints it, from the recorded outcomes:
    /// `REJECTED` (which corruptions were tried is in `negative_control`),
    /// `ACCEPTED (<corruptions that passed>)`, or `NOT RUN` when no corruption applied.
    fn negative_control_verdict(&self) -> String {
        let passed: Vec<String> =
            self.negative_control.iter().filter(|c| c.applicable && !c.rejected).map(|c| c.corruption.to_string()).collect();
        if !passed.is_empty() {
            format!("ACCEPTED ({}): the check could not fail", passed.join(", "))
        } else if self.negative_control_rejected() {
            "REJECTED".to_string()
        } else {
            "NOT RUN (no corruption changed the backward beyond the bound)".to_string()
        }
    }
}

fn ticks(v: &[String]) -> String {
    v.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(corruption: Corruption, applicable: bool, rejected: bool) -> ControlOutcome {
        ControlOutcome { corruption, applicable, rejected, margin: if rejected { 2.0 } else { 0.5 } }
    }

    /// A report with every count at its plainest.
    fn report() -> GradcheckReport {
        GradcheckReport {
            op: "test/x@1".into(),
            content_hash: String::new(),
            bindings: vec![],
            reference: "x".into(),
            description: String::new(),
            backward: BackwardForm::Vjp { path: "x_vjp".into() },
            subgradient: None,
            h: 1e-3,
            probes: 32,
            swept: 24,
            skipped: 0,
            skipped_nonfinite: 0,
            skipped_unresolved: 0,
            rounds: 1,
            salt: 0,
            ranges: vec![],
            declared_magnitudes: vec![],
            kink_word: "a kink".into(),
            kinks: None,
            kink_bounds: 0,
            max_abs_err: 0.0,
            max_rel_err: 0.0,
            bound_applied: 0.0,
            worst_ratio: 0.0,
            tolerance: "exact".into(),
            rel_bound: 1e-13,
            consistency: None,
            negative_control: vec![
                outcome(Corruption::Scaled(1.01), true, true),
                outcome(Corruption::SignFlipped, true, true),
                outcome(Corruption::Neighbour, false, false),
            ],
            smallest_caught: Some(3e-12),
            points: vec![],
            reach: Err("not drawn".into()),
        }
    }

    #[test]
    fn the_negative_control_line_follows_the_recorded_outcomes() {
        let mut r = report();
        assert!(r.negative_control_rejected());
        assert!(
            r.to_string().ends_with("negative control : corrupted vjp REJECTED; a relative error of 3.0e-12 or more is caught\n"),
            "{r}"
        );
        r.negative_control[1].rejected = false;
        assert!(!r.negative_control_rejected());
        let text = r.to_string();
        assert!(text.contains("negative control : corrupted vjp ACCEPTED (sign flipped)") && !text.contains("REJECTED"), "{text}");
        r.negative_control.iter_mut().for_each(|c| c.applicable = false);
        assert!(!r.negative_control_rejected());
        assert!(r.to_string().contains("negative control : corrupted vjp NOT RUN"), "{r}");
        r.backward = BackwardForm::Jvp { rules: vec!["x_jvp".into()] };
        r.negative_control = vec![outcome(Corruption::Zero, true, true)];
        assert!(r.to_string().contains("negative control : corrupted jvp REJECTED"), "{r}");
    }

    #[test]
    fn corruptions_apply_and_describe_themselves() {
        assert_eq!(Corruption::Scaled(1.01).apply(2.0, 5.0), 2.02);
        assert_eq!(Corruption::SignFlipped.apply(2.0, 5.0), -2.0);
        assert_eq!(Corruption::Neighbour.apply(2.0, 5.0), 5.0);
        assert_eq!(Corruption::Zero.apply(2.0, 5.0), 0.0);
        assert_eq!(Corruption::Scaled(1.01).to_string(), "scaled by 1.01");
        let d = super::super::probe::Dir { v: vec![vec![1.0, 2.0, 3.0]], coord: None, step: 1e-3 };
        assert_eq!(d.shifted().v, vec![vec![3.0, 1.0, 2.0]]);
        assert_eq!(d.dot(&[vec![1.0, 1.0, 1.0]]), 6.0);
        // A coordinate reads its element and the next one (wrapping), as the dense sums would.
        let g = [vec![0.5, 0.25], vec![2.0, 3.0, 5.0]];
        for j in 0..3 {
            let c = super::super::probe::Dir::coordinate(&[2, 3], 1, j, 1e-3);
            assert_eq!(c.dot_and_shifted(&g), (c.dot(&g), c.shifted().dot(&g)));
        }
    }

    #[test]
    fn the_values_line_names_each_range_and_why_it_was_narrowed() {
        let range = |hi: f64, narrowed: Vec<Narrowed>| DrawRange { lo: 1e-3, hi, narrowed };
        let r = GradcheckReport {
            ranges: vec![range(1e3, vec![]), range(1e1, vec![Narrowed::Unresolved, Narrowed::Unresolved]), range(1e3, vec![])],
            declared_magnitudes: vec!["y: 1e-1..1e1".into()],
            ..report()
        };
        assert_eq!(
            r.values_line(),
            "log-uniform magnitudes, both signs, inside each input's domain: y: 1e-1..1e1 (declared); 1e-3..1e3 in 2 of 3 draws; \
             1e-3..1e1 in 1 of 3 draws, narrowed: most derivatives were below the outputs' resolution"
        );
    }
}
