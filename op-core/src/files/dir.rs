//! A directory opened once and written through by name ([`Dir`]): below the root a caller names,
//! every component is opened with `O_NOFOLLOW | O_DIRECTORY` relative to its parent's open
//! descriptor (`openat`), created with `mkdirat` when asked, and every file is created, renamed
//! and read relative to the directory's descriptor, so a symlink planted at any component
//! (before or during the walk) is refused, never followed. Knows nothing of what the files hold.

use super::{bounded, invalid, Replace, TEMP_PREFIX};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

/// How many random temporary names [`Dir::write_atomic`] tries before giving up.
const TEMP_TRIES: usize = 16;

/// An open directory: the root a caller named, or a subdirectory reached from it without
/// following a symlink at any component ([`Dir::sub`]). Files are created, replaced and read by
/// name inside it.
#[derive(Debug)]
pub struct Dir {
    path: PathBuf,
    #[cfg(unix)]
    fd: std::os::fd::OwnedFd,
}

/// `name` as one normal path component (no separator, not `.` or `..`, not empty).
fn component(name: &str) -> io::Result<&str> {
    let mut parts = Path::new(name).components();
    match (parts.next(), parts.next()) {
        (Some(Component::Normal(_)), None) if !name.contains('/') && !name.contains('\\') => Ok(name),
        _ => Err(invalid(format!("`{name}` is not a single file name (no separators, `.` or `..`)"))),
    }
}

/// An unpredictable temporary name (`TEMP_PREFIX`, 24 hex digits from OS randomness, `.tmp`).
fn temp_name() -> io::Result<String> {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).map_err(|e| io::Error::other(format!("no OS randomness for a temporary name: {e}")))?;
    Ok(format!("{TEMP_PREFIX}{}.tmp", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

impl Dir {
    /// The directory `path` itself: the root the caller named (a symlink in `path` is the
    /// caller's choice and is followed), created with its parents when `create` and missing.
    pub fn open_root(path: &Path, create: bool) -> io::Result<Dir> {
        if create {
            std::fs::create_dir_all(path)?;
        }
        imp::open_root(path)
    }

    /// The subdirectory `rel` (relative, normal components only), each component opened
    /// relative to its parent without following a symlink, and created (mode 0755) when
    /// `create` and missing. A symlink, or something other than a directory, at any component
    /// is `InvalidInput` naming it; a missing one without `create` is `NotFound`.
    pub fn sub(&self, rel: impl AsRef<Path>, create: bool) -> io::Result<Dir> {
        let rel = rel.as_ref();
        let mut names = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => names.push(n.to_str().ok_or_else(|| invalid(format!("{} is not UTF-8", rel.display())))?),
                _ => return Err(invalid(format!("`{}` is not a relative path of plain names", rel.display()))),
            }
        }
        let Some(first) = names.first() else { return Err(invalid("an empty path names no subdirectory".to_string())) };
        let mut dir = imp::child(self, first, create)?;
        for name in names.iter().skip(1) {
            dir = imp::child(&dir, name, create)?;
        }
        Ok(dir)
    }

    /// Writes `bytes` as the file `name` atomically and durably: a temporary file with an
    /// unpredictable name is created exclusively in this directory (never through a symlink)
    /// with Unix permissions `mode`, written, synced and renamed onto `name` (`replace` says
    /// whether an existing file may be replaced: [`Replace::No`] fails with `AlreadyExists`),
    /// then the directory is synced. On failure the temporary file is removed. A symlink at
    /// `name` itself is replaced by the rename, never followed.
    pub fn write_atomic(&self, name: &str, bytes: &[u8], replace: Replace, mode: u32) -> io::Result<()> {
        let name = component(name)?;
        let (tmp, mut file) = imp::create_temp(self, mode)?;
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        drop(file);
        let placed = written.and_then(|()| match replace {
            Replace::Yes => imp::rename(self, &tmp, name),
            Replace::No => imp::rename_noreplace(self, &tmp, name),
        });
        if let Err(e) = placed {
            let _ = imp::remove(self, &tmp);
            return Err(e);
        }
        self.sync()
    }

    /// Creates the file `name` exclusively (fails if anything, a symlink included, is there)
    /// with Unix permissions `mode`, writes `bytes` and syncs file and directory.
    pub fn create_new(&self, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        let name = component(name)?;
        let mut f = imp::create_excl(self, name, mode)?;
        if let Err(e) = f.write_all(bytes).and_then(|()| f.sync_all()) {
            drop(f);
            let _ = imp::remove(self, name);
            return Err(e);
        }
        self.sync()
    }

    /// Opens the regular file `name` for reading, never through a symlink.
    pub fn open_regular(&self, name: &str) -> io::Result<File> {
        let name = component(name)?;
        let file = imp::open_read(self, name)?;
        if !file.metadata()?.is_file() {
            return Err(invalid(format!("{} is not a regular file", self.path.join(name).display())));
        }
        Ok(file)
    }

    /// Reads the regular file `name` (never through a symlink) of at most `max` bytes; a larger
    /// one is `InvalidData`.
    pub fn read_regular(&self, name: &str, max: u64) -> io::Result<Vec<u8>> {
        bounded(self.open_regular(name)?, &self.path.join(name), max)
    }

    /// Opens (creating, with Unix permissions `mode`) the regular file `name` for reading and
    /// writing, for a lock: never through a symlink; a symlink planted there is removed (the
    /// entry itself, never its target) and the file created afresh.
    pub fn open_lock(&self, name: &str, mode: u32) -> io::Result<File> {
        let name = component(name)?;
        let file = match imp::open_rw_create(self, name, mode) {
            Ok(f) => f,
            Err(_) if imp::is_symlink(self, name) => {
                imp::remove(self, name)?;
                imp::open_rw_create(self, name, mode)?
            }
            Err(e) => return Err(e),
        };
        if !file.metadata()?.is_file() {
            return Err(invalid(format!("{} is not a regular file", self.path.join(name).display())));
        }
        Ok(file)
    }

    /// The names in this directory (not `.` and `..`), unsorted; names that are not UTF-8
    /// are left out (nothing this crate writes has one).
    pub fn names(&self) -> io::Result<Vec<String>> {
        imp::names(self)
    }

    /// Makes the directory's entries (a rename into it) durable. A no-op off Unix.
    pub fn sync(&self) -> io::Result<()> {
        imp::sync(self)
    }
}

#[cfg(unix)]
mod imp {
    use super::{invalid, temp_name, Dir, TEMP_TRIES};
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    use rustix::io::Errno;
    use std::fs::File;
    use std::io;
    use std::path::Path;

    const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);

    fn mode(m: u32) -> Mode {
        Mode::from_raw_mode(m as rustix::fs::RawMode)
    }

    pub(super) fn open_root(path: &Path) -> io::Result<Dir> {
        let fd = rustix::fs::open(path, DIR_FLAGS, Mode::empty()).map_err(|e| with_path(e, path))?;
        Ok(Dir { path: path.to_path_buf(), fd })
    }

    /// `e` as an I/O error naming `path`, its kind kept.
    fn with_path(e: Errno, path: &Path) -> io::Error {
        let e = io::Error::from(e);
        io::Error::new(e.kind(), format!("{}: {e}", path.display()))
    }

    /// Why `name` in `dir` could not be opened as a directory without following it: a symlink,
    /// or not a directory (`InvalidInput`), else the error itself.
    fn refused(dir: &Dir, name: &str, e: Errno) -> io::Error {
        let path = dir.path.join(name);
        match rustix::fs::statat(&dir.fd, name, AtFlags::SYMLINK_NOFOLLOW).map(|st| FileType::from_raw_mode(st.st_mode)) {
            Ok(FileType::Symlink) => invalid(format!("{} is a symbolic link; refusing to follow it", path.display())),
            Ok(t) if t != FileType::Directory => invalid(format!("{} exists and is not a directory", path.display())),
            _ => with_path(e, &path),
        }
    }

    pub(super) fn child(dir: &Dir, name: &str, create: bool) -> io::Result<Dir> {
        let flags = DIR_FLAGS | OFlags::NOFOLLOW;
        let open = || rustix::fs::openat(&dir.fd, name, flags, Mode::empty());
        let fd = match open() {
            Ok(fd) => fd,
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&dir.fd, name, mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(refused(dir, name, e)),
                }
                open().map_err(|e| refused(dir, name, e))?
            }
            Err(e) => return Err(refused(dir, name, e)),
        };
        Ok(Dir { path: dir.path.join(name), fd })
    }

    pub(super) fn create_excl(dir: &Dir, name: &str, m: u32) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&dir.fd, name, flags, mode(m)).map_err(|e| with_path(e, &dir.path.join(name)))?;
        Ok(File::from(fd))
    }

    pub(super) fn create_temp(dir: &Dir, m: u32) -> io::Result<(String, File)> {
        let mut last = None;
        for _ in 0..TEMP_TRIES {
            let name = temp_name()?;
            match create_excl(dir, &name, m) {
                Ok(f) => return Ok((name, f)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
    }

    pub(super) fn rename(dir: &Dir, from: &str, to: &str) -> io::Result<()> {
        rustix::fs::renameat(&dir.fd, from, &dir.fd, to).map_err(|e| with_path(e, &dir.path.join(to)))
    }

    /// `from` renamed to `to` unless `to` exists (`AlreadyExists`): `renameat2(NOREPLACE)`
    /// where the kernel and filesystem have it, else a hard link and an unlink.
    pub(super) fn rename_noreplace(dir: &Dir, from: &str, to: &str) -> io::Result<()> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        match rustix::fs::renameat_with(&dir.fd, from, &dir.fd, to, rustix::fs::RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
            Err(e) => return Err(with_path(e, &dir.path.join(to))),
        }
        rustix::fs::linkat(&dir.fd, from, &dir.fd, to, AtFlags::empty()).map_err(|e| with_path(e, &dir.path.join(to)))?;
        remove(dir, from)
    }

    pub(super) fn remove(dir: &Dir, name: &str) -> io::Result<()> {
        rustix::fs::unlinkat(&dir.fd, name, AtFlags::empty()).map_err(|e| with_path(e, &dir.path.join(name)))
    }

    pub(super) fn is_symlink(dir: &Dir, name: &str) -> bool {
        rustix::fs::statat(&dir.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
    }

    pub(super) fn open_read(dir: &Dir, name: &str) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        match rustix::fs::openat(&dir.fd, name, flags, Mode::empty()) {
            Ok(fd) => Ok(File::from(fd)),
            Err(Errno::LOOP) => Err(invalid(format!("{} is a symbolic link; refusing to follow it", dir.path.join(name).display()))),
            Err(e) => Err(with_path(e, &dir.path.join(name))),
        }
    }

    pub(super) fn open_rw_create(dir: &Dir, name: &str, m: u32) -> io::Result<File> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&dir.fd, name, flags, mode(m)).map_err(|e| with_path(e, &dir.path.join(name)))?;
        Ok(File::from(fd))
    }

    pub(super) fn names(dir: &Dir) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&dir.fd).map_err(|e| with_path(e, &dir.path))? {
            let entry = entry.map_err(|e| with_path(e, &dir.path))?;
            match entry.file_name().to_str() {
                Ok("." | "..") | Err(_) => {}
                Ok(n) => out.push(n.to_string()),
            }
        }
        Ok(out)
    }

    pub(super) fn sync(dir: &Dir) -> io::Result<()> {
        rustix::fs::fsync(&dir.fd).map_err(|e| with_path(e, &dir.path))
    }
}

/// Off Unix: paths, with each component checked not to be a symlink before use (a race with
/// a concurrent planter remains there; Unix has none).
#[cfg(not(unix))]
mod imp {
    use super::{invalid, temp_name, Dir, TEMP_TRIES};
    use std::fs::{self, File, OpenOptions};
    use std::io;
    use std::path::Path;

    fn check_dir(path: &Path) -> io::Result<()> {
        let m = fs::symlink_metadata(path)?;
        if m.file_type().is_symlink() {
            return Err(invalid(format!("{} is a symbolic link; refusing to follow it", path.display())));
        }
        if !m.is_dir() {
            return Err(invalid(format!("{} exists and is not a directory", path.display())));
        }
        Ok(())
    }

    pub(super) fn open_root(path: &Path) -> io::Result<Dir> {
        if !fs::metadata(path)?.is_dir() {
            return Err(invalid(format!("{} is not a directory", path.display())));
        }
        Ok(Dir { path: path.to_path_buf() })
    }

    pub(super) fn child(dir: &Dir, name: &str, create: bool) -> io::Result<Dir> {
        let path = dir.path.join(name);
        match check_dir(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => match fs::create_dir(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            },
            other => other?,
        }
        check_dir(&path)?;
        Ok(Dir { path })
    }

    pub(super) fn create_excl(dir: &Dir, name: &str, _mode: u32) -> io::Result<File> {
        OpenOptions::new().write(true).create_new(true).open(dir.path.join(name))
    }

    pub(super) fn create_temp(dir: &Dir, mode: u32) -> io::Result<(String, File)> {
        let mut last = None;
        for _ in 0..TEMP_TRIES {
            let name = temp_name()?;
            match create_excl(dir, &name, mode) {
                Ok(f) => return Ok((name, f)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
    }

    pub(super) fn rename(dir: &Dir, from: &str, to: &str) -> io::Result<()> {
        fs::rename(dir.path.join(from), dir.path.join(to))
    }

    pub(super) fn rename_noreplace(dir: &Dir, from: &str, to: &str) -> io::Result<()> {
        fs::hard_link(dir.path.join(from), dir.path.join(to))?;
        remove(dir, from)
    }

    pub(super) fn remove(dir: &Dir, name: &str) -> io::Result<()> {
        fs::remove_file(dir.path.join(name))
    }

    pub(super) fn is_symlink(dir: &Dir, name: &str) -> bool {
        fs::symlink_metadata(dir.path.join(name)).is_ok_and(|m| m.file_type().is_symlink())
    }

    pub(super) fn open_read(dir: &Dir, name: &str) -> io::Result<File> {
        if is_symlink(dir, name) {
            return Err(invalid(format!("{} is a symbolic link; refusing to follow it", dir.path.join(name).display())));
        }
        File::open(dir.path.join(name))
    }

    pub(super) fn open_rw_create(dir: &Dir, name: &str, _mode: u32) -> io::Result<File> {
        if is_symlink(dir, name) {
            return Err(invalid(format!("{} is a symbolic link", dir.path.join(name).display())));
        }
        OpenOptions::new().read(true).write(true).create(true).truncate(false).open(dir.path.join(name))
    }

    pub(super) fn names(dir: &Dir) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for e in fs::read_dir(&dir.path)? {
            if let Ok(n) = e?.file_name().into_string() {
                out.push(n);
            }
        }
        Ok(out)
    }

    pub(super) fn sync(_dir: &Dir) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(&format!("op-dir-{tag}-")).tempdir().expect("temp dir")
    }

    #[test]
    fn names_must_be_single_plain_components() {
        // The root is a directory inside the test's own scratch directory, so "nothing escaped
        // to `../x`" is checked where no other process writes (not in the shared temp dir).
        let t = scratch("names");
        let inner = t.path().join("root");
        std::fs::create_dir(&inner).unwrap();
        let root = Dir::open_root(&inner, false).unwrap();
        for bad in ["", ".", "..", "a/b", "../x", "/abs"] {
            assert_eq!(root.write_atomic(bad, b"x", Replace::Yes, 0o644).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
        for bad in ["../x", "/abs", "a/../b", "."] {
            assert!(root.sub(bad, true).is_err(), "{bad:?}");
        }
        assert!(!t.path().join("x").exists(), "nothing written beside the root");
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1, "only the root in the scratch directory");
    }

    #[test]
    fn writes_replace_or_refuse_and_leave_no_temporary_file() {
        let t = scratch("write");
        let d = Dir::open_root(t.path(), false).unwrap().sub("a/b", true).unwrap();
        d.write_atomic("f", b"one", Replace::No, 0o644).unwrap();
        assert_eq!(d.write_atomic("f", b"two", Replace::No, 0o644).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(d.read_regular("f", 10).unwrap(), b"one");
        d.write_atomic("f", b"three", Replace::Yes, 0o644).unwrap();
        assert_eq!(std::fs::read(t.path().join("a/b/f")).unwrap(), b"three");
        assert_eq!(d.names().unwrap(), vec!["f".to_string()]);
        assert_eq!(d.read_regular("f", 4).unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert_eq!(d.create_new("f", b"x", 0o600).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
    }

    /// A symlink at any component below the root is refused, whichever component it is and
    /// wherever it points; nothing is created or written outside the root.
    #[cfg(unix)]
    #[test]
    fn a_symlink_at_any_component_is_refused() {
        use std::os::unix::fs::symlink;
        for depth in 0..3 {
            let t = scratch("link");
            let root = t.path().join("root");
            let outside = t.path().join("outside");
            std::fs::create_dir_all(&outside).unwrap();
            let parts = ["one", "two", "three"];
            let mut at = root.clone();
            for p in &parts[..depth] {
                at = at.join(p);
            }
            std::fs::create_dir_all(&at).unwrap();
            symlink(&outside, at.join(parts[depth])).unwrap();
            let r = Dir::open_root(&root, false).unwrap();
            let e = r.sub(parts.join("/"), true).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "depth {depth}: {e}");
            assert!(e.to_string().contains("symbolic link"), "{e}");
            assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "depth {depth}: created through the link");
        }
        // A symlink to a file where a directory is expected, and a file there: refused too.
        let t = scratch("file");
        std::fs::write(t.path().join("f"), b"x").unwrap();
        let r = Dir::open_root(t.path(), false).unwrap();
        assert!(r.sub("f/g", true).unwrap_err().to_string().contains("not a directory"));
        symlink(t.path().join("f"), t.path().join("l")).unwrap();
        assert!(r.sub("l", true).unwrap_err().to_string().contains("symbolic link"));
        assert!(r.read_regular("l", 10).unwrap_err().to_string().contains("symbolic link"));
        // A lock planted as a symlink is replaced, its target untouched.
        let lock = r.open_lock("l", 0o644).unwrap();
        drop(lock);
        assert_eq!(std::fs::read(t.path().join("f")).unwrap(), b"x");
        assert!(!std::fs::symlink_metadata(t.path().join("l")).unwrap().file_type().is_symlink());
    }
}
