//! Kernel and header paths: one resolution, used both by the checker (which reads the file) and
//! by the expansion (which embeds the same absolute path with `include_bytes!`). A path is
//! relative, resolved lexically against an absolute base directory and must stay inside that
//! base's crate (its nearest ancestor holding a `Cargo.toml`), also after symlinks. Reads
//! files; must not parse them.

use std::path::{Component, Path, PathBuf};

/// A directory kernel paths resolve against, and the root of the crate they must stay in; both
/// absolute and free of `.` and `..`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Base {
    /// The directory a relative path is joined to.
    pub dir: PathBuf,
    /// The crate the directory belongs to: no resolved path may leave it.
    pub root: PathBuf,
}

/// A kernel or header file as read: where it is, its bytes, and the base it was found from
/// (its headers resolve from the same base, so one kernel's files come from one crate).
#[derive(Debug)]
pub(super) struct Found {
    /// The absolute, normalised path (what the expansion embeds).
    pub abs: PathBuf,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// The base the path resolved against.
    pub base: Base,
}

/// The bases of `dirs`, in order: each made absolute (a relative directory is the compiler's
/// working directory joined with it, which is what a relative `Span::local_file` means) and
/// normalised; one the working directory cannot anchor is left out.
pub(super) fn bases(dirs: &[PathBuf]) -> Vec<Base> {
    let cwd = std::env::current_dir().ok();
    dirs.iter()
        .filter_map(|d| {
            let abs = if d.is_absolute() { d.clone() } else { cwd.as_ref()?.join(d) };
            let dir = normalize(&abs, Path::new(""))?;
            let root = crate_root(&dir);
            Some(Base { dir, root })
        })
        .collect()
}

/// `base.join(rel)` with `.` and `..` resolved lexically; `None` when `..` climbs past the
/// filesystem root (never silently dropped: the path would name another file).
fn normalize(base: &Path, rel: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in base.join(rel).components() {
        match c {
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// The crate a directory belongs to: its nearest ancestor (itself included) with a `Cargo.toml`;
/// the directory itself where none has one.
fn crate_root(dir: &Path) -> PathBuf {
    dir.ancestors().find(|d| d.join("Cargo.toml").is_file()).unwrap_or(dir).to_path_buf()
}

/// Why a path was refused. Each message completes "kernel source `path` ..." (or "header
/// `inc` ..."), names the rule and the fix, and holds no absolute path (diagnostics must not
/// depend on the machine).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum PathError {
    /// An absolute path.
    #[error("is an absolute path: kernel paths are relative to the crate's `Cargo.toml`, because the file is read into the op's identity at compile time and must ship with the crate; move the file into the crate and write e.g. `kernels/my_kernel.wgsl`")]
    Absolute,
    /// No base directory is known.
    #[error("cannot be found: the crate directory is unknown (CARGO_MANIFEST_DIR is not set)")]
    NoBase,
    /// The path leaves the crate lexically (`..` past its root).
    #[error("leaves the crate: `..` climbs past the directory holding its `Cargo.toml`, and kernels and their headers are part of the op's identity and must ship with the crate; move the file inside the crate and name it from there")]
    Leaves,
    /// The path stays inside lexically but a symlink takes it out.
    #[error("leaves the crate through a symbolic link: kernels and their headers are part of the op's identity and must ship with the crate; copy the file inside the crate instead of linking to it")]
    LeavesThroughLink,
    /// Nothing at the path.
    #[error("does not exist relative to the crate's Cargo.toml or to the declaring file's directory; fix the path or add the file")]
    Missing,
    /// The file exists but cannot be read.
    #[error("cannot be read ({0}); check the file's permissions and that it is a file")]
    Unreadable(String),
}

/// Whether `rel` is absolute (or has a root or a drive prefix).
fn is_absolute(rel: &str) -> bool {
    let p = Path::new(rel);
    p.is_absolute() || p.components().any(|c| matches!(c, Component::Prefix(_) | Component::RootDir))
}

/// Reads `rel` against each base in turn (the first where the file exists inside the base's
/// crate wins). When none has it, the most telling reason: a file that cannot be read, a link
/// out of the crate, a file that exists but outside the crate, a file missing inside it, and
/// last a path that leaves every crate.
pub(super) fn find(bases: &[Base], rel: &str) -> Result<Found, PathError> {
    if is_absolute(rel) {
        return Err(PathError::Absolute);
    }
    let mut best: Option<(u8, PathError)> = None;
    for base in bases {
        let err = match read_in(base, rel) {
            Ok(found) => return Ok(found),
            Err(e) => e,
        };
        let outside_exists = || normalize(&base.dir, Path::new(rel)).is_some_and(|p| p.exists());
        let rank = match &err {
            PathError::Unreadable(_) => 4,
            PathError::LeavesThroughLink => 3,
            PathError::Leaves if outside_exists() => 2,
            PathError::Missing => 1,
            _ => 0,
        };
        if best.as_ref().is_none_or(|(r, _)| rank > *r) {
            best = Some((rank, err));
        }
    }
    Err(best.map_or(PathError::NoBase, |(_, e)| e))
}

/// Reads `rel` against one base: inside its crate, lexically and after symlinks.
pub(super) fn read_in(base: &Base, rel: &str) -> Result<Found, PathError> {
    if is_absolute(rel) {
        return Err(PathError::Absolute);
    }
    let abs = normalize(&base.dir, Path::new(rel)).ok_or(PathError::Leaves)?;
    if !abs.starts_with(&base.root) {
        return Err(PathError::Leaves);
    }
    let bytes = match std::fs::read(&abs) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(PathError::Missing),
        Err(e) => return Err(PathError::Unreadable(e.to_string())),
    };
    if let (Ok(real), Ok(real_root)) = (std::fs::canonicalize(&abs), std::fs::canonicalize(&base.root)) {
        if !real.starts_with(real_root) {
            return Err(PathError::LeavesThroughLink);
        }
    }
    Ok(Found { abs, bytes, base: base.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate directory `<scratch>/krate` (with a `Cargo.toml`, `src/` and `kernels/k.wgsl`)
    /// beside a file `<scratch>/outside.wgsl`; the scratch directory goes when dropped.
    fn layout(tag: &str) -> (tempfile::TempDir, PathBuf) {
        let top = tempfile::Builder::new().prefix(&format!("op-spec-paths-{tag}-")).tempdir().unwrap();
        let krate = top.path().join("krate");
        std::fs::create_dir_all(krate.join("src")).unwrap();
        std::fs::create_dir_all(krate.join("kernels")).unwrap();
        std::fs::write(krate.join("Cargo.toml"), "[package]\nname = \"k\"\n").unwrap();
        std::fs::write(krate.join("kernels/k.wgsl"), "inside").unwrap();
        std::fs::write(top.path().join("outside.wgsl"), "outside").unwrap();
        (top, krate)
    }

    #[test]
    fn a_path_inside_the_crate_resolves_to_one_absolute_file() {
        let (_scratch, krate) = layout("inside");
        let b = bases(&[krate.clone(), krate.join("src")]);
        assert_eq!(b[1].root, krate, "the source directory belongs to the crate");
        let f = find(&b, "kernels/./sub/../k.wgsl").unwrap();
        assert_eq!(f.abs, krate.join("kernels/k.wgsl"));
        assert_eq!(f.bytes, b"inside");
        // From the declaring file's directory too, when the crate root has no such file.
        let f = find(&b, "../kernels/k.wgsl").unwrap();
        assert_eq!((f.abs, f.base), (krate.join("kernels/k.wgsl"), b[1].clone()));
    }

    #[test]
    fn a_path_that_leaves_the_crate_is_refused_even_if_the_file_exists() {
        let (_scratch, krate) = layout("leaves");
        let b = bases(&[krate.clone(), krate.join("src")]);
        // From the crate root it names the file beside the crate: refused as leaving (though
        // from `src/` it would name a missing file inside).
        assert_eq!(find(&b, "../outside.wgsl").unwrap_err(), PathError::Leaves);
        assert_eq!(find(&b, "../../outside.wgsl").unwrap_err(), PathError::Leaves);
        assert_eq!(find(&b[1..], "../../outside.wgsl").unwrap_err(), PathError::Leaves);
        // Far more `..` than the path has components: refused, never clamped at the root.
        assert_eq!(find(&b, "../../../../../../../../../../../../x/k.wgsl").unwrap_err(), PathError::Leaves);
        assert_eq!(find(&b, "/etc/passwd").unwrap_err(), PathError::Absolute);
        assert_eq!(find(&b, "kernels/none.wgsl").unwrap_err(), PathError::Missing);
        assert_eq!(find(&[], "kernels/k.wgsl").unwrap_err(), PathError::NoBase);
    }

    /// A relative base (as `Span::local_file` gives under cargo) is anchored at the working
    /// directory, so the file read is the file an absolute `include_bytes!` embeds, and excess
    /// `..` is refused instead of dropped.
    #[test]
    fn a_relative_base_is_anchored_at_the_working_directory() {
        let b = bases(&[PathBuf::from("src")]);
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(b[0].dir, cwd.join("src"));
        assert!(b[0].dir.is_absolute() && b[0].root.is_absolute());
        assert_eq!(find(&b, "../../../../../../../../../../../../x/k.wgsl").unwrap_err(), PathError::Leaves);
        let f = find(&b, "lib.rs").unwrap();
        assert_eq!(f.abs, cwd.join("src/lib.rs"));
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_out_of_the_crate_is_refused() {
        let (_scratch, krate) = layout("link");
        let link = krate.join("kernels/linked.wgsl");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(krate.parent().unwrap().join("outside.wgsl"), &link).unwrap();
        let b = bases(std::slice::from_ref(&krate));
        assert_eq!(find(&b, "kernels/linked.wgsl").unwrap_err(), PathError::LeavesThroughLink);
        // A link that stays inside is fine.
        let inner = krate.join("kernels/inner.wgsl");
        let _ = std::fs::remove_file(&inner);
        std::os::unix::fs::symlink(krate.join("kernels/k.wgsl"), &inner).unwrap();
        assert_eq!(find(&b, "kernels/inner.wgsl").unwrap().bytes, b"inside");
    }
}
