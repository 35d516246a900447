//! Typed errors of publishing and loading op cards; every variant names the op (its
//! `name@version`) and, where a file is at fault, the file. No I/O here.

use std::fmt;
use std::path::PathBuf;

/// One thing a `public` op lacks of the bar the built-ins meet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missing {
    /// No licence (`license = "..."`, an SPDX expression).
    License,
    /// No description (the function's `///` doc comment).
    Description,
    /// Scalar parameters the description never names in a code span (`` `w` ``).
    ParameterDocs(Vec<String>),
    /// No intact receipt for this content from a backend other than the reference (the `cpu`
    /// kernel or a GPU kernel conformed).
    KernelReceipt,
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missing::License => f.write_str("a licence (add `license = \"MIT\"`, any SPDX expression)"),
            Missing::Description => f.write_str("a description (add a `///` doc comment to the function)"),
            Missing::ParameterDocs(names) => {
                let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                write!(
                    f,
                    "documentation of parameter(s) {} (name each in backticks in the doc comment, e.g. \"window width `w`\")",
                    names.join(", ")
                )
            }
            Missing::KernelReceipt => f.write_str(
                "a receipt for a kernel besides the reference (declare a `cpu` or GPU kernel, conform it with \
                 `conform(&handle, BackendKind::Cpu)` or another backend, and publish with the receipt)",
            ),
        }
    }
}

/// Why an op could not be published to, or loaded from, a store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SharingError {
    /// The op is private: nothing leaves private.
    #[error("op `{op}` is private and nothing leaves private; declare `visibility = workspace` or `visibility = public` with a `license` to share it")]
    Private {
        /// The op's `name@version`.
        op: String,
    },
    /// A VJP op (`<name>/vjp`, derived at registration) travels with its op: loading the op
    /// derives it again.
    #[error("op `{op}` is the VJP op of `{of}`, derived from it at registration: publish `{of}` (its card carries the VJP kernels)")]
    DerivedOp {
        /// The VJP op's `name@version`.
        op: String,
        /// The op it derives from.
        of: String,
    },
    /// The op declares no SPDX licence expression.
    #[error("op `{op}` has no licence and nothing leaves private without one; add `license = \"MIT\"` (any SPDX expression)")]
    NoLicense {
        /// The op's `name@version`.
        op: String,
    },
    /// The licence is not a valid SPDX expression.
    #[error("op `{op}` has licence `{license}`, which is not a valid SPDX expression ({reason}); e.g. \"MIT\" or \"MIT OR Apache-2.0\"")]
    BadLicense {
        /// The op's `name@version`.
        op: String,
        /// The licence as declared.
        license: String,
        /// Why the SPDX parser refused it.
        reason: String,
    },
    /// A `public` op below the bar every built-in meets: everything it lacks, listed.
    #[error(
        "op `{op}` is public but lacks what public ops carry (the bar the built-ins meet): {}; add them, or declare `visibility = workspace`",
        missing.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("; ")
    )]
    BelowPublicBar {
        /// The op's `name@version`.
        op: String,
        /// What it lacks, in a fixed order (licence, description, parameter docs, receipt).
        missing: Vec<Missing>,
    },
    /// `name@version` is already published with other content.
    #[error(
        "op `{op}` is already published with different content (published {published}, new {new}); \
         bump the version (`version = N+1`) or publish it under a new name"
    )]
    ContentChanged {
        /// The op's `name@version`.
        op: String,
        /// Content hash in the store (hex).
        published: String,
        /// Content hash of the op being published (hex).
        new: String,
    },
    /// The requested id is not a `name@version` the store can hold.
    #[error("op `{op}`: not a publishable `name@version`: {reason}")]
    BadId {
        /// The id as given.
        op: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No index entry for the op in this store.
    #[error("op `{op}` is not published in this store (no `{}`)", file.display())]
    NotPublished {
        /// The op's `name@version`.
        op: String,
        /// The index entry looked for.
        file: PathBuf,
    },
    /// A file could not be read or written.
    #[error("op `{op}`: cannot {action} `{}`: {reason}", file.display())]
    Io {
        /// The op's `name@version`.
        op: String,
        /// The file or directory.
        file: PathBuf,
        /// What was attempted (`read`, `write`, `create`, ...).
        action: &'static str,
        /// The operating system's reason.
        reason: String,
    },
    /// A blob named in the op's index entry is missing.
    #[error("op `{op}`: the {role} blob `{}` is missing from the store", file.display())]
    MissingBlob {
        /// The op's `name@version`.
        op: String,
        /// The blob's path.
        file: PathBuf,
        /// What the blob holds (`card`, `contract`, `kernel \`...\``, ...).
        role: String,
    },
    /// A blob's bytes do not hash to its name: the file was altered.
    #[error("op `{op}`: the {role} blob `{}` was tampered with: its bytes hash to {actual}, not to its name {expected}; refusing to load it", file.display())]
    Tampered {
        /// The op's `name@version`.
        op: String,
        /// The blob's path.
        file: PathBuf,
        /// What the blob holds.
        role: String,
        /// The hash the file is named after (hex).
        expected: String,
        /// The hash of its bytes (hex).
        actual: String,
    },
    /// A file parses badly or disagrees with the rest of the entry.
    #[error("op `{op}`: `{}` is corrupt: {reason}", file.display())]
    Corrupt {
        /// The op's `name@version`.
        op: String,
        /// The file at fault.
        file: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Another publisher held the op's index lock for longer than the bounded wait.
    #[error("op `{op}`: another publisher held the lock `{}` for {waited_ms} ms; try again (a lock dies with its holder, so none is stale)", file.display())]
    Locked {
        /// The op's `name@version`.
        op: String,
        /// The lock file.
        file: PathBuf,
        /// How long this publisher waited.
        waited_ms: u64,
    },
    /// The identity recomputed from the loaded contract, body and kernels is not the card's.
    #[error("op `{op}`: the card names content {card}, but its contract, body and kernels hash to {recomputed}; refusing to load it")]
    IdentityMismatch {
        /// The op's `name@version`.
        op: String,
        /// The content hash the card and index name (hex).
        card: String,
        /// The identity recomputed from the loaded blobs (hex).
        recomputed: String,
    },
}

impl SharingError {
    /// The `name@version` the error is about.
    pub fn op(&self) -> &str {
        match self {
            SharingError::Private { op }
            | SharingError::NoLicense { op }
            | SharingError::BadLicense { op, .. }
            | SharingError::BelowPublicBar { op, .. }
            | SharingError::DerivedOp { op, .. }
            | SharingError::ContentChanged { op, .. }
            | SharingError::BadId { op, .. }
            | SharingError::NotPublished { op, .. }
            | SharingError::Io { op, .. }
            | SharingError::MissingBlob { op, .. }
            | SharingError::Tampered { op, .. }
            | SharingError::Corrupt { op, .. }
            | SharingError::Locked { op, .. }
            | SharingError::IdentityMismatch { op, .. } => op,
        }
    }

    /// The file at fault, where one is.
    pub fn file(&self) -> Option<&std::path::Path> {
        match self {
            SharingError::NotPublished { file, .. }
            | SharingError::Io { file, .. }
            | SharingError::MissingBlob { file, .. }
            | SharingError::Tampered { file, .. }
            | SharingError::Corrupt { file, .. }
            | SharingError::Locked { file, .. } => Some(file),
            _ => None,
        }
    }
}
