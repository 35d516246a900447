//! Loading a published card: every blob re-hashed against its name, the identity recomputed
//! from the loaded contract, body and kernel bytes, the card checked against the contract.

use super::card::{OpCard, Trust};
use super::error::SharingError;
use super::store::{IndexEntry, Store};
use crate::core::device::DeviceProfile;
use crate::core::op::OpSource;
use crate::core::receipt::Receipt;
use op_contract::contract::Contract;
use op_contract::identity::{hex, identity, KernelBytes};

/// A kernel's bytes as loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedKernel {
    /// Path as declared.
    pub path: String,
    /// Source bytes.
    pub source: Vec<u8>,
    /// Included headers (path, bytes) in declaration order.
    pub headers: Vec<(String, Vec<u8>)>,
}

/// A published op, loaded and checked: its card, contract, body tokens, kernels and receipts.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedCard {
    /// The card as published (its trust says none; see [`LoadedCard::card_for`]).
    pub card: OpCard,
    /// The parsed contract.
    pub contract: Contract,
    /// The canonical contract JSON.
    pub contract_json: String,
    /// The reference body's canonical tokens.
    pub body_tokens: String,
    /// Kernels in declaration order.
    pub kernels: Vec<LoadedKernel>,
    /// The receipts published with it.
    pub receipts: Vec<Receipt>,
    /// The index entry it was loaded from.
    pub index: IndexEntry,
}

impl LoadedCard {
    /// `name@version`.
    pub fn id(&self) -> &str {
        &self.card.id
    }

    /// Built-in or user.
    pub fn source(&self) -> OpSource {
        self.card.source
    }

    /// The card with its trust decided for `device` from the published receipts.
    pub fn card_for(&self, device: &DeviceProfile) -> OpCard {
        self.card.for_device(device)
    }

    /// Trust on `device`.
    pub fn trust(&self, device: &DeviceProfile) -> Trust {
        self.card_for(device).trust
    }
}

fn corrupt(op: &str, file: std::path::PathBuf, reason: impl Into<String>) -> SharingError {
    SharingError::Corrupt { op: op.to_string(), file, reason: reason.into() }
}

impl Store {
    /// Loads `name@version`: refuses a blob whose bytes do not hash to its name (`Tampered`,
    /// naming the file), a missing blob, corrupt JSON, a card that disagrees with its contract,
    /// and content whose recomputed identity is not the card's (`IdentityMismatch`).
    pub fn load(&self, id: &str) -> Result<LoadedCard, SharingError> {
        let index = self
            .read_index(id)?
            .ok_or_else(|| SharingError::NotPublished { op: id.to_string(), file: self.index_path(id).unwrap_or_default() })?;
        let blobs = self.blobs();
        let contract_json = blobs.get_text(id, &index.contract, "contract")?;
        let body_tokens = blobs.get_text(id, &index.body, "body tokens")?;
        let mut kernels = Vec::new();
        for k in &index.kernels {
            let source = blobs.get(id, &k.source, &format!("kernel `{}`", k.path))?;
            let mut headers = Vec::new();
            for h in &k.headers {
                headers.push((h.path.clone(), blobs.get(id, &h.blob, &format!("header `{}` of kernel `{}`", h.path, k.path))?));
            }
            kernels.push(LoadedKernel { path: k.path.clone(), source, headers });
        }
        let card_text = blobs.get_text(id, &index.card, "card")?;
        let mut receipts = Vec::new();
        for (i, h) in index.receipts.iter().enumerate() {
            let text = blobs.get_text(id, h, &format!("receipt {i}"))?;
            receipts.push(Receipt::from_json(&text).map_err(|e| corrupt(id, blobs.path(h), e.to_string()))?);
        }

        let kbytes: Vec<KernelBytes<'_>> = kernels
            .iter()
            .map(|k| KernelBytes {
                path: &k.path,
                bytes: &k.source,
                headers: k.headers.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect(),
            })
            .collect();
        let recomputed = hex(&identity(&contract_json, &body_tokens, &kbytes));
        if recomputed != index.content_hash {
            return Err(SharingError::IdentityMismatch { op: id.to_string(), card: index.content_hash.clone(), recomputed });
        }
        let contract: Contract =
            serde_json::from_str(&contract_json).map_err(|e| corrupt(id, blobs.path(&index.contract), format!("not a contract: {e}")))?;
        let card = OpCard::from_json(&card_text).map_err(|e| corrupt(id, blobs.path(&index.card), format!("not a card: {e}")))?;
        check_card(id, &card, &contract, &index, &receipts).map_err(|reason| corrupt(id, blobs.path(&index.card), reason))?;
        Ok(LoadedCard { card, contract, contract_json, body_tokens, kernels, receipts, index })
    }
}

/// The card must say what the (hash-checked) contract, kernels and receipts say; kernels are
/// compared by blob name, which `get` checked against the bytes.
fn check_card(id: &str, card: &OpCard, c: &Contract, index: &IndexEntry, receipts: &[Receipt]) -> Result<(), String> {
    let source = if c.name.starts_with("builtin/") { OpSource::Builtin } else { OpSource::User };
    let fields = [
        ("id", card.id == id && c.id() == id),
        ("name and version", card.name == c.name && card.version == c.version),
        ("content hash", card.content_hash == index.content_hash),
        ("source", card.source == source),
        ("visibility", card.visibility == c.visibility),
        ("licence", card.license == c.license),
        ("category", card.category == c.category),
        ("tolerance", card.tolerance == c.tolerance),
        ("backward", card.backward == c.backward),
        ("subgradient", card.subgradient == c.subgradient),
        ("receipts", card.receipts == receipts),
    ];
    if let Some((what, _)) = fields.iter().find(|(_, ok)| !ok) {
        return Err(format!("its {what} disagrees with the published contract, index or receipts"));
    }
    let kernels_agree = card.kernels.len() == index.kernels.len()
        && card.kernels.iter().zip(&index.kernels).all(|(ck, ik)| {
            let mut a: Vec<(&str, &str)> = ck.headers.iter().map(|h| (h.path.as_str(), h.blake3.as_str())).collect();
            let mut b: Vec<(&str, &str)> = ik.headers.iter().map(|h| (h.path.as_str(), h.blob.as_str())).collect();
            a.sort();
            b.sort();
            ck.path == ik.path && ck.blake3 == ik.source && a == b && c.kernels.iter().any(|d| d.path == ck.path && d.lang == ck.language)
        });
    if !kernels_agree {
        return Err("its kernels disagree with the published contract or kernel blobs".into());
    }
    Ok(())
}
