//! Outcomes and errors, each with its exit code.

use std::process::ExitCode;

/// How a command that ran ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Everything checked passed (exit code 0).
    Ok,
    /// A verdict failed: a rejected kernel, a failing generated test, a damaged store entry
    /// (exit code 1).
    Failed,
}

impl Status {
    /// The exit code.
    pub fn code(self) -> ExitCode {
        match self {
            Status::Ok => ExitCode::SUCCESS,
            Status::Failed => ExitCode::from(1),
        }
    }
}

/// A command that could not run (exit code 3).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `cargo` could not be run, or failed before any test ran (a build error).
    #[error("`{command}` failed: {reason}")]
    Cargo {
        /// The command line.
        command: String,
        /// What happened (the end of its output).
        reason: String,
    },
    /// The report could not be loaded or rendered.
    #[error(transparent)]
    Report(#[from] op_report::ReportError),
    /// The store refused something.
    #[error(transparent)]
    Store(#[from] op_runtime::sharing::SharingError),
    /// A key or the trust list is malformed or unreadable.
    #[error(transparent)]
    Key(#[from] op_runtime::trust::KeyError),
    /// Nothing by that name.
    #[error("no op `{name}` in {looked}")]
    NotFound {
        /// The name asked for.
        name: String,
        /// Where it was looked for.
        looked: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

impl Error {
    /// The exit code of every error: 3 (could not run).
    pub const EXIT: u8 = 3;
}
