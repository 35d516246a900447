//! Why a gradcheck failed or could not run: one typed error per cause, each naming the op.

use op_core::error::RegistrationError;
use op_train::tape::TapeError;
use std::fmt;
use thiserror::Error;

/// Where a rejection happened, and how to reproduce it: the input element, the input's shape,
/// the case's dims and parameters, and the seed (the op's content hash with a salt).
/// `GradcheckOptions { salt, .. }` with the same other options draws this case again.
#[derive(Debug, Clone, PartialEq)]
pub struct Locus {
    /// The input's name, e.g. `x`.
    pub input: String,
    /// The element's flat (row-major) index in that input.
    pub index: usize,
    /// The input's shape.
    pub shape: Vec<usize>,
    /// The case's dims and parameters, `(name, value)`, dims first.
    pub bindings: Vec<(String, String)>,
    /// The op's content hash (hex), which seeds gradcheck together with `salt`.
    pub content_hash: String,
    /// The salt of the draw (`GradcheckOptions::salt`) that reproduces it.
    pub salt: u64,
}

impl Locus {
    /// The element as written in messages: `` `x`[17] ``, or `` `x`[2, 5] `` for a rank-2
    /// input, `` `x` `` for a scalar.
    pub fn element(&self) -> String {
        if self.shape.is_empty() {
            return format!("`{}`", self.input);
        }
        let mut rest = self.index;
        let mut at = vec![0; self.shape.len()];
        for (a, d) in at.iter_mut().zip(&self.shape).rev() {
            *a = rest % (*d).max(1);
            rest /= (*d).max(1);
        }
        let at: Vec<String> = at.iter().map(usize::to_string).collect();
        format!("`{}`[{}]", self.input, at.join(", "))
    }
}

impl fmt::Display for Locus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape: Vec<String> = self.shape.iter().map(usize::to_string).collect();
        write!(f, "element {}", self.element())?;
        if self.shape.len() > 1 {
            write!(f, " (flat index {})", self.index)?;
        }
        write!(f, " of `{}` with shape [{}]", self.input, shape.join(", "))?;
        if !self.bindings.is_empty() {
            let b: Vec<String> = self.bindings.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            write!(f, ", at {}", b.join(", "))?;
        }
        write!(
            f,
            "; seed: content hash {} with salt {} (`GradcheckOptions {{ salt: {}, .. }}` reproduces it)",
            self.content_hash, self.salt, self.salt
        )
    }
}

/// Why a gradcheck failed or could not run. Every variant names the op.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum GradcheckError {
    /// The op is declared `backward = none`: there is nothing to check and no gradient to ask.
    #[error("op `{op}` is declared `backward = none`: gradients cannot flow through it")]
    NotDifferentiable {
        /// The op's `name@version`.
        op: String,
    },
    /// The declaration could not be loaded (boxed, as is [`GradcheckError::Tape`], so a
    /// `Result` carrying a gradcheck error stays small).
    #[error(transparent)]
    Load(Box<RegistrationError>),
    /// The reference has no f64 instantiation.
    #[error("op `{op}`: gradcheck runs the reference in f64, but it is not generic; write it as `fn {rust}<T: Real>(..)`")]
    NoF64Reference {
        /// The op's `name@version`.
        op: String,
        /// The reference function's Rust name.
        rust: String,
    },
    /// The op has no float tensor input to differentiate.
    #[error("op `{op}` declares a backward but has no float tensor input to differentiate")]
    NoDifferentiableInput {
        /// The op's `name@version`.
        op: String,
    },
    /// No admissible binding of dims and parameters was found.
    #[error("op `{op}`: no admissible input shapes found for its signature after {tries} tries")]
    NoAdmissibleInput {
        /// The op's `name@version`.
        op: String,
        /// Bindings tried.
        tries: usize,
    },
    /// The forward is not finite on any generated input.
    #[error("op `{op}`: the reference is not finite on the generated inputs ({tried}); declare the values it is defined on (`domain(x > 0)`) or the magnitudes it is meant for (`magnitude(x: 1e-3..10)`)")]
    NoFiniteInput {
        /// The op's `name@version`.
        op: String,
        /// The magnitudes tried, e.g. `magnitudes 1e-3..1e3 down to 1e-3..1, both signs`.
        tried: String,
    },
    /// The backward disagrees with finite differences.
    #[error("op `{op}`: the declared {form} disagrees with central differences along {at}: analytic {analytic:e}, numeric {numeric:e}, |difference| {diff:.3e} over the allowed {allowed:.3e} ({failing} of {checked} checked probes fail); {locus}")]
    Mismatch {
        /// The op's `name@version`.
        op: String,
        /// The backward checked (`VJP`, `JVP` or `composite graph's VJP`).
        form: String,
        /// The failing probe's direction: an input element, `` `x`[3] ``, where a coordinate
        /// probe fails; else the element a failing random direction was narrowed down to
        /// (see [`Locus`]), or `a random direction` where none could be measured alone.
        at: String,
        /// The backward's directional derivative there.
        analytic: f64,
        /// The central-difference estimate there.
        numeric: f64,
        /// `|analytic - numeric|`.
        diff: f64,
        /// The bound it exceeds.
        allowed: f64,
        /// Probes over the bound.
        failing: u32,
        /// Probes checked (kinks skipped).
        checked: u32,
        /// The element, its shape, the case's dims and parameters, and the seed that reproduce
        /// the rejection.
        locus: Box<Locus>,
    },
    /// VJP and JVP disagree: <u, J v> != <J^T u, v>.
    #[error("op `{op}`: the declared VJP and JVP disagree along {at}: <u, J v> = {jvp:e}, <J^T u, v> = {vjp:e}, allowed {allowed:.3e}")]
    Inconsistent {
        /// The op's `name@version`.
        op: String,
        /// The probe's direction: an input element or a random direction, followed by the
        /// [`Locus`] that reproduces it (the element, its shape, dims, parameters and seed).
        at: String,
        /// `<u, J v>` from the JVP.
        jvp: f64,
        /// `<J^T u, v>` from the VJP.
        vjp: f64,
        /// The bound the difference exceeds.
        allowed: f64,
    },
    /// Too many probes were skipped, in every round of fresh draws gradcheck made (see
    /// `rounds` in the module docs).
    #[error("op `{op}`: inconclusive: {skipped} of {probes} probes were skipped (more than half) over {rounds} rounds of fresh draws ({why}): {kinks} within h of a kink or order crossing, {unresolved} below the outputs' resolution, {nonfinite} where the forward is not finite; nothing was certified{hint}")]
    Inconclusive {
        /// The op's `name@version`.
        op: String,
        /// Rounds of draws made (each with its own binding and values, seeded from the content
        /// hash and the salt of the round).
        rounds: u32,
        /// Why no more rounds were drawn, with the salts they used.
        why: String,
        /// Probes skipped, for any reason.
        skipped: usize,
        /// Probes measured (sampled and swept).
        probes: usize,
        /// Skipped within h of a kink.
        kinks: usize,
        /// Skipped below the outputs' resolution.
        unresolved: usize,
        /// Skipped where the forward is not finite.
        nonfinite: u32,
        /// What to do about it (empty where nothing applies).
        hint: String,
    },
    /// The negative control was not rejected: the check could not fail.
    #[error(
        "op `{op}`: the check could not fail: a corrupted backward ({corruption}) passed the same probes, so passing certifies nothing"
    )]
    NegativeControlAccepted {
        /// The op's `name@version`.
        op: String,
        /// The corruption that passed.
        corruption: String,
    },
    /// At a point placed on a kink, the backward is not the subgradient the convention names.
    #[error("op `{op}`: at a kink ({at}) the declared backward gives {analytic:e}, where the one-sided derivatives are {left:e} (from below) and {right:e} (from above); the convention names {expected}; {locus}")]
    KinkConvention {
        /// The op's `name@version`.
        op: String,
        /// Where: the tied or zeroed elements.
        at: String,
        /// The backward's value there.
        analytic: f64,
        /// The one-sided derivative from below.
        left: f64,
        /// The one-sided derivative from above.
        right: f64,
        /// What the convention names.
        expected: String,
        /// The element, its shape, the case's dims and parameters, and the seed that reproduce
        /// the rejection.
        locus: Box<Locus>,
    },
    /// A shim failed.
    #[error("op `{op}`: {message}")]
    Shim {
        /// The op's `name@version`.
        op: String,
        /// The shim's error message.
        message: String,
    },
    /// Recording or running the composite graph failed (boxed).
    #[error(transparent)]
    Tape(Box<TapeError>),
}

impl From<RegistrationError> for GradcheckError {
    fn from(e: RegistrationError) -> Self {
        GradcheckError::Load(Box::new(e))
    }
}

impl From<TapeError> for GradcheckError {
    fn from(e: TapeError) -> Self {
        GradcheckError::Tape(Box::new(e))
    }
}

impl GradcheckError {
    /// Whether the check ran and rejected the backward (as opposed to being unable to run).
    pub fn is_rejection(&self) -> bool {
        matches!(self, GradcheckError::Mismatch { .. } | GradcheckError::Inconsistent { .. } | GradcheckError::KinkConvention { .. })
    }
    /// Whether the check ran and did not certify: rejected, inconclusive, or unable to fail.
    pub fn is_check_failure(&self) -> bool {
        self.is_rejection() || matches!(self, GradcheckError::Inconclusive { .. } | GradcheckError::NegativeControlAccepted { .. })
    }
}
