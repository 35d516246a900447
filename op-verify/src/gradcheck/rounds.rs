//! Rounds of draws: where more than half of a round's probes were skipped (within h of a kink,
//! below the outputs' resolution, not finite), gradcheck draws a fresh round (its own binding of
//! dims and parameters, its own values and probes), seeded from the content hash and the
//! round's salt ([`round_salt`]), until it is conclusive, or says why it cannot be. Owns the
//! rounds, the pool of their evidence and the inconclusive verdict; it must not measure or judge
//! probes itself.
//!
//! Conclusive means, as for a single round, that at most half of the probes were skipped:
//! - over every round together (the pool); or
//! - in the latest round alone, where at most half of all the probes measured were within h of
//!   a kink. Skips below the outputs' resolution or where the forward is not finite belong to
//!   a draw (a clip whose bounds were drawn close together has nearly every element clipped,
//!   its derivative flat there), and a fresh binding and values are exactly what resolves
//!   them; skips at kinks belong to the op at this step (kinks denser than `h`), and are never
//!   drawn away by trying rounds until one happens to meet fewer.
//!
//! So a correct rule is not red because one draw was unlucky (a clip, a clipped prefix sum:
//! inconclusive under one identity in three and one in sixteen with a single round), and the
//! verdict is inconclusive only where [`MAX_ROUNDS`] rounds did not get there, or where, after
//! [`HOPELESS_AFTER`] rounds, nine in ten probes were within h of a kink (a step wider than the
//! spacing of the kinks: more draws cannot help). Every round is judged: a failing probe in any
//! of them rejects, naming that round's salt.

use super::probe::{Measured, Probe};
use super::report::{Corruption, ReachRound};
use super::verdict::{consistency, judge, negative_control, smallest_caught, summarize};
use super::{measure_probes, setup, GradcheckError, GradcheckOptions, Setup};
use crate::gradcheck::draw::DrawRange;
use op_core::decl::OpDecl;
use op_core::registry::Registry;

/// Most rounds of draws per gradcheck.
pub const MAX_ROUNDS: usize = 16;
/// Rounds after which a pool with at least [`HOPELESS`] of its probes within h of a kink stops
/// drawing.
pub const HOPELESS_AFTER: usize = 4;
/// See [`HOPELESS_AFTER`].
pub const HOPELESS: f64 = 0.9;

/// The salt of round `round` of a gradcheck run with salt `salt`: `salt` itself first, then
/// `salt ^ (round << 48)`. Running gradcheck with a round's salt draws that round first, so a
/// rejection in any round is reproduced by its salt alone.
pub fn round_salt(salt: u64, round: usize) -> u64 {
    salt ^ ((round as u64) << 48)
}

/// The evidence of every round so far.
pub struct Pool {
    /// Checked probes of every round.
    pub checked: Vec<Probe>,
    /// Probes sampled (not swept), over the rounds.
    pub sampled: usize,
    /// Probes swept, over the rounds.
    pub swept: usize,
    /// Skips by reason: within h of a kink, forward not finite, derivative unresolved.
    pub kinks: usize,
    pub nonfinite: usize,
    pub unresolved: usize,
    /// The ranges the rounds' draws came from.
    pub ranges: Vec<DrawRange>,
    /// The largest VJP/JVP difference over the rounds, where both are declared.
    pub consistency: Option<f64>,
    /// Salts of the rounds measured, in order.
    pub salts: Vec<u64>,
    /// Rounds that could not be set up, with why.
    pub unset: Vec<String>,
    /// The round at the reach of the parameter space (see [`reach`]), kept out of the counts
    /// above (its VJP/JVP difference joins `consistency`), or why there was none.
    pub reach: Result<ReachRound, String>,
}

impl Default for Pool {
    fn default() -> Self {
        Pool {
            checked: Vec::new(),
            sampled: 0,
            swept: 0,
            kinks: 0,
            nonfinite: 0,
            unresolved: 0,
            ranges: Vec::new(),
            consistency: None,
            salts: Vec::new(),
            unset: Vec::new(),
            reach: Err("the rounds were not conclusive".into()),
        }
    }
}

impl Pool {
    fn skipped(&self) -> usize {
        self.kinks + self.nonfinite + self.unresolved
    }
    fn measured(&self) -> usize {
        self.sampled + self.swept
    }
    /// At most half of every probe so far was skipped.
    fn conclusive(&self) -> bool {
        2 * self.skipped() <= self.measured()
    }

    /// Adds one round's probes; whether that round was conclusive on its own.
    fn add(&mut self, measured: Vec<Measured>, sampled: usize, swept: usize) -> bool {
        let before = self.skipped();
        for m in measured {
            match m {
                Measured::Checked(p) => self.checked.push(p),
                Measured::Kink => self.kinks += 1,
                Measured::NonFinite => self.nonfinite += 1,
                Measured::Unresolved => self.unresolved += 1,
            }
        }
        self.sampled += sampled;
        self.swept += swept;
        2 * (self.skipped() - before) <= sampled + swept
    }
}

/// Draws rounds until they are conclusive (see the module docs): the pool and the last round's
/// setup. A rejection in any round is returned at once, naming that round's salt.
pub fn run(registry: &Registry, decl: &'static OpDecl, opts: &GradcheckOptions) -> Result<(Pool, Setup), GradcheckError> {
    let mut pool = Pool::default();
    let mut last: Option<Setup> = None;
    // A conclusive pool whose probes could not yet tell the negative control's scaled backward
    // from the true one: returned if no later round helps (the control then fails it).
    let mut blind: Option<Setup> = None;
    let mut stop = format!("{MAX_ROUNDS} rounds, the most gradcheck draws");
    for round in 0..MAX_ROUNDS {
        let salt = round_salt(opts.salt, round);
        let o = GradcheckOptions { salt, ..opts.clone() };
        let mut s = match setup(registry, decl, &o) {
            Ok(s) => s,
            Err(e) if round == 0 => return Err(e),
            Err(e) => {
                pool.unset.push(format!("salt {salt}: {e}"));
                continue;
            }
        };
        let (measured, swept) = measure_round(&mut s, opts, &mut pool)?;
        let sampled = measured.len() - swept;
        pool.salts.push(salt);
        pool.ranges.extend(s.ranges.iter().cloned());
        let alone = pool.add(measured, sampled, swept);
        if pool.conclusive() || (alone && 2 * pool.kinks <= pool.measured()) {
            if tells_scaling(&pool) {
                reach(registry, decl, opts, &mut pool)?;
                return Ok((pool, s));
            }
            // Conclusive, but no probe resolves the fixed scaling the negative control applies
            // (a draw whose outputs barely respond): more probes from a fresh round, not a
            // verdict of "could not fail" on a correct backward.
            blind = Some(s);
            continue;
        }
        last = Some(s);
        let kinks = pool.kinks as f64 / pool.measured().max(1) as f64;
        if round + 1 >= HOPELESS_AFTER && kinks >= HOPELESS {
            stop = format!(
                "stopped after {} rounds: {:.0}% of their probes were within h of a kink, so more draws cannot bring the skips below half",
                round + 1,
                100.0 * kinks
            );
            break;
        }
    }
    if let Some(s) = blind {
        reach(registry, decl, opts, &mut pool)?;
        return Ok((pool, s));
    }
    match last {
        Some(s) => Err(inconclusive(&s, &pool, opts, &stop)),
        None => Err(GradcheckError::NoAdmissibleInput { op: decl.rust_name.to_string(), tries: MAX_ROUNDS }),
    }
}

/// A round's probes, measured and judged (a failing one rejects whatever was skipped around
/// it), its VJP/JVP difference folded into the pool's; with how many were swept.
fn measure_round(s: &mut Setup, opts: &GradcheckOptions, pool: &mut Pool) -> Result<(Vec<Measured>, usize), GradcheckError> {
    let (mut measured, swept) = measure_probes(s, opts)?;
    judge(s, &mut measured)?;
    let c = consistency(s, &checked(&measured))?;
    pool.consistency = match (pool.consistency, c) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    Ok((measured, swept))
}

/// The probes of `measured` that were checked (not skipped).
fn checked(measured: &[Measured]) -> Vec<&Probe> {
    measured.iter().filter_map(|m| if let Measured::Checked(p) = m { Some(p) } else { None }).collect()
}

/// The top 12 bits of a reach round's salt (see [`reach`]): a run with such a salt draws every
/// round at the reach (round salts change bits 48..52 only), so a rejection there is
/// reproduced by its salt alone. One random salt in 4096 has them.
pub const REACH: u64 = 0x5EA << 52;
/// The bits of a salt below [`REACH`]'s.
const LOW: u64 = (1 << 52) - 1;

/// Whether `salt` draws a reach round's binding (`case::reach`).
pub fn is_reach(salt: u64) -> bool {
    salt & !LOW == REACH
}

/// The salt of the reach round of a run with salt `salt`.
pub fn reach_salt(salt: u64) -> u64 {
    (salt & LOW) | REACH
}

/// One more round once the pool is conclusive, at the reach of the parameter space
/// (`case::reach`: each integer parameter at the largest value admitted among its constraints'
/// literals, one either side, and 8 to 64; dims up to 64): the interior bindings of the rounds
/// never draw a window of 31 or a hundred elements, and a rule wrong only there would pass. Its
/// sweep's probes (no sampled ones) are judged (a failing one rejects, naming the round's salt,
/// [`reach_salt`]) and summed up in [`Pool::reach`], apart from the rounds' counts; it need not
/// be conclusive on its own. Where no reach binding is admissible, the reference is not finite
/// on its values, or the run's own salt is a reach salt (its rounds were reach rounds), there is
/// none, and `Pool::reach` says why; any other failure of the round is the gradcheck's.
fn reach(registry: &Registry, decl: &'static OpDecl, opts: &GradcheckOptions, pool: &mut Pool) -> Result<(), GradcheckError> {
    if is_reach(opts.salt) {
        pool.reach = Err("the run's salt is a reach salt: its rounds were drawn at the reach".into());
        return Ok(());
    }
    let salt = reach_salt(opts.salt);
    let mut s = match setup(registry, decl, &GradcheckOptions { salt, ..opts.clone() }) {
        Ok(s) => s,
        Err(e @ (GradcheckError::NoAdmissibleInput { .. } | GradcheckError::NoFiniteInput { .. })) => {
            pool.reach = Err(format!("salt {salt}: {e}"));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let (measured, _) = measure_round(&mut s, opts, pool)?;
    let probes = checked(&measured);
    let bindings = s.binding.env.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
    let worst_ratio = summarize(&probes).worst_ratio;
    let (n, checked) = (measured.len(), probes.len());
    pool.reach = Ok(ReachRound { bindings, salt, probes: n, skipped: n - checked, worst_ratio });
    Ok(())
}

/// Whether the pooled probes reject the negative control's fixed scaling of the backward (the
/// first corruption `negative_control` applies).
fn tells_scaling(pool: &Pool) -> bool {
    let probes: Vec<&Probe> = pool.checked.iter().collect();
    negative_control(&probes, smallest_caught(&probes))
        .iter()
        .find(|c| matches!(c.corruption, Corruption::Scaled(_)))
        .is_none_or(|c| !c.applicable || c.rejected)
}

/// The verdict where no round and not the pool was conclusive: the counts over every round,
/// the salts drawn, why no more were, and what to do about it.
fn inconclusive(s: &Setup, pool: &Pool, opts: &GradcheckOptions, stop: &str) -> GradcheckError {
    let skipped = pool.skipped();
    let hint = if 2 * pool.unresolved > skipped && !s.contract.magnitude.is_empty() {
        "; the outputs cannot resolve the derivative at these values: narrow the declared `magnitude(...)` to where the op's outputs respond".to_string()
    } else if 2 * pool.unresolved > skipped {
        "; the outputs cannot resolve the derivative at these values: declare the magnitudes the op is meant for (`magnitude(x: 1e-3..10)`)"
            .to_string()
    } else if 2 * pool.nonfinite > skipped {
        "; the forward is not finite near these values: declare the values it is defined on (`domain(x > 0)`)".to_string()
    } else if 2 * pool.kinks > skipped {
        format!(
            "; the kinks lie closer together than the steps reach (h = {:e}): probe with a smaller `h`, or declare the magnitudes the op is meant for",
            opts.h
        )
    } else {
        String::new()
    };
    let salts: Vec<String> = pool.salts.iter().map(u64::to_string).collect();
    let mut why = format!("salts {} (`GradcheckOptions::salt` draws any of them first); {stop}", salts.join(", "));
    if !pool.unset.is_empty() {
        why.push_str(&format!("; rounds not set up: {}", pool.unset.join("; ")));
    }
    GradcheckError::Inconclusive {
        op: s.op_id.clone(),
        rounds: u32::try_from(pool.salts.len()).unwrap_or(u32::MAX),
        why,
        skipped,
        probes: pool.measured(),
        kinks: pool.kinks,
        unresolved: pool.unresolved,
        nonfinite: u32::try_from(pool.nonfinite).unwrap_or(u32::MAX),
        hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_salts_start_at_the_salt_and_never_repeat() {
        assert_eq!(round_salt(7, 0), 7);
        let salts: Vec<u64> = (0..MAX_ROUNDS).map(|r| round_salt(7, r)).collect();
        let mut distinct = salts.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), MAX_ROUNDS);
        // Small salts (those tests iterate over) are never another salt's later round.
        assert!((1..MAX_ROUNDS).all(|r| round_salt(3, r) > 1 << 40));
    }

    #[test]
    fn a_round_is_conclusive_alone_or_with_the_pool() {
        let mut pool = Pool::default();
        let skip = |n: usize| (0..n).map(|_| Measured::Unresolved).collect::<Vec<_>>();
        assert!(!pool.add(skip(30), 30, 0));
        assert!(!pool.conclusive());
        assert_eq!((pool.unresolved, pool.measured()), (30, 30));
    }
}
