//! The content-addressed store: publishing an op (refusing private and unlicensed ones) writes
//! its blobs, one file per receipt, and an index entry. Loading lives in `load`; the walk over
//! the blobs, `damaged_blobs` and `repair` (index entries rebuilt from the blobs) in `repair`.
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

use super::blobs::{is_blob_name, text, Area};
use super::card::{intact, OpCard};
use super::error::SharingError;
use op_core::files::Replace;
use op_core::op::RegisteredOp;
use op_core::receipt::Receipt;
use serde::{Deserialize, Serialize};
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

/// Splits and checks `name@version`; the name may hold only `[A-Za-z0-9_.-/]`.
pub fn parse_id(id: &str) -> Result<(&str, u32), SharingError> {
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

    /// The `blobs` directory, for `op`'s messages (created when `create`).
    pub fn blobs(&self, op: &str, create: bool) -> Result<Area, SharingError> {
        Area::open(&self.dir, "blobs", op, create)
    }

    /// The `cards` directory (index entries and their locks).
    pub(super) fn cards(&self, op: &str, create: bool) -> Result<Area, SharingError> {
        Area::open(&self.dir, "cards", op, create)
    }

    /// The directory of the receipts of `id` for `content_hash` (checked to be a hash).
    fn receipts(&self, id: &str, content_hash: &str, create: bool) -> Result<Area, SharingError> {
        self.receipts_dir(id, content_hash)?;
        Area::open(&self.dir, &format!("receipts/{content_hash}"), id, create)
    }

    /// Path of the blob named `hash`.
    pub fn blob_path(&self, hash: &str) -> PathBuf {
        self.dir.join("blobs").join(hash)
    }

    /// The file names of the index entry of `name@version` (`/` in the name becomes `~`) and
    /// of its lock, in `cards/`.
    pub(super) fn index_names(id: &str) -> Result<(String, String), SharingError> {
        let (name, version) = parse_id(id)?;
        let stem = format!("{}@{version}", name.replace('/', "~"));
        Ok((format!("{stem}.json"), format!("{stem}.lock")))
    }

    /// Path of the index entry of `name@version` (`/` in the name becomes `~`).
    pub fn index_path(&self, id: &str) -> Result<PathBuf, SharingError> {
        Ok(self.dir.join("cards").join(Store::index_names(id)?.0))
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
    pub fn read_index(&self, id: &str) -> Result<Option<IndexEntry>, SharingError> {
        let (name, _) = Store::index_names(id)?;
        let cards = self.cards(id, false)?;
        let path = cards.path(&name);
        let Some(bytes) = cards.read(id, &name, MAX_INDEX_BYTES)? else { return Ok(None) };
        let corrupt = |reason: String| SharingError::Corrupt { op: id.to_string(), file: path.clone(), reason };
        let index = IndexEntry::from_json(&text(id, &path, "index entry", bytes)?).map_err(corrupt)?;
        if index.op != id {
            return Err(corrupt(format!("the entry is for `{}`", index.op)));
        }
        Ok(Some(index))
    }

    /// Every receipt stored for `content_hash`, each file re-hashed against its name and parsed
    /// (`Tampered` / `Corrupt` naming the file otherwise), in file-name order.
    pub fn read_receipts(&self, id: &str, content_hash: &str) -> Result<Vec<Receipt>, SharingError> {
        let dir = self.receipts(id, content_hash, false)?;
        let mut names = dir.names(id)?;
        names.sort();
        let mut receipts = Vec::with_capacity(names.len());
        for name in names {
            let path = dir.path(&name);
            let corrupt = |reason: String| SharingError::Corrupt { op: id.to_string(), file: path.clone(), reason };
            let hash = name
                .strip_suffix(".json")
                .filter(|h| is_blob_name(h))
                .ok_or_else(|| corrupt("not a receipt file: receipt files are named `<blake3 of their bytes>.json`".to_string()))?;
            let bytes = dir.get_addressed(id, &name, hash, "receipt")?;
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
        Ok(self.receipts(id, content_hash, false)?.names(id)?.len())
    }

    /// Publishes `op` with its receipts: refuses what may not leave private (a private op, one
    /// without a valid licence, a public op below the bar the built-ins meet: see
    /// [`super::public_bar`]); writes every blob, one file per receipt, then the index entry (under
    /// the op's lock, only if it is missing, corrupt or stale). The same content again adds the
    /// new receipts and rewrites damaged files; changed content under a published
    /// `name@version` is `ContentChanged`; a corrupt index entry is replaced, never an obstacle.
    /// Receipts that are tampered with, forged, or for other ops or content are not published.
    /// Every directory is reached from the store's root without following a symlink at any
    /// component: a planted one is an `Io` error and nothing is written through it.
    pub fn publish(&self, op: &RegisteredOp, receipts: &[Receipt]) -> Result<PublishedId, SharingError> {
        let id = op.id.as_str();
        let hash = op.hash_hex();
        super::bar::may_leave_private(op, receipts)?;
        Store::index_names(id)?;

        // Refuse changed content before writing anything.
        if let Ok(Some(old)) = self.read_index(id) {
            if old.content_hash != hash && self.load_entry(id, &old).is_ok() {
                return Err(SharingError::ContentChanged { op: id.to_string(), published: old.content_hash, new: hash });
            }
        }

        let blobs = self.blobs(id, true)?;
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
        let receipts_dir = self.receipts(id, &hash, true)?;
        for r in intact(receipts, id, &hash) {
            let bytes = r.to_json().into_bytes();
            receipts_dir.put_addressed(id, &format!("{}.json", super::card::blob_hash(&bytes)), &bytes)?;
        }

        self.write_index(id, &index, &json)?;
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
    fn write_index(&self, id: &str, index: &IndexEntry, json: &str) -> Result<(), SharingError> {
        if matches!(self.read_index(id), Ok(Some(ref old)) if old == index) {
            return Ok(());
        }
        let (name, lock) = Store::index_names(id)?;
        let cards = self.cards(id, true)?;
        let _lock = cards.lock(id, &lock)?;
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
        cards.write(id, &name, json.as_bytes(), replace)
    }
}
