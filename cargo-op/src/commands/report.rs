//! `cargo op report`: runs the generated tests with records, renders the pages, prints the
//! index's path (or the counts as JSON). Exit code 1 when a verdict failed.

use super::{print_json, records_dir};
use crate::cargo::{run_tests, CATALOG, CONFORMANCE, GRADCHECK};
use crate::cli::Scope;
use crate::error::{Error, Status};
use op_report::{render, Records};
use std::path::PathBuf;

/// What `--json` prints.
#[derive(serde::Serialize)]
struct Summary<'a> {
    #[serde(flatten)]
    rendered: &'a op_report::Rendered,
    /// Generated tests that failed.
    failed_tests: &'a [String],
}

/// `cargo op report`.
pub(crate) fn report(scope: &Scope, out: Option<PathBuf>, json: bool) -> Result<Status, Error> {
    let records = records_dir(scope, "records")?;
    let out = match out {
        Some(o) => o,
        None => match records.parent() {
            Some(p) if scope.records.is_none() => p.to_path_buf(),
            _ => crate::cargo::target_dir()?.join("op-report"),
        },
    };
    let failed_tests = if scope.no_run {
        Vec::new()
    } else {
        let run = run_tests(scope, &[CONFORMANCE, GRADCHECK, CATALOG], &records, "conformance and gradcheck")?;
        if !run.failed.is_empty() {
            eprintln!("{} generated test(s) failed: {}\n{}", run.failed.len(), run.failed.join(", "), run.tail);
        }
        run.failed
    };
    let rendered = render(&Records::load(&records)?, &out)?;
    if json {
        print_json(&Summary { rendered: &rendered, failed_tests: &failed_tests })?;
    } else {
        println!(
            "{} ops, {} rows: {} conformed, {} rejected, {} failed, {} skipped; gradcheck failed for {}",
            rendered.ops,
            rendered.rows,
            rendered.conformed,
            rendered.rejected,
            rendered.failed,
            rendered.skipped,
            rendered.gradcheck_failed
        );
        println!("{}", rendered.index.display());
    }
    Ok(if rendered.all_passed() && failed_tests.is_empty() { Status::Ok } else { Status::Failed })
}
