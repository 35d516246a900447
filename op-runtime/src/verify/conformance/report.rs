//! Failure reports: what a rejected kernel did wrong, on which case, on which device. Owns the
//! wording only; the verdict is `compare`'s.

use super::cases::Case;
use super::compare::Fault;
use crate::core::device::DeviceProfile;
use crate::core::kind::BackendKind;
use op_contract::contract::{DType, Tolerance};
use std::fmt;

/// Why a kernel was rejected, on the (shrunk) case that shows it.
#[derive(Clone, Debug)]
pub struct Report {
    /// `name@version`.
    pub op: String,
    /// Content hash (hex).
    pub content_hash: String,
    /// The backend whose kernel was checked.
    pub backend: BackendKind,
    /// The device it ran on.
    pub device: DeviceProfile,
    /// The declared tolerance.
    pub tolerance: Tolerance,
    /// The failing case, shrunk where the generator allowed.
    pub case: Case,
    /// The case that failed first, if shrinking found a smaller one.
    pub shrunk_from: Option<String>,
    /// The name of the output that failed.
    pub output: String,
    /// The failing output's dtype.
    pub dtype: DType,
    /// What went wrong.
    pub fault: Fault,
    /// Cases that passed before the first failure.
    pub passed_before: usize,
}

fn bits(b: u64, dtype: DType) -> String {
    format!("{:#0w$x}", b, w = dtype.size() * 2 + 2)
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "conformance failure: op `{}` ({}) on {}",
            self.op,
            &self.content_hash[..16.min(self.content_hash.len())],
            self.backend
        )?;
        writeln!(f, "  device    : {}", self.device)?;
        writeln!(f, "  tolerance : {}", self.tolerance)?;
        writeln!(f, "  case      : {}", self.case)?;
        if let Some(orig) = &self.shrunk_from {
            writeln!(f, "  shrunk from: {orig}")?;
        }
        write!(f, "  output `{}` ({}): ", self.output, self.dtype)?;
        match &self.fault {
            Fault::Length { expected, actual } => write!(f, "{actual} element(s) came back, {expected} expected (guard bands included)")?,
            Fault::OutputCount { expected, actual } => write!(f, "{actual} output(s) came back, {expected} expected")?,
            Fault::Execution(msg) => write!(f, "the backend failed: {msg}")?,
            Fault::Scale(msg) => write!(f, "no accum scale from the reference path: {msg}")?,
            Fault::OutOfBounds(o) => write!(
                f,
                "out-of-bounds write {} the output: element {} {} (bits {}), {} guard element(s) overwritten",
                o.side,
                o.offset,
                if o.side == "before" { "relative to the start" } else { "past the end" },
                bits(o.bits, self.dtype),
                o.count
            )?,
            Fault::Mismatch(m) => {
                write!(
                    f,
                    "first bad index {}: expected {:e} (bits {}), actual {:e} (bits {}){}; {}; {} element(s) differ",
                    m.index,
                    m.expected,
                    bits(m.expected_bits, self.dtype),
                    m.actual,
                    bits(m.actual_bits, self.dtype),
                    if m.unwritten { " = the canary pattern: the element was never written" } else { "" },
                    m.detail,
                    m.count
                )?;
            }
        }
        if self.passed_before > 0 {
            write!(f, "\n  ({} case(s) passed before this one)", self.passed_before)?;
        }
        Ok(())
    }
}
