//! The content-addressed store: publishing an op (refusing private and unlicensed ones) writes
//! its blobs and an index entry `cards/<name>@<version>.json`. Loading lives in `load`.

use super::blobs::{io_error, write_atomic, Blobs};
use super::card::OpCard;
use super::error::SharingError;
use crate::core::op::RegisteredOp;
use crate::core::receipt::Receipt;
use op_contract::contract::Visibility;
use serde::{Deserialize, Serialize};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Version of the index entry format.
pub const INDEX_FORMAT: u32 = 1;

/// A store directory: `blobs/<blake3 hex>` and `cards/<name with / as ~>@<version>.json`.
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
    /// The blob hash of the card as published (changes when receipts are added).
    pub card: String,
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

/// An index entry: the blob hashes making up one published `name@version`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexEntry {
    /// Index format version.
    pub format: u32,
    /// `name@version`.
    pub op: String,
    /// The op's content hash (hex).
    pub content_hash: String,
    /// Blob of the card JSON.
    pub card: String,
    /// Blob of the canonical contract JSON.
    pub contract: String,
    /// Blob of the reference body's canonical tokens.
    pub body: String,
    /// Kernel blobs in declaration order.
    pub kernels: Vec<IndexKernel>,
    /// Blobs of the receipts' JSON.
    pub receipts: Vec<String>,
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

    /// Reads and parses the index entry of `id`; `Ok(None)` when there is none.
    pub(crate) fn read_index(&self, id: &str) -> Result<Option<IndexEntry>, SharingError> {
        let path = self.index_path(id)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(id, &path, "read", e)),
        };
        let index: IndexEntry = serde_json::from_str(&text).map_err(|e| SharingError::Corrupt {
            op: id.to_string(),
            file: path.clone(),
            reason: format!("not an index entry: {e}"),
        })?;
        if index.op != id {
            return Err(SharingError::Corrupt { op: id.to_string(), file: path, reason: format!("the entry is for `{}`", index.op) });
        }
        if index.format != INDEX_FORMAT {
            return Err(SharingError::Corrupt {
                op: id.to_string(),
                file: path,
                reason: format!("index format {}, this engine reads {INDEX_FORMAT}", index.format),
            });
        }
        Ok(Some(index))
    }

    /// Publishes `op` with its receipts: refuses private ops, ops without a licence and public
    /// ops without a description; writes every blob, then the index entry. The same content
    /// again is a no-op apart from adding new receipts (and rewriting damaged blobs); changed
    /// content under a published `name@version` is `ContentChanged`. Receipts for other ops or
    /// content, and altered ones, are not published.
    pub fn publish(&self, op: &RegisteredOp, receipts: &[Receipt]) -> Result<PublishedId, SharingError> {
        let id = op.id.as_str();
        let c = &op.contract;
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
        let blobs = self.blobs();
        let mut all: Vec<Receipt> = Vec::new();
        if let Some(old) = self.read_index(id)? {
            if old.content_hash != op.hash_hex() {
                return Err(SharingError::ContentChanged { op: id.to_string(), published: old.content_hash, new: op.hash_hex() });
            }
            // Receipts are evidence, not content: a missing or altered one is dropped (as
            // `OpCard::of` drops altered receipts), so republishing repairs the entry.
            for (i, h) in old.receipts.iter().enumerate() {
                match blobs.get_text(id, h, &format!("receipt {i}")) {
                    Ok(text) => all.extend(Receipt::from_json(&text).ok()),
                    Err(e @ SharingError::Io { .. }) => return Err(e),
                    Err(_) => {}
                }
            }
        }
        for r in receipts {
            if !all.contains(r) {
                all.push(r.clone());
            }
        }
        let card = OpCard::published(op, &all);
        let mut kernels = Vec::new();
        for k in op.decl.kernels {
            let mut headers = Vec::new();
            for (path, bytes) in k.headers {
                headers.push(IndexHeader { path: path.to_string(), blob: blobs.put(id, bytes)? });
            }
            kernels.push(IndexKernel { path: k.path.to_string(), source: blobs.put(id, k.source)?, headers });
        }
        let receipt_blobs = card.receipts.iter().map(|r| blobs.put(id, r.to_json().as_bytes())).collect::<Result<Vec<_>, _>>()?;
        let index = IndexEntry {
            format: INDEX_FORMAT,
            op: id.to_string(),
            content_hash: op.hash_hex(),
            card: blobs.put(id, card.to_json().as_bytes())?,
            contract: blobs.put(id, op.decl.contract_json.as_bytes())?,
            body: blobs.put(id, op.decl.body_tokens.as_bytes())?,
            kernels,
            receipts: receipt_blobs,
        };
        let json = serde_json::to_string_pretty(&index).map_err(|e| SharingError::Corrupt {
            op: id.to_string(),
            file: index_path.clone(),
            reason: e.to_string(),
        })?;
        write_atomic(id, &index_path, json.as_bytes())?;
        Ok(PublishedId { op: id.to_string(), content_hash: index.content_hash, card: index.card })
    }
}
