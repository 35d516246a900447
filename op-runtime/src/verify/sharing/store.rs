//! The content-addressed store: publishing an op (refusing private and unlicensed ones) writes
//! its blobs, one file per receipt, and an index entry; `repair` rebuilds index entries from
//! the blobs. Loading lives in `load`.
//!
//! Layout (every file written atomically through `core::files`):
//! ```text
//! blobs/<blake3>                           content-addressed: cards, contracts, reference bodies,
//!                                          kernels, headers, and a copy of every index entry
//! receipts/<content hash>/<blake3>.json    one file per receipt, named by the blake3 of its JSON
//! cards/<name, `/` as `~`>@<version>.json  the index entry of `name@version`
//! cards/<...>.lock                         locked (flock) while an index entry is written
//! ```
//! Nothing is ever read, modified and written back: a receipt is its own file, so concurrent
//! publishers (threads or processes) never lose one; an index entry depends only on the op's
//! content, and is created under the op's lock, so two publishers of different content under
//! one `name@version` cannot both succeed. A crash at any point leaves a readable store:
//! at worst an orphan blob or receipt, or an index entry `repair` can restore.

use super::blobs::{io_error, is_blob_name, put_addressed, read_file, text, write_atomic, Blobs, IndexLock, MAX_BLOB_BYTES};
use super::card::{intact, OpCard};
use super::error::SharingError;
use crate::core::files::{Replace, TEMP_PREFIX};
use crate::core::op::RegisteredOp;
use crate::core::receipt::Receipt;
use op_contract::contract::Visibility;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Version of the index entry format. Format 2: receipts live in their own files.
pub const INDEX_FORMAT: u32 = 2;

/// Largest index entry read.
const MAX_INDEX_BYTES: u64 = 16 << 20;

/// A store directory (see the module doc for its layout).
#[derive(Clone, Debug)]
pub struct Store {
    dir: PathBuf,
}

/// What a publish produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublishedId {
    /// `name@version`.
    pub op: String,
    /// The op's content hash (hex).
    pub content_hash: String,
    /// The blob hash of the card as published (receipts are stored apart, so it does not change
    /// when receipts are added).
    pub card: String,
    /// The blob hash of the index entry.
    pub index: String,
    /// How many receipts the store holds for this content after the publish.
    pub receipts: usize,
}

/// A header blob of a kernel in an index entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexHeader {
    /// Header path as declared.
    pub path: String,
    /// Blob hash of its bytes.
    pub blob: String,
}

/// A kernel's blobs in an index entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexKernel {
    /// Kernel path as declared (part of the identity).
    pub path: String,
    /// Blob hash of the source.
    pub source: String,
    /// Included headers in declaration order.
    pub headers: Vec<IndexHeader>,
}

/// An index entry: the blob hashes making up one published `name@version`. It depends only on
/// the op's content; receipts are found in `receipts/<content hash>/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexEntry {
    /// Index format version.
    pub format: u32,
    /// `name@version`.
    pub op: String,
    /// The op's content hash (hex).
    pub content_hash: String,
    /// Blob of the card JSON (without receipts).
    pub card: String,
    /// Blob of the canonical contract JSON.
    pub contract: String,
    /// Blob of the reference body's canonical tokens.
    pub body: String,
    /// The declaring module, relative to its crate (the identity places the code in it).
    #[serde(default)]
    pub module: String,
    /// Kernel blobs in declaration order.
    pub kernels: Vec<IndexKernel>,
}

impl IndexEntry {
    /// Parses an index entry's JSON and checks its format; a typed reason otherwise.
    pub fn from_json(text: &str) -> Result<IndexEntry, String> {
        let index: IndexEntry = serde_json::from_str(text).map_err(|e| format!("not an index entry: {e}"))?;
        if index.format != INDEX_FORMAT {
            return Err(format!("index format {}, this engine reads {INDEX_FORMAT}", index.format));
        }
        Ok(index)
    }

    fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// What [`Store::repair`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Ops whose index entry loads and was kept.
    pub kept: Vec<String>,
    /// Ops whose index entry was missing or corrupt and was rebuilt from the blobs.
    pub rebuilt: Vec<String>,
    /// Ops with several loadable contents in the blobs and no valid index entry to choose
    /// between them: (op, content hashes). Nothing is written for them.
    pub conflicts: Vec<(String, Vec<String>)>,
    /// Index entries that are corrupt and could not be rebuilt: (file, why).
    pub unrecoverable: Vec<(PathBuf, String)>,
    /// Blobs whose bytes do not hash to their name (left in place).
    pub damaged_blobs: Vec<PathBuf>,
}

/// Splits and checks `name@version`; the name may hold only `[A-Za-z0-9_.-/]`.
pub(crate) fn parse_id(id: &str) -> Result<(&str, u32), SharingError> {
    let bad = |reason: &str| SharingError::BadId { op: id.to_string(), reason: reason.to_string() };
    let (name, version) = id.rsplit_once('@').ok_or_else(|| bad("expected `name@version`"))?;
    let version: u32 = version.parse().map_err(|_| bad("the version after `@` must be a non-negative integer"))?;
    if name.is_empty() || name.starts_with('/') || name.ends_with('/') || name.starts_with('.') {
        return Err(bad("the name must be non-empty, start with neither `/` nor `.` and not end with `/`"));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-/".contains(&b)) {
        return Err(bad("the name may contain only ASCII letters, digits, `_`, `.`, `-` and `/`"));
    }
    Ok((name, version))
}

impl Store {
    /// Opens the store at `dir`. Lazy: nothing is touched until a publish (which creates the
    /// directories) or a load (a missing directory reads as "not published").
    pub fn open(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn blobs(&self) -> Blobs {
        Blobs { dir: self.dir.join("blobs") }
    }

    /// Path of the blob named `hash`.
    pub fn blob_path(&self, hash: &str) -> PathBuf {
        self.blobs().path(hash)
    }

    /// Path of the index entry of `name@version` (`/` in the name becomes `~`).
    pub fn index_path(&self, id: &str) -> Result<PathBuf, SharingError> {
        let (name, version) = parse_id(id)?;
        Ok(self.dir.join("cards").join(format!("{}@{version}.json", name.replace('/', "~"))))
    }

    fn lock_path(&self, id: &str) -> Result<PathBuf, SharingError> {
        Ok(self.index_path(id)?.with_extension("lock"))
    }

    /// The directory of the receipts for `content_hash` (64 hex digits, checked).
    pub fn receipts_dir(&self, id: &str, content_hash: &str) -> Result<PathBuf, SharingError> {
        if !is_blob_name(content_hash) {
            return Err(SharingError::Corrupt {
                op: id.to_string(),
                file: self.dir.join("receipts"),
                reason: format!("content hash `{content_hash}` is not 64 lowercase hex digits"),
            });
        }
        Ok(self.dir.join("receipts").join(content_hash))
    }

    /// Reads and parses the index entry of `id`; `Ok(None)` when there is none.
    pub(crate) fn read_index(&self, id: &str) -> Result<Option<IndexEntry>, SharingError> {
        let path = self.index_path(id)?;
        let Some(bytes) = read_file(id, &path, MAX_INDEX_BYTES)? else { return Ok(None) };
        let corrupt = |reason: String| SharingError::Corrupt { op: id.to_string(), file: path.clone(), reason };
        let index = IndexEntry::from_json(&text(id, &path, "index entry", bytes)?).map_err(corrupt)?;
        if index.op != id {
            return Err(corrupt(format!("the entry is for `{}`", index.op)));
        }
        Ok(Some(index))
    }

    /// Every receipt stored for `content_hash`, each file re-hashed against its name and parsed
    /// (`Tampered` / `Corrupt` naming the file otherwise), in file-name order.
    pub(crate) fn read_receipts(&self, id: &str, content_hash: &str) -> Result<Vec<Receipt>, SharingError> {
        let dir = self.receipts_dir(id, content_hash)?;
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(id, &dir, "list", e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(id, &dir, "list", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(TEMP_PREFIX) {
                continue; // a publisher's file in flight, or one a crash left behind
            }
            names.push(name);
        }
        names.sort();
        let mut receipts = Vec::with_capacity(names.len());
        for name in names {
            let path = dir.join(&name);
            let corrupt = |reason: String| SharingError::Corrupt { op: id.to_string(), file: path.clone(), reason };
            let hash = name
                .strip_suffix(".json")
                .filter(|h| is_blob_name(h))
                .ok_or_else(|| corrupt("not a receipt file: receipt files are named `<blake3 of their bytes>.json`".to_string()))?;
            let bytes = super::blobs::get_addressed(id, &path, hash, "receipt")?;
            let receipt = Receipt::from_json(&text(id, &path, "receipt", bytes)?).map_err(|e| corrupt(e.to_string()))?;
            if receipt.op != id || receipt.content_hash != content_hash {
                return Err(corrupt(format!(
                    "a receipt for `{}` content {}, filed under `{id}` content {content_hash}",
                    receipt.op, receipt.content_hash
                )));
            }
            receipts.push(receipt);
        }
        Ok(receipts)
    }

    fn count_receipts(&self, id: &str, content_hash: &str) -> Result<usize, SharingError> {
        let dir = self.receipts_dir(id, content_hash)?;
        match std::fs::read_dir(&dir) {
            Ok(entries) => Ok(entries.filter_map(Result::ok).filter(|e| !e.file_name().to_string_lossy().starts_with(TEMP_PREFIX)).count()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(io_error(id, &dir, "list", e)),
        }
    }

    /// Publishes `op` with its receipts: refuses private ops, ops without a licence and public
    /// ops without a description; writes every blob, one file per receipt, then the index entry
    /// (under the op's lock, only if it is missing, corrupt or stale). The same content again
    /// adds the new receipts and rewrites damaged files; changed content under a published
    /// `name@version` is `ContentChanged`; a corrupt index entry is replaced, never an obstacle.
    /// Receipts that are tampered with, forged, or for other ops or content are not published.
    pub fn publish(&self, op: &RegisteredOp, receipts: &[Receipt]) -> Result<PublishedId, SharingError> {
        let id = op.id.as_str();
        let hash = op.hash_hex();
        let c = &op.contract;
        if op.vjp_of.is_some() {
            let of = format!("{}@{}", c.name.strip_suffix("/vjp").unwrap_or(&c.name), c.version);
            return Err(SharingError::DerivedOp { op: id.to_string(), of });
        }
        if c.visibility == Visibility::Private {
            return Err(SharingError::Private { op: id.to_string() });
        }
        match c.license.as_deref().map(str::trim) {
            None | Some("") => return Err(SharingError::NoLicense { op: id.to_string() }),
            // The macro validated it; a contract loaded from elsewhere is validated again here.
            Some(l) => {
                if let Err(e) = spdx::Expression::parse(l) {
                    return Err(SharingError::BadLicense { op: id.to_string(), license: l.to_string(), reason: e.reason.to_string() });
                }
            }
        }
        if c.visibility == Visibility::Public && op.decl.description.trim().is_empty() {
            return Err(SharingError::NoDescription { op: id.to_string() });
        }
        let index_path = self.index_path(id)?;

        // Refuse changed content before writing anything.
        if let Ok(Some(old)) = self.read_index(id) {
            if old.content_hash != hash && self.load_entry(id, &old).is_ok() {
                return Err(SharingError::ContentChanged { op: id.to_string(), published: old.content_hash, new: hash });
            }
        }

        let blobs = self.blobs();
        let mut kernels = Vec::new();
        for k in op.decl.kernels {
            let mut headers = Vec::new();
            for (path, bytes) in k.headers {
                headers.push(IndexHeader { path: path.to_string(), blob: blobs.put(id, bytes)? });
            }
            kernels.push(IndexKernel { path: k.path.to_string(), source: blobs.put(id, k.source)?, headers });
        }
        let card = OpCard::published(op, &[]);
        let index = IndexEntry {
            format: INDEX_FORMAT,
            op: id.to_string(),
            content_hash: hash.clone(),
            card: blobs.put(id, card.to_json().as_bytes())?,
            contract: blobs.put(id, op.decl.contract_json.as_bytes())?,
            body: blobs.put(id, op.decl.body_tokens.as_bytes())?,
            module: op_contract::identity::crate_relative_module(op.decl.module).to_string(),
            kernels,
        };
        let json = index.to_json();
        let index_blob = blobs.put(id, json.as_bytes())?;

        // Receipts: each its own content-addressed file; nothing is read back and rewritten.
        let receipts_dir = self.receipts_dir(id, &hash)?;
        for r in intact(receipts, id, &hash) {
            let bytes = r.to_json().into_bytes();
            put_addressed(id, &receipts_dir.join(format!("{}.json", super::card::blob_hash(&bytes))), &bytes)?;
        }

        self.write_index(id, &index_path, &index, &json)?;
        Ok(PublishedId {
            op: id.to_string(),
            content_hash: hash.clone(),
            card: index.card,
            index: index_blob,
            receipts: self.count_receipts(id, &hash)?,
        })
    }

    /// Makes `cards/<id>.json` say `index`: nothing to do when it already does; otherwise,
    /// under the op's lock, created when missing, replaced when corrupt, unloadable or an older
    /// rendering of the same content, and `ContentChanged` when it names other loadable content.
    fn write_index(&self, id: &str, path: &Path, index: &IndexEntry, json: &str) -> Result<(), SharingError> {
        if matches!(self.read_index(id), Ok(Some(ref old)) if old == index) {
            return Ok(());
        }
        let _lock = IndexLock::acquire(id, &self.lock_path(id)?)?;
        let replace = match self.read_index(id) {
            Ok(None) => Replace::No,
            Ok(Some(old)) if old == *index => return Ok(()),
            Ok(Some(old)) if old.content_hash != index.content_hash && self.load_entry(id, &old).is_ok() => {
                return Err(SharingError::ContentChanged {
                    op: id.to_string(),
                    published: old.content_hash,
                    new: index.content_hash.clone(),
                })
            }
            Ok(Some(_)) | Err(_) => Replace::Yes,
        };
        write_atomic(id, path, json.as_bytes(), replace)
    }

    /// Rebuilds index entries from the blobs: every blob is re-hashed; those holding an index
    /// entry that loads (every blob present and intact, the identity recomputed) are candidates.
    /// An op whose index entry loads is kept; one whose entry is missing or corrupt gets the one
    /// loadable candidate, and is reported as a conflict (nothing written) when there are
    /// several contents. Never deletes anything.
    pub fn repair(&self) -> Result<RepairReport, SharingError> {
        let mut report = RepairReport::default();
        let store_op = "(store)";
        let blobs_dir = self.blobs().dir;
        let mut candidates: BTreeMap<String, BTreeMap<String, (IndexEntry, String)>> = BTreeMap::new();
        let entries = match std::fs::read_dir(&blobs_dir) {
            Ok(e) => e.collect::<Result<Vec<_>, _>>().map_err(|e| io_error(store_op, &blobs_dir, "list", e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_error(store_op, &blobs_dir, "list", e)),
        };
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !is_blob_name(&name) {
                continue;
            }
            let path = entry.path();
            let Ok(Some(bytes)) = read_file(store_op, &path, MAX_BLOB_BYTES) else { continue };
            if super::card::blob_hash(&bytes) != name {
                report.damaged_blobs.push(path);
                continue;
            }
            let Ok(json) = std::str::from_utf8(&bytes) else { continue };
            let Ok(index) = IndexEntry::from_json(json) else { continue };
            if parse_id(&index.op).is_err() || self.load_entry(&index.op, &index).is_err() {
                continue;
            }
            candidates.entry(index.op.clone()).or_default().insert(index.content_hash.clone(), (index, json.to_string()));
        }

        // Every op with an index file or a candidate.
        let mut ids: Vec<String> = candidates.keys().cloned().collect();
        let cards = self.dir.join("cards");
        if let Ok(entries) = std::fs::read_dir(&cards) {
            for e in entries.filter_map(Result::ok) {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(stem) = name.strip_suffix(".json").filter(|_| !name.starts_with(TEMP_PREFIX)) {
                    let id = stem.replace('~', "/");
                    if parse_id(&id).is_ok() && !ids.contains(&id) {
                        ids.push(id);
                    } else if parse_id(&id).is_err() {
                        report.unrecoverable.push((e.path(), "not the index entry of a valid `name@version`".into()));
                    }
                }
            }
        }
        ids.sort();
        for id in ids {
            let path = self.index_path(&id)?;
            let current = self.read_index(&id);
            if let Ok(Some(index)) = &current {
                if self.load_entry(&id, index).is_ok() {
                    report.kept.push(id);
                    continue;
                }
            }
            let found = candidates.remove(&id).unwrap_or_default();
            match found.len() {
                0 => {
                    let why = match current {
                        Err(e) => e.to_string(),
                        Ok(Some(index)) => self.load_entry(&id, &index).err().map(|e| e.to_string()).unwrap_or_default(),
                        Ok(None) => continue,
                    };
                    report.unrecoverable.push((path, format!("{why}; no loadable copy of an index entry for `{id}` is in the blobs")));
                }
                1 => {
                    let Some((_, (_, json))) = found.into_iter().next() else { continue };
                    let _lock = IndexLock::acquire(&id, &self.lock_path(&id)?)?;
                    // Another publisher may have fixed it meanwhile.
                    if !matches!(self.read_index(&id), Ok(Some(ref now)) if self.load_entry(&id, now).is_ok()) {
                        write_atomic(&id, &path, json.as_bytes(), Replace::Yes)?;
                    }
                    report.rebuilt.push(id);
                }
                _ => report.conflicts.push((id, found.into_keys().collect())),
            }
        }
        Ok(report)
    }
}
