//! The report a person looks at: the records `#[op]`'s generated tests write (when
//! `OP_REPORT_DIR` is set, see `op_runtime::report`) rendered as static HTML, criterion's
//! convention: `index.html` with one row per op and instance and a column per backend (verdict
//! with its failure class, cases, receipt and signer, trust), and a page per op (contract,
//! kernels with their hashes, each rejected kernel's classes and shrunk cases, an SVG plot of
//! the error per case, the gradcheck probes and the negative control's margins). No script, no
//! network: the pages read the same in any browser or none.
//!
//! ```
//! use op_runtime::conformance::conform;
//! use op_runtime::report::{record_name, write_record, ConformanceRecord, CONFORMANCE_DIR};
//! use op_runtime::BackendKind;
//!
//! // The records a generated test writes with `OP_REPORT_DIR` set (`cargo op report` sets it
//! // to `target/op-report/records`): here one, for `builtin/exp` conformed on the cpu backend.
//! let dir = tempfile::tempdir()?;
//! let records_dir = dir.path().join("records");
//! let exp = op_runtime::registry().lookup("builtin/exp@1")?;
//! let record = ConformanceRecord::of(&exp, &[(BackendKind::Cpu, conform(&exp, BackendKind::Cpu))]);
//! write_record(&records_dir, CONFORMANCE_DIR, &record_name(&record.op, "conformance"), &record)?;
//!
//! let records = op_report::Records::load(&records_dir)?;
//! let rendered = op_report::render(&records, dir.path())?;
//! assert!(rendered.index.exists());
//! assert_eq!(rendered.pages.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod html;
mod index;
mod load;
mod page;
mod svg;

pub use error::ReportError;
pub use html::esc;
pub use load::{OpRecords, Records, Row};
pub use svg::{Plot, Series};

use serde::Serialize;
use std::path::{Path, PathBuf};

/// What [`render`] wrote, and the counts a script checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rendered {
    /// The index page.
    pub index: PathBuf,
    /// One page per op.
    pub pages: Vec<PathBuf>,
    /// Ops in the report.
    pub ops: usize,
    /// Rows of the index (op and instance).
    pub rows: usize,
    /// Backend results that conformed.
    pub conformed: usize,
    /// Backend results that were rejected.
    pub rejected: usize,
    /// Backend results skipped (backend unavailable here, or nothing to run).
    pub skipped: usize,
    /// Backend results that failed otherwise (a contract defect).
    pub failed: usize,
    /// Ops whose gradcheck did not pass.
    pub gradcheck_failed: usize,
}

impl Rendered {
    /// Whether every verdict in the report is a pass (skips are not verdicts).
    pub fn all_passed(&self) -> bool {
        self.rejected == 0 && self.failed == 0 && self.gradcheck_failed == 0
    }
}

/// Renders `records` into `out`: `out/index.html` and `out/ops/<op>.html` (pages an earlier
/// render left in `out/ops` are removed). Returns what was written.
pub fn render(records: &Records, out: &Path) -> Result<Rendered, ReportError> {
    let ops_dir = out.join("ops");
    std::fs::create_dir_all(&ops_dir).map_err(|e| ReportError::io(&ops_dir, e))?;
    remove_pages(&ops_dir)?;
    let mut pages = Vec::new();
    for op in &records.ops {
        let path = ops_dir.join(page::file_name(op));
        write(&path, &page::page(op))?;
        pages.push(path);
    }
    let index = out.join("index.html");
    write(&index, &index::page(records))?;
    let rows = records.ops.iter().map(|o| o.rows().len()).sum();
    let count = |v: op_runtime::report::Verdict| records.ops.iter().flat_map(|o| o.results()).filter(|r| r.verdict == v).count();
    use op_runtime::report::Verdict::*;
    Ok(Rendered {
        index,
        pages,
        ops: records.ops.len(),
        rows,
        conformed: count(Conformed),
        rejected: count(Rejected),
        skipped: count(Skipped),
        failed: count(Failed),
        gradcheck_failed: records.ops.iter().filter(|o| o.gradcheck.as_ref().is_some_and(|g| !g.passed)).count(),
    })
}

/// Removes the pages an earlier render left in `dir` (`*.html`), so no page outlives its op.
fn remove_pages(dir: &Path) -> Result<(), ReportError> {
    for entry in std::fs::read_dir(dir).map_err(|e| ReportError::io(dir, e))? {
        let path = entry.map_err(|e| ReportError::io(dir, e))?.path();
        if path.extension().is_some_and(|x| x == "html") {
            std::fs::remove_file(&path).map_err(|e| ReportError::io(&path, e))?;
        }
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), ReportError> {
    std::fs::write(path, text).map_err(|e| ReportError::io(path, e))
}
