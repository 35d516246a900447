//! Files of a store: blobs named by the blake3 of their bytes, per-receipt files named the same
//! way, and the per-op lock. Every write goes through `core::files` (unpredictable temporary
//! names created exclusively, never through a symlink, synced, renamed, directory synced);
//! every read refuses symlinks and non-regular files, is bounded, and is re-hashed against the
//! file's name. Knows nothing of cards or ops beyond naming them in errors.

use super::card::blob_hash;
use super::error::SharingError;
use crate::core::files::{self, Replace};
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Largest blob read (kernel sources, contracts and cards are far smaller).
pub(crate) const MAX_BLOB_BYTES: u64 = 64 << 20;

/// Longest wait for another publisher's lock on one op's index entry.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// Whether `s` can name a blob: 64 lowercase hex digits (nothing else reaches the filesystem).
pub(crate) fn is_blob_name(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

pub(crate) fn io_error(op: &str, file: &Path, action: &'static str, e: std::io::Error) -> SharingError {
    SharingError::Io { op: op.to_string(), file: file.to_path_buf(), action, reason: e.to_string() }
}

/// Writes `bytes` to `path` atomically and durably ([`files::write_atomic`], mode 0644).
pub(crate) fn write_atomic(op: &str, path: &Path, bytes: &[u8], replace: Replace) -> Result<(), SharingError> {
    files::write_atomic(path, bytes, replace, 0o644).map_err(|e| match e.kind() {
        ErrorKind::AlreadyExists => io_error(op, path, "create (it already exists)", e),
        _ => io_error(op, path, "write", e),
    })
}

/// Reads a regular file of at most `max` bytes; `Ok(None)` when it does not exist.
pub(crate) fn read_file(op: &str, path: &Path, max: u64) -> Result<Option<Vec<u8>>, SharingError> {
    match files::read_regular(path, max) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) if matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::InvalidData) => {
            Err(SharingError::Corrupt { op: op.to_string(), file: path.to_path_buf(), reason: e.to_string() })
        }
        Err(e) => Err(io_error(op, path, "read", e)),
    }
}

/// Writes `bytes` as the content-addressed file `path` (named by their hash): kept when already
/// there with these bytes, written when absent, replaced when damaged (other bytes, a symlink,
/// not a regular file). Concurrent writers of one name write the same bytes, so none is lost.
pub(crate) fn put_addressed(op: &str, path: &Path, bytes: &[u8]) -> Result<(), SharingError> {
    match files::read_regular(path, MAX_BLOB_BYTES) {
        Ok(old) if old == bytes => return Ok(()),
        Ok(_) => return write_atomic(op, path, bytes, Replace::Yes),
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        // A symlink, a directory, a device, an oversized file: replace it (never follow it).
        Err(e) if matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::InvalidData) => {
            return write_atomic(op, path, bytes, Replace::Yes)
        }
        Err(e) => return Err(io_error(op, path, "read", e)),
    }
    match files::write_atomic(path, bytes, Replace::No, 0o644) {
        Ok(()) => Ok(()),
        // Another publisher wrote it meanwhile: fine if its bytes are these.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => match files::read_regular(path, MAX_BLOB_BYTES) {
            Ok(old) if old == bytes => Ok(()),
            _ => write_atomic(op, path, bytes, Replace::Yes),
        },
        Err(e) => Err(io_error(op, path, "write", e)),
    }
}

/// Reads the content-addressed file `path` named `hash` (with `role` saying what it holds) and
/// checks its bytes hash to the name.
pub(crate) fn get_addressed(op: &str, path: &Path, hash: &str, role: &str) -> Result<Vec<u8>, SharingError> {
    let bytes = read_file(op, path, MAX_BLOB_BYTES)?.ok_or_else(|| SharingError::MissingBlob {
        op: op.to_string(),
        file: path.to_path_buf(),
        role: role.to_string(),
    })?;
    let actual = blob_hash(&bytes);
    if actual != hash {
        return Err(SharingError::Tampered {
            op: op.to_string(),
            file: path.to_path_buf(),
            role: role.to_string(),
            expected: hash.to_string(),
            actual,
        });
    }
    Ok(bytes)
}

/// UTF-8 text of bytes read from `file`.
pub(crate) fn text(op: &str, file: &Path, role: &str, bytes: Vec<u8>) -> Result<String, SharingError> {
    String::from_utf8(bytes).map_err(|e| SharingError::Corrupt {
        op: op.to_string(),
        file: file.to_path_buf(),
        reason: format!("the {role} is not UTF-8: {e}"),
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

    /// Stores `bytes` under their hash and returns it ([`put_addressed`]).
    pub(crate) fn put(&self, op: &str, bytes: &[u8]) -> Result<String, SharingError> {
        let hash = blob_hash(bytes);
        put_addressed(op, &self.path(&hash), bytes)?;
        Ok(hash)
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
        get_addressed(op, &self.path(hash), hash, role)
    }

    /// Reads the blob `hash` as UTF-8 text.
    pub(crate) fn get_text(&self, op: &str, hash: &str, role: &str) -> Result<String, SharingError> {
        let bytes = self.get(op, hash, role)?;
        text(op, &self.path(hash), &format!("{role} blob"), bytes)
    }
}

/// An exclusive lock on one op's index entry, held until dropped. An advisory `flock` on a lock
/// file (created if missing, never through a symlink): the kernel releases it when its holder
/// exits, however it exits, so a crash leaves no stale lock.
pub(crate) struct IndexLock {
    _file: File,
}

impl IndexLock {
    /// Takes the lock at `path`, waiting at most [`LOCK_WAIT`] for another publisher.
    pub(crate) fn acquire(op: &str, path: &Path) -> Result<IndexLock, SharingError> {
        files::ensure_dir(&files::parent_dir(path)).map_err(|e| io_error(op, path, "create the directory of", e))?;
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NOFOLLOW).mode(0o644);
        }
        let file = match options.open(path) {
            Ok(f) => f,
            // Something planted at the lock path (a symlink: ELOOP, never followed): remove the
            // entry itself (never its target) and create the lock afresh.
            Err(_) if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) => {
                std::fs::remove_file(path).map_err(|e| io_error(op, path, "remove a symlink planted at the lock", e))?;
                options.open(path).map_err(|e| io_error(op, path, "open the lock file", e))?
            }
            Err(e) => return Err(io_error(op, path, "open the lock file", e)),
        };
        if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
            return Err(SharingError::Corrupt {
                op: op.to_string(),
                file: path.to_path_buf(),
                reason: "the lock is not a regular file".into(),
            });
        }
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(IndexLock { _file: file }),
                Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_WAIT => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(SharingError::Locked {
                        op: op.to_string(),
                        file: path.to_path_buf(),
                        waited_ms: start.elapsed().as_millis() as u64,
                    })
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io_error(op, path, "lock", e)),
            }
        }
    }
}
