//! Crash-safe, symlink-safe file primitives shared by every on-disk cache and store (the CUDA
//! PTX cache, the sharing store, key files): atomic publication through a temporary file with
//! an unpredictable name created exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`, so a planted
//! symlink is never followed), synced, renamed into place, then the directory synced; bounded
//! reads that refuse symlinks and non-regular files; and [`Dir`], a directory reached from a
//! root without following a symlink at any component, which every store write goes through.
//! Knows nothing of what the files hold.

mod dir;

pub use dir::Dir;

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Prefix of every temporary file (readers of a directory skip names starting with it).
pub const TEMP_PREFIX: &str = ".tmp-";

/// How [`write_atomic`] treats an existing file at the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replace {
    /// Replace it (atomically: readers see the old or the new file, never a mix).
    Yes,
    /// Keep it and fail with [`io::ErrorKind::AlreadyExists`] (`RENAME_NOREPLACE` / link).
    No,
}

/// The directory holding `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Creates `dir` and its parents; refuses (`InvalidInput`) when `dir` exists as a symlink or as
/// something other than a directory. It checks `dir` itself, not its parents: for a file whose
/// directory the caller names (a cache, a key). A store reaches its subdirectories from its
/// root with [`Dir::sub`], which checks every component.
pub fn ensure_dir(dir: &Path) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(m) if m.file_type().is_symlink() => {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is a symbolic link, not a directory", dir.display())))
        }
        Ok(_) => return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} exists and is not a directory", dir.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    fs::create_dir_all(dir)?;
    // Another process may have raced a symlink in between; check again.
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a directory", dir.display()))),
        Err(e) => Err(e),
    }
}

/// Writes `bytes` to `path` atomically and durably ([`Dir::write_atomic`] in `path`'s
/// directory, created if missing; a symlink as that directory is refused by [`ensure_dir`]). A
/// symlink at `path` itself is replaced by the rename, never followed.
pub fn write_atomic(path: &Path, bytes: &[u8], replace: Replace, mode: u32) -> io::Result<()> {
    let (dir, name) = split(path)?;
    ensure_dir(&dir)?;
    Dir::open_root(&dir, false)?.write_atomic(name, bytes, replace, mode)
}

/// `path`'s directory and file name; `InvalidInput` when it has no UTF-8 file name.
fn split(path: &Path) -> io::Result<(PathBuf, &str)> {
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| invalid(format!("{} has no file name", path.display())))?;
    Ok((parent_dir(path), name))
}

/// An `InvalidInput` error with `message`.
pub fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// Opens `path` for reading without following a symlink at its last component (`O_NOFOLLOW`
/// on Unix), and only if it is a regular file ([`Dir::open_regular`] in its directory).
pub fn open_regular(path: &Path) -> io::Result<File> {
    let (dir, name) = split(path)?;
    Dir::open_root(&dir, false)?.open_regular(name)
}

/// Reads a regular file (see [`open_regular`]) of at most `max` bytes; a larger one is an
/// `InvalidData` error, so a planted huge file cannot exhaust memory.
pub fn read_regular(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    bounded(open_regular(path)?, path, max)
}

/// The bytes of the open regular file `file` (at `path`, for messages), at most `max` of them.
pub fn bounded(file: File, path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    if len > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{} is {len} bytes, more than the {max} allowed", path.display())));
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len as usize).map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, format!("{}: {e}", path.display())))?;
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{} grew past the {max} bytes allowed", path.display())));
    }
    Ok(bytes)
}

/// Creates `path` exclusively (fails if anything, a symlink included, is there) with Unix
/// permissions `mode`, writes `bytes` and syncs file and directory ([`Dir::create_new`]). For
/// files that must never replace an existing one (a signing key).
pub fn create_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let (dir, name) = split(path)?;
    ensure_dir(&dir)?;
    Dir::open_root(&dir, false)?.create_new(name, bytes, mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(&format!("op-files-{tag}-")).tempdir().expect("temp dir")
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn write_atomic_replaces_or_refuses_and_leaves_no_temporary_file() {
        let t = scratch("write");
        let p = t.path().join("sub").join("f");
        write_atomic(&p, b"one", Replace::No, 0o644).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
        let e = write_atomic(&p, b"two", Replace::No, 0o644).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&p).unwrap(), b"one");
        write_atomic(&p, b"three", Replace::Yes, 0o644).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"three");
        assert_eq!(names(&t.path().join("sub")), vec!["f".to_string()]);
        assert!(write_atomic(Path::new("/"), b"x", Replace::Yes, 0o644).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_never_followed() {
        let t = scratch("symlink");
        let outside = t.path().join("outside");
        fs::write(&outside, b"precious").unwrap();
        let store = t.path().join("store");
        fs::create_dir(&store).unwrap();
        // A symlink at the destination is replaced by the rename, its target untouched.
        let dest = store.join("dest");
        std::os::unix::fs::symlink(&outside, &dest).unwrap();
        assert!(read_regular(&dest, 1 << 20).is_err(), "a symlink is not read through");
        write_atomic(&dest, b"new", Replace::Yes, 0o644).unwrap();
        assert_eq!(fs::read(&outside).unwrap(), b"precious");
        assert!(!fs::symlink_metadata(&dest).unwrap().file_type().is_symlink());
        // Exclusive creation at a planted symlink (dangling or not) fails, nothing is written.
        let planted = store.join("planted");
        std::os::unix::fs::symlink(&outside, &planted).unwrap();
        assert_eq!(create_new(&planted, b"x", 0o600).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        let dangling = store.join("dangling");
        std::os::unix::fs::symlink(t.path().join("nowhere"), &dangling).unwrap();
        assert!(create_new(&dangling, b"x", 0o600).is_err());
        assert!(!t.path().join("nowhere").exists());
        assert_eq!(fs::read(&outside).unwrap(), b"precious");
        // A symlinked directory is refused.
        let linked_dir = t.path().join("linked");
        std::os::unix::fs::symlink(&store, &linked_dir).unwrap();
        assert!(write_atomic(&linked_dir.join("f"), b"x", Replace::Yes, 0o644).is_err());
        assert!(ensure_dir(&linked_dir).is_err());
    }

    #[test]
    fn reads_are_bounded_and_regular_only() {
        let t = scratch("read");
        let p = t.path().join("f");
        fs::write(&p, vec![7u8; 100]).unwrap();
        assert_eq!(read_regular(&p, 100).unwrap().len(), 100);
        assert_eq!(read_regular(&p, 99).unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert!(read_regular(t.path(), 100).is_err(), "a directory is not a regular file");
        assert_eq!(read_regular(&t.path().join("absent"), 1).unwrap_err().kind(), io::ErrorKind::NotFound);
        #[cfg(unix)]
        assert!(read_regular(Path::new("/dev/zero"), 1 << 20).is_err(), "a device is not a regular file");
    }
}
