//! Crash-safe, symlink-safe file primitives shared by every on-disk cache and store (the CUDA
//! PTX cache, the sharing store, key files): atomic publication through a temporary file with
//! an unpredictable name created exclusively (`O_CREAT|O_EXCL`, so a planted symlink is never
//! followed), synced, renamed into place, then the directory synced; and bounded reads that
//! refuse symlinks and non-regular files. Knows nothing of what the files hold.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
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
/// something other than a directory.
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

/// Makes the directory entries of `dir` (a rename into it) durable. A no-op off Unix.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Writes `bytes` to `path` atomically and durably: a temporary file with an unpredictable name
/// in the same directory (created if missing) is created exclusively (never through a symlink)
/// with Unix permissions `mode`, written, synced, renamed onto `path` (`replace` says whether an
/// existing file may be replaced), and the directory is synced. On failure the temporary file
/// is removed. A symlink at `path` itself is replaced by the rename, never followed.
pub fn write_atomic(path: &Path, bytes: &[u8], replace: Replace, mode: u32) -> io::Result<()> {
    if path.file_name().is_none() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} has no file name", path.display())));
    }
    let dir = parent_dir(path);
    ensure_dir(&dir)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX).suffix(".tmp").rand_bytes(12);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    // `tempfile` opens with `create_new` (O_CREAT|O_EXCL): an existing name, symlink or not,
    // fails and another random name is tried.
    let mut tmp = builder.tempfile_in(&dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    match replace {
        Replace::Yes => tmp.persist(path).map(drop).map_err(|e| e.error)?,
        Replace::No => tmp.persist_noclobber(path).map(drop).map_err(|e| e.error)?,
    }
    sync_dir(&dir)
}

/// Opens `path` for reading without following a symlink at its last component (`O_NOFOLLOW`
/// on Unix), and only if it is a regular file.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    if fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is a symbolic link", path.display())));
    }
    let file = options.open(path).map_err(|e| {
        // ELOOP: the last component is a symlink.
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return io::Error::new(io::ErrorKind::InvalidInput, format!("{} is a symbolic link; refusing to follow it", path.display()));
        }
        e
    })?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a regular file", path.display())));
    }
    Ok(file)
}

/// Reads a regular file (see [`open_regular`]) of at most `max` bytes; a larger one is an
/// `InvalidData` error, so a planted huge file cannot exhaust memory.
pub fn read_regular(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let len = file.metadata()?.len();
    if len > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{} is {len} bytes, more than the {max} allowed", path.display())));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{} grew past the {max} bytes allowed", path.display())));
    }
    Ok(bytes)
}

/// Creates `path` exclusively (fails if anything, a symlink included, is there) with Unix
/// permissions `mode`, writes `bytes` and syncs file and directory. For files that must never
/// replace an existing one (a signing key).
pub fn create_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = parent_dir(path);
    ensure_dir(&dir)?;
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = options.open(path)?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    if let Err(e) = written {
        drop(f);
        let _ = fs::remove_file(path);
        return Err(e);
    }
    sync_dir(&dir)
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
