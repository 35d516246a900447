//! Files of a store: blobs named by the blake3 of their bytes, written atomically (temp file +
//! rename) and re-hashed on every read. Knows nothing of cards or ops beyond naming them in errors.

use super::card::blob_hash;
use super::error::SharingError;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes temp files of concurrent writers in one process (the pid covers processes).
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Whether `s` can name a blob: 64 lowercase hex digits (nothing else reaches the filesystem).
pub(crate) fn is_blob_name(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

pub(crate) fn io_error(op: &str, file: &Path, action: &'static str, e: std::io::Error) -> SharingError {
    SharingError::Io { op: op.to_string(), file: file.to_path_buf(), action, reason: e.to_string() }
}

/// Creates `dir` (and its parents) if needed.
pub(crate) fn ensure_dir(op: &str, dir: &Path) -> Result<(), SharingError> {
    std::fs::create_dir_all(dir).map_err(|e| io_error(op, dir, "create directory", e))
}

/// Writes `bytes` to `path` atomically: a temp file in the same directory, synced, then renamed.
pub(crate) fn write_atomic(op: &str, path: &Path, bytes: &[u8]) -> Result<(), SharingError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    ensure_dir(op, dir)?;
    let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".tmp-{}-{seq}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(op, &tmp, "write", e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error(op, path, "rename a temp file onto", e)
    })
}

/// A store's `blobs/` directory.
pub(crate) struct Blobs {
    pub(crate) dir: PathBuf,
}

impl Blobs {
    /// The path of the blob named `hash`.
    pub(crate) fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(hash)
    }

    /// Stores `bytes` under their hash and returns it. A blob already present with the right
    /// bytes is kept; one whose bytes do not match its name is rewritten.
    pub(crate) fn put(&self, op: &str, bytes: &[u8]) -> Result<String, SharingError> {
        let hash = blob_hash(bytes);
        let path = self.path(&hash);
        match std::fs::read(&path) {
            Ok(old) if old == bytes => Ok(hash),
            Ok(_) => write_atomic(op, &path, bytes).map(|()| hash),
            Err(e) if e.kind() == ErrorKind::NotFound => write_atomic(op, &path, bytes).map(|()| hash),
            Err(e) => Err(io_error(op, &path, "read", e)),
        }
    }

    /// Reads the blob `hash` and checks its bytes hash to its name; `role` says what it holds.
    pub(crate) fn get(&self, op: &str, hash: &str, role: &str) -> Result<Vec<u8>, SharingError> {
        if !is_blob_name(hash) {
            return Err(SharingError::Corrupt {
                op: op.to_string(),
                file: self.dir.clone(),
                reason: format!("the index names the {role} blob `{hash}`, which is not a blake3 hex digest"),
            });
        }
        let path = self.path(hash);
        let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
            ErrorKind::NotFound => SharingError::MissingBlob { op: op.to_string(), file: path.clone(), role: role.to_string() },
            _ => io_error(op, &path, "read", e),
        })?;
        let actual = blob_hash(&bytes);
        if actual != hash {
            return Err(SharingError::Tampered {
                op: op.to_string(),
                file: path,
                role: role.to_string(),
                expected: hash.to_string(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Reads the blob `hash` as UTF-8 text.
    pub(crate) fn get_text(&self, op: &str, hash: &str, role: &str) -> Result<String, SharingError> {
        let bytes = self.get(op, hash, role)?;
        String::from_utf8(bytes).map_err(|e| SharingError::Corrupt {
            op: op.to_string(),
            file: self.path(hash),
            reason: format!("the {role} blob is not UTF-8: {e}"),
        })
    }
}
