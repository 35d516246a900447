//! Why a report could not be loaded or written: each error names the file.

use std::path::{Path, PathBuf};

/// A report that could not be loaded or rendered.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A record is not valid JSON of its kind, or of another format.
    #[error("record {}: {reason}", path.display())]
    Record {
        /// The record file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The records directory holds no record at all.
    #[error("no records in {}: run the generated tests with OP_REPORT_DIR set (`cargo op report` does)", dir.display())]
    Empty {
        /// The records directory.
        dir: PathBuf,
    },
}

impl ReportError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> ReportError {
        ReportError::Io { path: path.to_path_buf(), source }
    }
}
