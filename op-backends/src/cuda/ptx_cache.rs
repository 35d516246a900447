//! The on-disk PTX cache: one file `<key>.ptx` per [`ptx_cache_key`], holding a
//! header line with a keyed blake3 digest of (key, PTX) and then the PTX. Every load verifies
//! the digest: a corrupt entry (altered, truncated, copied from another key, or of an older
//! format) is counted and rebuilt, never handed to the driver. Pure filesystem code, testable
//! without a GPU; the engine supplies the compiler and the loader as closures (and knows this
//! module, never the reverse).

use op_core::files::{self, Replace};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// First bytes of every entry; the digest (64 hex digits) and a newline follow, then the PTX.
pub const ENTRY_MAGIC: &str = "// op-runtime ptx cache v1 blake3=";

/// Largest entry read back (PTX of one kernel is far smaller).
const MAX_ENTRY_BYTES: u64 = 256 << 20;

/// The digest of an entry: keyed blake3 over the key and the PTX, length-prefixed.
pub fn entry_digest(key: &str, ptx: &str) -> String {
    let mut h = blake3::Hasher::new_derive_key("op-runtime 2025 cuda ptx cache entry v1");
    h.update(&(key.len() as u64).to_le_bytes());
    h.update(key.as_bytes());
    h.update(&(ptx.len() as u64).to_le_bytes());
    h.update(ptx.as_bytes());
    h.finalize().to_hex().to_string()
}

/// The bytes of the entry for (`key`, `ptx`).
pub fn encode_entry(key: &str, ptx: &str) -> Vec<u8> {
    format!("{ENTRY_MAGIC}{}\n{ptx}", entry_digest(key, ptx)).into_bytes()
}

/// The PTX of an entry read for `key`, or why it is corrupt. Never panics on any bytes.
pub fn decode_entry(key: &str, bytes: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 ({e})"))?;
    let rest = text.strip_prefix(ENTRY_MAGIC).ok_or("no op-runtime cache header (an older format, or not a cache entry)")?;
    let (digest, ptx) = rest.split_once('\n').ok_or("the header line is not terminated")?;
    if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("the header's digest is not 64 hex digits".into());
    }
    let computed = entry_digest(key, ptx);
    if computed != digest {
        return Err(format!("digest mismatch: the header says {digest}, the contents hash to {computed}"));
    }
    if ptx.contains('\0') || !ptx.contains(".version") || !ptx.contains(".target") {
        return Err("the contents are not PTX".into());
    }
    Ok(ptx.to_string())
}

/// The cache could not be located or written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("PTX cache error at {}: {cause}", path.display())]
pub struct CacheError {
    /// The entry (empty when no cache directory could be determined).
    pub path: PathBuf,
    /// What failed.
    pub cause: String,
}

/// Where the PTX a caller got came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A verified disk entry.
    Disk,
    /// Built now (a miss, a corrupt entry, or an entry the loader rejected) and published.
    Built,
}

/// A PTX cache directory with counters of what it found.
#[derive(Debug, Default)]
pub struct PtxDiskCache {
    dir: Option<PathBuf>,
    corrupt: AtomicUsize,
    last_corruption: Mutex<Option<String>>,
}

impl PtxDiskCache {
    /// A cache in `dir` (`None`: no directory could be determined; every use is an error).
    pub fn new(dir: Option<PathBuf>) -> PtxDiskCache {
        PtxDiskCache { dir, ..PtxDiskCache::default() }
    }

    /// The directory.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The entry path of `key`.
    pub fn entry_path(&self, key: &str) -> Result<PathBuf, CacheError> {
        let dir = self.dir.as_ref().ok_or_else(|| CacheError {
            path: PathBuf::new(),
            cause: "no cache directory could be determined (give the engine one, or set HOME)".to_string(),
        })?;
        Ok(dir.join(format!("{key}.ptx")))
    }

    /// How many corrupt entries were found (and rebuilt) through this cache.
    pub fn corrupt_entries(&self) -> usize {
        self.corrupt.load(Ordering::SeqCst)
    }

    /// The last corruption found: the file and the reason.
    pub fn last_corruption(&self) -> Option<String> {
        self.last_corruption.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The verified PTX under `key`: `Ok(None)` on a miss, and on a corrupt entry (counted and
    /// recorded; the caller rebuilds, and its publish replaces the entry).
    pub fn load(&self, key: &str) -> Result<Option<String>, CacheError> {
        let path = self.entry_path(key)?;
        let bytes = match files::read_regular(&path, MAX_ENTRY_BYTES) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                self.note_corrupt(&path, &format!("unreadable: {e}"));
                return Ok(None);
            }
        };
        match decode_entry(key, &bytes) {
            Ok(ptx) => Ok(Some(ptx)),
            Err(reason) => {
                self.note_corrupt(&path, &reason);
                Ok(None)
            }
        }
    }

    /// Publishes `ptx` under `key` atomically (replacing any entry).
    pub fn store(&self, key: &str, ptx: &str) -> Result<(), CacheError> {
        let path = self.entry_path(key)?;
        files::write_atomic(&path, &encode_entry(key, ptx), Replace::Yes, 0o644)
            .map_err(|e| CacheError { path: path.clone(), cause: e.to_string() })
    }

    /// The value `accept` makes of the cached PTX of `key`, or else of PTX from `build`
    /// (published first). `accept` sees only verified PTX; `Ok(None)` from it (a driver that
    /// rejects a stale entry) rebuilds as a miss does. `Ok(None)` overall: `accept` rejected the
    /// freshly built PTX as well (the caller reports its own reason).
    pub fn get_or_build<T, E: From<CacheError>>(
        &self,
        key: &str,
        mut accept: impl FnMut(&str) -> Result<Option<T>, E>,
        build: impl FnOnce() -> Result<String, E>,
    ) -> Result<Option<(T, Origin)>, E> {
        if let Some(ptx) = self.load(key)? {
            if let Some(value) = accept(&ptx)? {
                return Ok(Some((value, Origin::Disk)));
            }
        }
        let ptx = build()?;
        self.store(key, &ptx)?;
        Ok(accept(&ptx)?.map(|value| (value, Origin::Built)))
    }

    fn note_corrupt(&self, path: &Path, reason: &str) {
        self.corrupt.fetch_add(1, Ordering::SeqCst);
        *self.last_corruption.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{}: {reason}", path.display()));
    }
}

/// Environment variable naming the PTX cache directory (used as is).
pub const CACHE_DIR_ENV: &str = "OP_CACHE_DIR";

/// The disk-cache key (64 hex digits): blake3 over a length-prefixed encoding of the content
/// hash, the source, every header (name, bytes) in order, the entry, every option in order, and
/// `arch` (NVRTC version and target architecture). Pure.
pub fn ptx_cache_key(
    content_hash: &[u8; 32],
    source: &str,
    headers: &[(String, String)],
    entry: &str,
    options: &[String],
    arch: &str,
) -> String {
    fn field(h: &mut blake3::Hasher, bytes: &[u8]) {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    let mut h = blake3::Hasher::new_derive_key("op-runtime 2024 cuda ptx cache key v1");
    h.update(content_hash);
    field(&mut h, source.as_bytes());
    h.update(&(headers.len() as u64).to_le_bytes());
    for (name, body) in headers {
        field(&mut h, name.as_bytes());
        field(&mut h, body.as_bytes());
    }
    field(&mut h, entry.as_bytes());
    h.update(&(options.len() as u64).to_le_bytes());
    for o in options {
        field(&mut h, o.as_bytes());
    }
    field(&mut h, arch.as_bytes());
    h.finalize().to_hex().to_string()
}

/// The PTX cache directory from the environment: `$OP_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/op-runtime/ptx`, else `~/.cache/op-runtime/ptx`.
pub fn default_ptx_cache_dir() -> Option<PathBuf> {
    resolve_ptx_cache_dir(
        std::env::var_os(CACHE_DIR_ENV),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")),
    )
}

/// Pure form of [`default_ptx_cache_dir`]. Empty values count as unset; a relative
/// `XDG_CACHE_HOME` is ignored, as the XDG spec requires.
pub fn resolve_ptx_cache_dir(op_cache_dir: Option<OsString>, xdg_cache_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let set = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(op_cache_dir) {
        return Some(dir);
    }
    if let Some(xdg) = set(xdg_cache_home).filter(|p| p.is_absolute()) {
        return Some(xdg.join("op-runtime").join("ptx"));
    }
    set(home).map(|h| h.join(".cache").join("op-runtime").join("ptx"))
}

/// Writes `bytes` to `path` atomically and durably (`files::write_atomic`): a temporary file
/// with an unpredictable name, created exclusively (never through a symlink), synced, renamed
/// over `path`, then the directory synced. Readers see either the old file or the complete new
/// one; the temporary file is removed on failure. Pure filesystem code. (What
/// [`PtxDiskCache::store`] does; kept for its test.)
#[cfg(test)]
fn publish_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    files::write_atomic(path, bytes, Replace::Yes, 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::fs;

    const PTX_A: &str = ".version 8.4\n.target sm_90\n.address_size 64\n.visible .entry k() { ret; }\n";
    const PTX_B: &str = ".version 8.4\n.target sm_90\n.address_size 64\n.visible .entry k() { exit; }\n";

    fn cache() -> (tempfile::TempDir, PtxDiskCache) {
        let dir = tempfile::Builder::new().prefix("op-ptx-cache-").tempdir().unwrap();
        let cache = PtxDiskCache::new(Some(dir.path().to_path_buf()));
        (dir, cache)
    }

    /// Runs `get_or_build` with an accepting loader that records what it was handed and a
    /// builder returning `built` and counting its calls.
    fn fetch(cache: &PtxDiskCache, key: &str, built: &str, builds: &Cell<usize>) -> (String, Origin) {
        cache
            .get_or_build::<_, CacheError>(
                key,
                |ptx| {
                    assert!(decode_entry(key, &encode_entry(key, ptx)).is_ok(), "the loader was handed unverified PTX");
                    Ok(Some(ptx.to_string()))
                },
                || {
                    builds.set(builds.get() + 1);
                    Ok(built.to_string())
                },
            )
            .unwrap()
            .expect("accepted")
    }

    #[test]
    fn entries_round_trip_and_every_corruption_is_detected() {
        let key = "k".repeat(64);
        let entry = encode_entry(&key, PTX_A);
        assert_eq!(decode_entry(&key, &entry).unwrap(), PTX_A);
        // Every single-bit flip anywhere in the entry is caught.
        for i in 0..entry.len() {
            for bit in 0..8 {
                let mut bad = entry.clone();
                bad[i] ^= 1 << bit;
                assert!(decode_entry(&key, &bad).is_err(), "flip of bit {bit} of byte {i} went unnoticed");
            }
        }
        // Truncation, a foreign key, the legacy raw format, junk.
        for n in 0..entry.len() {
            assert!(decode_entry(&key, &entry[..n]).is_err(), "truncation to {n} bytes went unnoticed");
        }
        assert!(decode_entry(&"j".repeat(64), &entry).unwrap_err().contains("digest mismatch"));
        assert!(decode_entry(&key, PTX_A.as_bytes()).unwrap_err().contains("no op-runtime cache header"));
        assert!(decode_entry(&key, &[0xff, 0xfe, 0]).is_err());
        assert!(decode_entry(&key, &encode_entry(&key, "not ptx")).is_err());
    }

    #[test]
    fn a_corrupt_entry_is_rebuilt_counted_and_never_used() {
        let (_dir, cache) = cache();
        let key = "a".repeat(64);
        let builds = Cell::new(0);
        assert_eq!(fetch(&cache, &key, PTX_A, &builds), (PTX_A.to_string(), Origin::Built));
        assert_eq!(fetch(&cache, &key, PTX_A, &builds), (PTX_A.to_string(), Origin::Disk));
        assert_eq!((builds.get(), cache.corrupt_entries()), (1, 0));

        // Alter one instruction of the cached PTX, keeping the header: detected and rebuilt.
        let path = cache.entry_path(&key).unwrap();
        let altered = String::from_utf8(std::fs::read(&path).unwrap()).unwrap().replace("ret;", "exit;");
        std::fs::write(&path, altered).unwrap();
        assert_eq!(fetch(&cache, &key, PTX_A, &builds), (PTX_A.to_string(), Origin::Built), "the altered PTX must not be used");
        assert_eq!((builds.get(), cache.corrupt_entries()), (2, 1));
        assert!(cache.last_corruption().unwrap().contains("digest mismatch"), "{:?}", cache.last_corruption());
        // The rebuilt entry replaced it and verifies again.
        assert_eq!(fetch(&cache, &key, PTX_A, &builds), (PTX_A.to_string(), Origin::Disk));
        assert_eq!((builds.get(), cache.corrupt_entries()), (2, 1));

        // An entry copied from another key, a truncated one, a legacy raw one: each rebuilt.
        let other = "b".repeat(64);
        std::fs::write(cache.entry_path(&other).unwrap(), encode_entry(&key, PTX_B)).unwrap();
        assert_eq!(fetch(&cache, &other, PTX_A, &builds).1, Origin::Built);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert_eq!(fetch(&cache, &key, PTX_A, &builds).1, Origin::Built);
        std::fs::write(&path, PTX_B).unwrap();
        assert_eq!(fetch(&cache, &key, PTX_A, &builds), (PTX_A.to_string(), Origin::Built));
        assert_eq!((builds.get(), cache.corrupt_entries()), (5, 4));
        assert_eq!(std::fs::read(&path).unwrap(), encode_entry(&key, PTX_A));
    }

    #[test]
    fn a_rejected_entry_is_rebuilt_and_build_errors_publish_nothing() {
        let (dir, cache) = cache();
        let key = "c".repeat(64);
        cache.store(&key, PTX_B).unwrap();
        // The loader rejects the (verified but stale) PTX_B, accepts PTX_A.
        let accept = |ptx: &str| Ok::<_, CacheError>((ptx == PTX_A).then(|| ptx.to_string()));
        let (got, origin) = cache.get_or_build(&key, accept, || Ok(PTX_A.to_string())).unwrap().expect("accepted");
        assert_eq!((got.as_str(), origin, cache.corrupt_entries()), (PTX_A, Origin::Built, 0));
        // Fresh PTX the loader rejects too: `None`, for the caller to report.
        let stale = "f".repeat(64);
        cache.store(&stale, PTX_B).unwrap();
        assert_eq!(cache.get_or_build(&stale, accept, || Ok(PTX_B.to_string())), Ok(None));
        std::fs::remove_file(cache.entry_path(&stale).unwrap()).unwrap();
        let missing = "d".repeat(64);
        let boom = CacheError { path: PathBuf::from("k"), cause: "boom".into() };
        let err = cache.get_or_build(&missing, accept, || Err(boom.clone())).unwrap_err();
        assert_eq!(err, boom);
        assert!(!cache.entry_path(&missing).unwrap().exists());
        let names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names, vec![format!("{key}.ptx")], "no temporary files left behind");
        // No directory at all: a typed error, not a panic.
        let none = PtxDiskCache::new(None);
        assert!(matches!(none.load(&key), Err(CacheError { .. })));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_entry_is_neither_read_nor_written_through() {
        let (dir, cache) = cache();
        let key = "e".repeat(64);
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, encode_entry(&key, PTX_B)).unwrap();
        std::os::unix::fs::symlink(&outside, cache.entry_path(&key).unwrap()).unwrap();
        let builds = Cell::new(0);
        assert_eq!(fetch(&cache, &key, PTX_A, &builds), (PTX_A.to_string(), Origin::Built));
        assert_eq!(cache.corrupt_entries(), 1);
        assert_eq!(std::fs::read(&outside).unwrap(), encode_entry(&key, PTX_B), "the symlink's target is untouched");
    }

    /// A scratch directory, removed when the guard drops (also when a test panics or skips).
    fn scratch_dir(tag: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(&format!("op-runtime-cuda-{tag}-")).tempdir().unwrap()
    }

    fn dir_entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    fn key_with(hash: u8, source: &str, headers: &[(&str, &str)], entry: &str, options: &[&str], arch: &str) -> String {
        let headers: Vec<(String, String)> = headers.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let options: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        ptx_cache_key(&[hash; 32], source, &headers, entry, &options, arch)
    }

    #[test]
    fn cache_key_is_stable_and_sensitive_to_every_input() {
        let base = || key_with(1, "src", &[("a.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90");
        let k = base();
        assert_eq!(k, base(), "same inputs, same key");
        assert_eq!(k.len(), 64);
        assert!(k.chars().all(|c| c.is_ascii_hexdigit()));

        let variants = [
            ("content hash", key_with(2, "src", &[("a.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("source", key_with(1, "src ", &[("a.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("header bytes", key_with(1, "src", &[("a.cuh", "int y;")], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("header name", key_with(1, "src", &[("b.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("no header", key_with(1, "src", &[], "k", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("entry", key_with(1, "src", &[("a.cuh", "int x;")], "k2", &["-DX=1"], "nvrtc-12.8/sm_90/compute_90")),
            ("options", key_with(1, "src", &[("a.cuh", "int x;")], "k", &["-DX=2"], "nvrtc-12.8/sm_90/compute_90")),
            ("no options", key_with(1, "src", &[("a.cuh", "int x;")], "k", &[], "nvrtc-12.8/sm_90/compute_90")),
            ("arch", key_with(1, "src", &[("a.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.8/sm_80/compute_80")),
            ("nvrtc version", key_with(1, "src", &[("a.cuh", "int x;")], "k", &["-DX=1"], "nvrtc-12.4/sm_90/compute_90")),
        ];
        let mut seen = std::collections::HashSet::new();
        seen.insert(k.clone());
        for (what, v) in &variants {
            assert_ne!(&k, v, "changing the {what} must change the key");
            assert!(seen.insert(v.clone()), "changing the {what} collided with another variant");
        }

        // Field boundaries are unambiguous.
        assert_ne!(key_with(1, "s", &[("a", "bc")], "k", &[], "x"), key_with(1, "s", &[("ab", "c")], "k", &[], "x"));
        assert_ne!(key_with(1, "s", &[], "k", &["-a -b"], "x"), key_with(1, "s", &[], "k", &["-a", "-b"], "x"));
        assert_ne!(key_with(1, "s", &[], "k", &["ab"], "x"), key_with(1, "s", &[], "ka", &["b"], "x"));
        assert_ne!(key_with(1, "s", &[("a", "b"), ("c", "d")], "k", &[], "x"), key_with(1, "s", &[("c", "d"), ("a", "b")], "k", &[], "x"),);
    }

    #[test]
    fn publish_atomically_leaves_only_the_target() {
        let scratch = scratch_dir("publish");
        let dir = scratch.path().to_path_buf();
        let path = dir.join("nested").join("k.ptx");
        publish_atomically(&path, b"first").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"first");
        publish_atomically(&path, b"second, longer contents").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second, longer contents");
        publish_atomically(&path, b"").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"");
        assert_eq!(dir_entries(path.parent().unwrap()), vec!["k.ptx".to_string()]);

        // A failing publish (the target is a directory) cleans up its temporary file.
        let blocked = dir.join("blocked");
        fs::create_dir_all(blocked.join("occupied")).unwrap();
        assert!(publish_atomically(&blocked, b"x").is_err() || blocked.is_file());
        assert!(dir_entries(&dir).iter().all(|e| !e.ends_with(".tmp")), "{:?}", dir_entries(&dir));
        assert!(publish_atomically(Path::new("/"), b"x").is_err());
    }

    #[test]
    fn concurrent_publishes_leave_a_complete_file() {
        let scratch = scratch_dir("concurrent");
        let dir = scratch.path().to_path_buf();
        let path = dir.join("same.ptx");
        const LEN: usize = 256 * 1024;
        for round in 0..4u8 {
            let readers_done = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                // A reader that must never observe a partial file.
                s.spawn(|| {
                    while !readers_done.load(Ordering::Relaxed) {
                        if let Ok(bytes) = fs::read(&path) {
                            assert_eq!(bytes.len(), LEN, "a reader saw a partial file");
                            assert!(bytes.iter().all(|&b| b == bytes[0]), "a reader saw mixed contents");
                        }
                    }
                });
                let writers: Vec<_> = (0..8u8)
                    .map(|t| {
                        let path = &path;
                        s.spawn(move || {
                            let bytes = vec![round.wrapping_mul(8).wrapping_add(t); LEN];
                            for _ in 0..4 {
                                publish_atomically(path, &bytes).unwrap();
                            }
                        })
                    })
                    .collect();
                for w in writers {
                    w.join().unwrap();
                }
                readers_done.store(true, Ordering::Relaxed);
            });
            let bytes = fs::read(&path).unwrap();
            assert_eq!(bytes.len(), LEN);
            let first = bytes[0];
            assert!((round * 8..round * 8 + 8).contains(&first), "contents come from one of this round's writers");
            assert!(bytes.iter().all(|&b| b == first), "file mixes contents of several writers");
            assert_eq!(dir_entries(&dir), vec!["same.ptx".to_string()], "temporary files left behind");
        }
    }

    #[test]
    fn cache_dir_resolution() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(resolve_ptx_cache_dir(os("/c"), os("/x"), os("/h")), Some(PathBuf::from("/c")));
        assert_eq!(resolve_ptx_cache_dir(os(""), os("/x"), os("/h")), Some(PathBuf::from("/x/op-runtime/ptx")));
        assert_eq!(resolve_ptx_cache_dir(None, os("rel"), os("/h")), Some(PathBuf::from("/h/.cache/op-runtime/ptx")));
        assert_eq!(resolve_ptx_cache_dir(None, None, os("/h")), Some(PathBuf::from("/h/.cache/op-runtime/ptx")));
        assert_eq!(resolve_ptx_cache_dir(None, None, None), None);
    }
}
