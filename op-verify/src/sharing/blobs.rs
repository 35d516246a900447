//! Files of a store: its directories ([`Area`]: `blobs`, `receipts/<hash>`, `cards`), each
//! opened from the store's root without following a symlink at any component
//! ([`files::Dir`]); blobs and per-receipt files named by the blake3 of their bytes; the per-op
//! lock. Every write is atomic and durable (unpredictable temporary names created exclusively,
//! never through a symlink, synced, renamed, directory synced); every read refuses symlinks and
//! non-regular files, is bounded, and content-addressed files are re-hashed against their
//! names. Knows nothing of cards or ops beyond naming them in errors.

use super::card::blob_hash;
use super::error::SharingError;
use op_core::files::{Dir, Replace};
use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Largest blob read (kernel sources, contracts and cards are far smaller).
pub const MAX_BLOB_BYTES: u64 = 64 << 20;

/// Longest wait for another publisher's lock on one op's index entry.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// Whether `s` can name a blob: 64 lowercase hex digits (nothing else reaches the filesystem).
pub fn is_blob_name(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

pub fn io_error(op: &str, file: &Path, action: &'static str, e: std::io::Error) -> SharingError {
    SharingError::Io { op: op.to_string(), file: file.to_path_buf(), action, reason: e.to_string() }
}

/// UTF-8 text of bytes read from `file`.
pub fn text(op: &str, file: &Path, role: &str, bytes: Vec<u8>) -> Result<String, SharingError> {
    String::from_utf8(bytes).map_err(|e| SharingError::Corrupt {
        op: op.to_string(),
        file: file.to_path_buf(),
        reason: format!("the {role} is not UTF-8: {e}"),
    })
}

/// One directory of a store (`blobs`, `receipts/<hash>`, `cards`), reached from the store's
/// root without following a symlink at any component. Opened for reading, a missing directory
/// is empty; opened for writing, it is created.
pub struct Area {
    path: PathBuf,
    dir: Option<Dir>,
}

impl Area {
    /// The directory `rel` of the store at `root`; created (with the root) when `create`.
    /// A symlink or non-directory at any component below the root is an `Io` error naming it.
    pub fn open(root: &Path, rel: &str, op: &str, create: bool) -> Result<Area, SharingError> {
        let path = root.join(rel);
        let dir = match Dir::open_root(root, create).and_then(|r| r.sub(rel, create)) {
            Ok(d) => Some(d),
            Err(e) if !create && e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(io_error(op, &path, "open the store directory (never through a symlink)", e)),
        };
        Ok(Area { path, dir })
    }

    /// The path of the file `name` in it (for messages; nothing is opened through it).
    pub fn path(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    fn dir(&self, op: &str) -> Result<&Dir, SharingError> {
        self.dir.as_ref().ok_or_else(|| SharingError::Io {
            op: op.to_string(),
            file: self.path.clone(),
            action: "write into",
            reason: "the directory was opened for reading and does not exist".into(),
        })
    }

    /// The names in the directory, temporary files left out; none when it does not exist.
    pub fn names(&self, op: &str) -> Result<Vec<String>, SharingError> {
        let Some(dir) = &self.dir else { return Ok(Vec::new()) };
        let mut names = dir.names().map_err(|e| io_error(op, &self.path, "list", e))?;
        // A publisher's file in flight, or one a crash left behind.
        names.retain(|n| !n.starts_with(op_core::files::TEMP_PREFIX));
        Ok(names)
    }

    /// Reads the regular file `name` of at most `max` bytes; `Ok(None)` when it does not exist.
    pub fn read(&self, op: &str, name: &str, max: u64) -> Result<Option<Vec<u8>>, SharingError> {
        let Some(dir) = &self.dir else { return Ok(None) };
        match dir.read_regular(name, max) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) if matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::InvalidData) => {
                Err(SharingError::Corrupt { op: op.to_string(), file: self.path(name), reason: e.to_string() })
            }
            Err(e) => Err(io_error(op, &self.path(name), "read", e)),
        }
    }

    /// Writes `bytes` as `name` atomically and durably (mode 0644).
    pub fn write(&self, op: &str, name: &str, bytes: &[u8], replace: Replace) -> Result<(), SharingError> {
        self.dir(op)?.write_atomic(name, bytes, replace, 0o644).map_err(|e| match e.kind() {
            ErrorKind::AlreadyExists => io_error(op, &self.path(name), "create (it already exists)", e),
            _ => io_error(op, &self.path(name), "write", e),
        })
    }

    /// Writes `bytes` as the content-addressed file `name` (named by their hash): kept when
    /// already there with these bytes, written when absent, replaced when damaged (other bytes,
    /// a symlink, not a regular file). Concurrent writers of one name write the same bytes, so
    /// none is lost.
    pub fn put_addressed(&self, op: &str, name: &str, bytes: &[u8]) -> Result<(), SharingError> {
        let dir = self.dir(op)?;
        match dir.read_regular(name, MAX_BLOB_BYTES) {
            Ok(old) if old == bytes => return Ok(()),
            Ok(_) => return self.write(op, name, bytes, Replace::Yes),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            // A symlink, a directory, a device, an oversized file: replace it (never follow it).
            Err(e) if matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::InvalidData) => {
                return self.write(op, name, bytes, Replace::Yes)
            }
            Err(e) => return Err(io_error(op, &self.path(name), "read", e)),
        }
        match dir.write_atomic(name, bytes, Replace::No, 0o644) {
            Ok(()) => Ok(()),
            // Another publisher wrote it meanwhile: fine if its bytes are these.
            Err(e) if e.kind() == ErrorKind::AlreadyExists => match dir.read_regular(name, MAX_BLOB_BYTES) {
                Ok(old) if old == bytes => Ok(()),
                _ => self.write(op, name, bytes, Replace::Yes),
            },
            Err(e) => Err(io_error(op, &self.path(name), "write", e)),
        }
    }

    /// Reads the content-addressed file `name`, which must hash to `hash` (with `role` saying
    /// what it holds): `MissingBlob` when absent, `Tampered` when its bytes hash otherwise.
    pub fn get_addressed(&self, op: &str, name: &str, hash: &str, role: &str) -> Result<Vec<u8>, SharingError> {
        let path = self.path(name);
        let bytes = self.read(op, name, MAX_BLOB_BYTES)?.ok_or_else(|| SharingError::MissingBlob {
            op: op.to_string(),
            file: path.clone(),
            role: role.to_string(),
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

    /// Stores `bytes` as a blob named by their hash and returns it ([`Area::put_addressed`]).
    pub fn put(&self, op: &str, bytes: &[u8]) -> Result<String, SharingError> {
        let hash = blob_hash(bytes);
        self.put_addressed(op, &hash, bytes)?;
        Ok(hash)
    }

    /// Reads the blob `hash` and checks its bytes hash to its name; `role` says what it holds.
    pub fn get(&self, op: &str, hash: &str, role: &str) -> Result<Vec<u8>, SharingError> {
        if !is_blob_name(hash) {
            return Err(SharingError::Corrupt {
                op: op.to_string(),
                file: self.path.clone(),
                reason: format!("the index names the {role} blob `{hash}`, which is not a blake3 hex digest"),
            });
        }
        self.get_addressed(op, hash, hash, role)
    }

    /// Reads the blob `hash` as UTF-8 text.
    pub fn get_text(&self, op: &str, hash: &str, role: &str) -> Result<String, SharingError> {
        let bytes = self.get(op, hash, role)?;
        text(op, &self.path(hash), &format!("{role} blob"), bytes)
    }

    /// Takes the lock `name` in this directory ([`IndexLock`]).
    pub fn lock(&self, op: &str, name: &str) -> Result<IndexLock, SharingError> {
        let path = self.path(name);
        let file = self.dir(op)?.open_lock(name, 0o644).map_err(|e| io_error(op, &path, "open the lock file", e))?;
        IndexLock::acquire(op, &path, file)
    }
}

/// An exclusive lock on one op's index entry, held until dropped. An advisory `flock` on a lock
/// file (created if missing, never through a symlink): the kernel releases it when its holder
/// exits, however it exits, so a crash leaves no stale lock.
pub struct IndexLock {
    _file: File,
}

impl IndexLock {
    /// Takes the lock on `file` (at `path`), waiting at most [`LOCK_WAIT`] for another
    /// publisher.
    fn acquire(op: &str, path: &Path, file: File) -> Result<IndexLock, SharingError> {
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
