//! Records for reports: what the tests `#[op]` generates write, per op, when
//! [`REPORT_DIR_ENV`] names a directory (`cargo op report` sets it): the op's catalog entry,
//! each backend's verdict with its failure classes, shrunk cases, receipt and per-case errors,
//! the trust per kernel on this machine, and the gradcheck probes with the negative control's
//! margins. JSON files, one per op and test, written atomically. Judges nothing: the verdicts
//! are conformance's and gradcheck's.

mod catalog;
mod errors;

pub use catalog::{entries, same_decl};
pub use catalog::{CatalogEntry, KernelInfo};
pub use errors::{measure, ErrorPoint, MAX_ERROR_CASES};

use crate::conformance::{is_kernel, ConformanceFailure, Fault, Report};
use crate::gradcheck::{GradcheckError, GradcheckReport, ProbePoint};
use crate::sharing::{KernelTrust, LocalDevices, OpCard};
use op_core::files::{ensure_dir, write_atomic, Replace};
use op_core::kind::BackendKind;
use op_core::receipt::Receipt;
use op_core::registry::OpHandle;
use op_core::trust::TrustList;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The environment variable naming the directory records are written to; unset, the generated
/// tests write nothing.
pub const REPORT_DIR_ENV: &str = "OP_REPORT_DIR";

/// Version of the record format.
pub const RECORD_FORMAT: u32 = 1;

/// The verdict on one backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every case conformed; a receipt was minted.
    Conformed,
    /// The kernel disagrees with the reference (classes and shrunk cases in `defects`).
    Rejected,
    /// The backend cannot run the op here, or has nothing to run (not a verdict).
    Skipped,
    /// The reference failed, its `accum` scale could not be computed, or no case exists: a
    /// contract defect.
    Failed,
}

/// One class of defect of a rejected kernel, on its smallest case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DefectRecord {
    /// The class's name (`element never written`, `sign of zero`, ...).
    pub class: String,
    /// What it means and what usually causes it.
    pub explanation: String,
    /// The smallest failing case of the class.
    pub case: String,
    /// The case that failed first, where shrinking found a smaller one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrunk_from: Option<String>,
    /// The failing output and its dtype.
    pub output: String,
}

/// One backend's result for one instance of an op.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackendRecord {
    /// The backend.
    pub backend: BackendKind,
    /// The instance (`T = f32`) of an op with dtype variables; empty otherwise.
    #[serde(default)]
    pub dtypes: String,
    /// The verdict.
    pub verdict: Verdict,
    /// The device it ran on, where it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Why it was skipped or failed, or the full rejection report.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// Cases run.
    pub cases: usize,
    /// Cases that failed.
    pub failed: usize,
    /// The receipt minted, where it conformed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Receipt>,
    /// Each class of defect found, the most telling first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defects: Vec<DefectRecord>,
    /// The kernel's error against the reference per case (kernel backends that ran).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ErrorPoint>,
}

/// Whether conformance saw the kernel's process die on a case (any defect of a rejection).
fn died(result: &Result<Receipt, ConformanceFailure>) -> bool {
    matches!(result, Err(ConformanceFailure::Rejected(r)) if r.defects.iter().any(|d| matches!(d.fault, Fault::Died(_))))
}

impl BackendRecord {
    /// The record of one backend's conformance result; `errors` measured where a kernel ran.
    pub fn of(handle: &OpHandle, backend: BackendKind, result: &Result<Receipt, ConformanceFailure>) -> BackendRecord {
        let dtypes = handle.op().binding_text();
        let mut r = BackendRecord {
            backend,
            dtypes,
            verdict: Verdict::Conformed,
            device: None,
            detail: String::new(),
            cases: 0,
            failed: 0,
            receipt: None,
            defects: Vec::new(),
            errors: Vec::new(),
        };
        match result {
            Ok(receipt) => {
                r.device = Some(receipt.device.to_string());
                r.cases = receipt.cases;
                r.receipt = Some(receipt.clone());
            }
            Err(ConformanceFailure::Rejected(report)) => r.rejected(report),
            Err(e) => {
                r.verdict = if e.is_skip() { Verdict::Skipped } else { Verdict::Failed };
                r.detail = e.to_string();
            }
        }
        // The error plot calls the kernel again, in this process: never for a kernel that died
        // under conformance (crashed, ran out of memory, timed out), which would take the
        // report's run down with it or hang it.
        if is_kernel(backend) && matches!(r.verdict, Verdict::Conformed | Verdict::Rejected) && !died(result) {
            r.errors = measure(handle, backend);
        }
        r
    }

    fn rejected(&mut self, report: &Report) {
        self.verdict = Verdict::Rejected;
        self.device = Some(report.device.to_string());
        self.detail = report.to_string();
        self.cases = report.cases;
        self.failed = report.failed;
        self.defects = report
            .defects
            .iter()
            .map(|d| DefectRecord {
                class: d.class.name().to_string(),
                explanation: report.explain(d),
                case: d.case.to_string(),
                shrunk_from: d.shrunk_from.clone(),
                output: format!("{} ({})", d.output, d.dtype),
            })
            .collect();
    }
}

/// What the conformance test of one op (or its VJP op) wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConformanceRecord {
    /// [`RECORD_FORMAT`].
    pub format: u32,
    /// The test binary that ran it.
    pub binary: String,
    /// The op.
    pub op: CatalogEntry,
    /// Every backend for every instance, in priority order.
    pub results: Vec<BackendRecord>,
    /// Trust per declared kernel on this machine's devices, from the receipts minted here.
    pub trust: Vec<KernelTrust>,
}

impl ConformanceRecord {
    /// The record of `handle`'s conformance `results` (from `conform_all`).
    pub fn of(handle: &OpHandle, results: &[(BackendKind, Result<Receipt, ConformanceFailure>)]) -> ConformanceRecord {
        let instances = handle.instances();
        let op = handle.op();
        // `conform_all` runs every backend for each instance in turn.
        let per = BackendKind::PRIORITY.len();
        let paired = results.len() == instances.len() * per;
        let records = results
            .iter()
            .enumerate()
            .map(|(i, (kind, result))| BackendRecord::of(if paired { &instances[i / per] } else { handle }, *kind, result))
            .collect::<Vec<_>>();
        let receipts: Vec<Receipt> = records.iter().filter_map(|r| r.receipt.clone()).collect();
        let card = OpCard::of(&op, &receipts, &LocalDevices::of(handle.registry()), &TrustList::new());
        ConformanceRecord { format: RECORD_FORMAT, binary: binary(), op: CatalogEntry::of_op(&op), results: records, trust: card.trust }
    }
}

/// What the gradcheck test of one op wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradcheckRecord {
    /// [`RECORD_FORMAT`].
    pub format: u32,
    /// The test binary that ran it.
    pub binary: String,
    /// The op.
    pub op: CatalogEntry,
    /// Whether gradcheck certified the backward (or, for `backward = none`, refused it with the
    /// typed error, as it must).
    pub passed: bool,
    /// `backward = none`: nothing to check.
    pub not_differentiable: bool,
    /// The report's text, or the error.
    pub text: String,
    /// The worst `|analytic - numeric| / allowed` (below 1 passes).
    #[serde(default, with = "op_core::nonfinite")]
    pub worst_ratio: f64,
    /// Every checked probe.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<ProbePoint>,
    /// The negative control: (corruption, applied, rejected, margin in units of the bound).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub control: Vec<ControlRecord>,
}

/// One corruption of the negative control.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlRecord {
    /// The corruption (`scaled by 1.01`, `sign flipped`, ...).
    pub corruption: String,
    /// Whether it changed the backward enough to have to be rejected.
    pub applicable: bool,
    /// Whether gradcheck rejected it.
    pub rejected: bool,
    /// The largest `|corrupted - numeric| / allowed` over the probes (above 1 rejects).
    #[serde(with = "op_core::nonfinite")]
    pub margin: f64,
}

impl GradcheckRecord {
    /// The record of gradcheck's `result` on `op` (`not_differentiable` for `backward = none`,
    /// where `result` must be the typed refusal).
    pub fn of(op: CatalogEntry, result: &Result<GradcheckReport, GradcheckError>, not_differentiable: bool) -> GradcheckRecord {
        let mut r = GradcheckRecord {
            format: RECORD_FORMAT,
            binary: binary(),
            op,
            passed: false,
            not_differentiable,
            text: String::new(),
            worst_ratio: 0.0,
            points: Vec::new(),
            control: Vec::new(),
        };
        match result {
            Ok(report) => {
                r.passed = !not_differentiable;
                r.text = report.to_string();
                r.worst_ratio = report.worst_ratio;
                r.points = report.points.clone();
                r.control = report
                    .negative_control
                    .iter()
                    .map(|c| ControlRecord {
                        corruption: c.corruption.to_string(),
                        applicable: c.applicable,
                        rejected: c.rejected,
                        margin: c.margin,
                    })
                    .collect();
            }
            Err(e) => {
                r.passed = not_differentiable && matches!(e, GradcheckError::NotDifferentiable { .. });
                r.text = e.to_string();
            }
        }
        r
    }
}

/// The directory [`REPORT_DIR_ENV`] names, if set (and not empty).
pub fn dir_from_env() -> Option<PathBuf> {
    std::env::var_os(REPORT_DIR_ENV).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The running binary's name without cargo's hash suffix (`op_runtime-0123...` is `op_runtime`).
fn binary() -> String {
    let exe = std::env::current_exe().ok().and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned())).unwrap_or_default();
    match exe.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => stem.to_string(),
        _ => exe,
    }
}

/// The file name of a record: `<id, `/` as `~`>.<16 hex of the identity>.<kind>.json`.
pub fn record_name(op: &CatalogEntry, kind: &str) -> String {
    format!("{}.{}.{kind}.json", op.id.replace('/', "~"), op.identity.get(..16).unwrap_or(&op.identity))
}

/// Writes `value` as `dir/<sub>/<name>` atomically (readers see the old or the new file).
pub fn write_record(dir: &Path, sub: &str, name: &str, value: &impl Serialize) -> std::io::Result<PathBuf> {
    let dir = dir.join(sub);
    ensure_dir(&dir)?;
    let path = dir.join(name);
    let json = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    write_atomic(&path, &json, Replace::Yes, 0o644)?;
    Ok(path)
}

/// Sub-directory of conformance records.
pub const CONFORMANCE_DIR: &str = "conformance";
/// Sub-directory of gradcheck records.
pub const GRADCHECK_DIR: &str = "gradcheck";
/// Sub-directory of catalog entries.
pub const CATALOG_DIR: &str = "catalog";
