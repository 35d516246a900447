//! Loading records: every JSON file under `conformance/`, `gradcheck/` and `catalog/` of a
//! records directory, grouped by op (`name@version` and identity). A record that does not
//! parse, or of another format, is an error naming the file.

use crate::error::ReportError;
use op_runtime::catalog::CatalogEntry;
use op_runtime::report::{BackendRecord, ConformanceRecord, GradcheckRecord, CATALOG_DIR, CONFORMANCE_DIR, GRADCHECK_DIR, RECORD_FORMAT};
use op_runtime::{BackendKind, OpSource};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Everything recorded about one op (one content: an op whose content differs between binaries
/// is two entries).
#[derive(Clone, Debug)]
pub struct OpRecords {
    /// The op's catalog entry.
    pub entry: CatalogEntry,
    /// Its conformance, where the conformance test ran.
    pub conformance: Option<ConformanceRecord>,
    /// Its gradcheck, where the gradcheck test ran.
    pub gradcheck: Option<GradcheckRecord>,
    /// The test binaries that recorded it.
    pub binaries: Vec<String>,
}

/// One row of the index: an op at one instance (`T = f32`; empty for an op without dtype
/// variables).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The instance.
    pub dtypes: String,
}

impl OpRecords {
    /// Every backend result.
    pub fn results(&self) -> impl Iterator<Item = &BackendRecord> {
        self.conformance.iter().flat_map(|c| c.results.iter())
    }

    /// The rows: one per instance with results, in the order conformance ran them.
    pub fn rows(&self) -> Vec<Row> {
        let mut rows: Vec<Row> = Vec::new();
        for r in self.results() {
            if !rows.iter().any(|x| x.dtypes == r.dtypes) {
                rows.push(Row { dtypes: r.dtypes.clone() });
            }
        }
        if rows.is_empty() {
            rows.push(Row { dtypes: String::new() });
        }
        rows
    }

    /// The result of `backend` at `row`'s instance.
    pub fn result(&self, row: &Row, backend: BackendKind) -> Option<&BackendRecord> {
        self.results().find(|r| r.backend == backend && r.dtypes == row.dtypes)
    }
}

/// Every op recorded in a records directory: the user's ops first, then the built-ins, by name
/// (each VJP op after its op).
#[derive(Clone, Debug, Default)]
pub struct Records {
    /// The ops.
    pub ops: Vec<OpRecords>,
}

impl Records {
    /// Loads every record under `dir`; [`ReportError::Empty`] when there is none.
    pub fn load(dir: &Path) -> Result<Records, ReportError> {
        let mut ops: BTreeMap<(String, String), OpRecords> = BTreeMap::new();
        for (path, r) in read_all::<ConformanceRecord>(&dir.join(CONFORMANCE_DIR))? {
            check_format(&path, r.format)?;
            let o = slot(&mut ops, &r.op, &r.binary);
            o.conformance.get_or_insert(r);
        }
        for (path, r) in read_all::<GradcheckRecord>(&dir.join(GRADCHECK_DIR))? {
            check_format(&path, r.format)?;
            let o = slot(&mut ops, &r.op, &r.binary);
            o.gradcheck.get_or_insert(r);
        }
        for (_, e) in read_all::<CatalogEntry>(&dir.join(CATALOG_DIR))? {
            slot(&mut ops, &e, "");
        }
        if ops.is_empty() {
            return Err(ReportError::Empty { dir: dir.to_path_buf() });
        }
        let mut ops: Vec<OpRecords> = ops
            .into_values()
            .map(|mut o| {
                o.binaries.retain(|b| !b.is_empty());
                o.binaries.sort();
                o
            })
            .collect();
        ops.sort_by(|a, b| order(&a.entry).cmp(&order(&b.entry)));
        Ok(Records { ops })
    }
}

/// The report's order: the user's ops first, then the built-ins; by name, each op's VJP op
/// right after it.
fn order(e: &CatalogEntry) -> (bool, &str, bool, u32, &str) {
    let base = e.name.strip_suffix("/vjp").unwrap_or(&e.name);
    (e.source == OpSource::Builtin, base, base.len() != e.name.len(), e.version, &e.identity)
}

/// The records of `entry`'s op, created empty, with `binary` noted.
fn slot<'a>(ops: &'a mut BTreeMap<(String, String), OpRecords>, entry: &CatalogEntry, binary: &str) -> &'a mut OpRecords {
    let o = ops.entry((entry.id.clone(), entry.identity.clone())).or_insert_with(|| OpRecords {
        entry: entry.clone(),
        conformance: None,
        gradcheck: None,
        binaries: Vec::new(),
    });
    if !o.binaries.iter().any(|b| b == binary) {
        o.binaries.push(binary.to_string());
    }
    o
}

fn check_format(path: &Path, format: u32) -> Result<(), ReportError> {
    if format == RECORD_FORMAT {
        return Ok(());
    }
    Err(ReportError::Record { path: path.to_path_buf(), reason: format!("record format {format}, this renderer reads {RECORD_FORMAT}") })
}

/// Every `*.json` file of `dir` parsed as `T`, in name order (none where `dir` is missing).
pub(crate) fn read_all<T: DeserializeOwned>(dir: &Path) -> Result<Vec<(PathBuf, T)>, ReportError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ReportError::io(dir, e)),
    };
    let mut paths: Vec<PathBuf> = Vec::new();
    for e in entries {
        let path = e.map_err(|e| ReportError::io(dir, e))?.path();
        if path.extension().is_some_and(|x| x == "json") {
            paths.push(path);
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|e| ReportError::io(&path, e))?;
            let value = serde_json::from_str(&text).map_err(|e| ReportError::Record { path: path.clone(), reason: e.to_string() })?;
            Ok((path, value))
        })
        .collect()
}
