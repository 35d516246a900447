//! Checking and repairing a store: one walk over its blobs (each read and re-hashed against its
//! name) serves both [`Store::damaged_blobs`] and [`Store::repair`], so they agree on what is
//! damaged and what could not be read; `repair` rebuilds index entries from the blobs. Never
//! deletes anything, and never passes over a blob without reporting it.

use super::blobs::{is_blob_name, MAX_BLOB_BYTES};
use super::card::blob_hash;
use super::error::SharingError;
use super::store::{parse_id, IndexEntry, Store};
use op_core::files::Replace;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The op errors of a whole-store walk name (no one op is at fault).
const STORE_OP: &str = "(store)";

/// A blob the store could not read, left in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnreadableBlob {
    /// The blob's path.
    pub path: PathBuf,
    /// Why it could not be read: `Corrupt` for a symlink, something other than a regular file
    /// or a file larger than a blob may be; `Io` for an error of the file system.
    pub error: SharingError,
}

/// What [`Store::repair`] did and found.
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
    /// Blobs that could not be read (left in place); [`Store::damaged_blobs`] counts them too.
    pub unreadable_blobs: Vec<UnreadableBlob>,
}

/// One blob as the walk found it.
enum Blob {
    /// Its bytes hash to its name.
    Intact(Vec<u8>),
    /// Its bytes hash otherwise.
    Damaged(PathBuf),
    /// It could not be read.
    Unreadable(UnreadableBlob),
}

/// The loadable index entries found in the blobs: op -> content hash -> (entry, its JSON).
type Candidates = BTreeMap<String, BTreeMap<String, (IndexEntry, String)>>;

impl Store {
    /// The one walk over the blobs: every name in `blobs/` that can name a blob (64 lowercase
    /// hex digits), in name order, read (bounded, never through a symlink) and re-hashed. A
    /// blob gone since the listing is passed over; every other one reaches `visit`.
    fn walk_blobs(&self, mut visit: impl FnMut(Blob)) -> Result<(), SharingError> {
        let blobs = self.blobs(STORE_OP, false)?;
        let mut names = blobs.names(STORE_OP)?;
        names.retain(|n| is_blob_name(n));
        names.sort();
        for name in names {
            visit(match blobs.read(STORE_OP, &name, MAX_BLOB_BYTES) {
                Ok(None) => continue,
                Ok(Some(bytes)) if blob_hash(&bytes) == name => Blob::Intact(bytes),
                Ok(Some(_)) => Blob::Damaged(blobs.path(&name)),
                Err(error) => Blob::Unreadable(UnreadableBlob { path: blobs.path(&name), error }),
            });
        }
        Ok(())
    }

    /// Every blob whose bytes do not hash to its name or that could not be read, in name order
    /// (read-only: nothing is written or deleted). Loading an op re-hashes only the blobs its
    /// index entry names; this re-hashes all of them, the stored copies of index entries
    /// included. [`Store::repair`] reports the same blobs, the two kinds apart.
    pub fn damaged_blobs(&self) -> Result<Vec<PathBuf>, SharingError> {
        let mut damaged = Vec::new();
        self.walk_blobs(|blob| match blob {
            Blob::Intact(_) => {}
            Blob::Damaged(path) | Blob::Unreadable(UnreadableBlob { path, .. }) => damaged.push(path),
        })?;
        Ok(damaged)
    }

    /// Rebuilds index entries from the blobs: every blob is re-hashed (damaged and unreadable
    /// ones are reported); those holding an index entry that loads (every blob present and
    /// intact, the identity recomputed) are candidates. An op whose index entry loads is kept;
    /// one whose entry is missing or corrupt gets the one loadable candidate, and is reported
    /// as a conflict (nothing written) when there are several contents. Never deletes anything.
    pub fn repair(&self) -> Result<RepairReport, SharingError> {
        let mut report = RepairReport::default();
        let mut candidates = Candidates::new();
        self.walk_blobs(|blob| match blob {
            Blob::Damaged(path) => report.damaged_blobs.push(path),
            Blob::Unreadable(unreadable) => report.unreadable_blobs.push(unreadable),
            Blob::Intact(bytes) => {
                if let Some((index, json)) = self.loadable_index(bytes) {
                    candidates.entry(index.op.clone()).or_default().insert(index.content_hash.clone(), (index, json));
                }
            }
        })?;
        for id in self.repair_ids(&candidates, &mut report)? {
            self.repair_one(&id, candidates.remove(&id).unwrap_or_default(), &mut report)?;
        }
        Ok(report)
    }

    /// The index entry an intact blob holds, if it is one and it loads.
    fn loadable_index(&self, bytes: Vec<u8>) -> Option<(IndexEntry, String)> {
        let json = String::from_utf8(bytes).ok()?;
        let index = IndexEntry::from_json(&json).ok()?;
        if parse_id(&index.op).is_err() || self.load_entry(&index.op, &index).is_err() {
            return None;
        }
        Some((index, json))
    }

    /// Every op with an index file or a candidate, sorted; an index file that names no valid
    /// `name@version` is reported unrecoverable.
    fn repair_ids(&self, candidates: &Candidates, report: &mut RepairReport) -> Result<Vec<String>, SharingError> {
        let mut ids: Vec<String> = candidates.keys().cloned().collect();
        let cards = self.cards(STORE_OP, false)?;
        for name in cards.names(STORE_OP)? {
            let Some(stem) = name.strip_suffix(".json") else { continue };
            let id = stem.replace('~', "/");
            if parse_id(&id).is_err() {
                report.unrecoverable.push((cards.path(&name), "not the index entry of a valid `name@version`".into()));
            } else if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// Keeps `id`'s index entry where it loads, else restores it from its one loadable
    /// candidate (`found`), else reports a conflict or an unrecoverable entry.
    fn repair_one(&self, id: &str, found: BTreeMap<String, (IndexEntry, String)>, report: &mut RepairReport) -> Result<(), SharingError> {
        let path = self.index_path(id)?;
        let current = self.read_index(id);
        if matches!(&current, Ok(Some(index)) if self.load_entry(id, index).is_ok()) {
            report.kept.push(id.to_string());
            return Ok(());
        }
        match found.len() {
            0 => {
                let why = match current {
                    Err(e) => e.to_string(),
                    Ok(Some(index)) => self.load_entry(id, &index).err().map(|e| e.to_string()).unwrap_or_default(),
                    Ok(None) => return Ok(()),
                };
                report.unrecoverable.push((path, format!("{why}; no loadable copy of an index entry for `{id}` is in the blobs")));
            }
            1 => {
                let Some((_, (_, json))) = found.into_iter().next() else { return Ok(()) };
                let (name, lock) = Store::index_names(id)?;
                let cards = self.cards(id, true)?;
                let _lock = cards.lock(id, &lock)?;
                // Another publisher may have fixed it meanwhile.
                if !matches!(self.read_index(id), Ok(Some(ref now)) if self.load_entry(id, now).is_ok()) {
                    cards.write(id, &name, json.as_bytes(), Replace::Yes)?;
                }
                report.rebuilt.push(id.to_string());
            }
            _ => report.conflicts.push((id.to_string(), found.into_keys().collect())),
        }
        Ok(())
    }
}
