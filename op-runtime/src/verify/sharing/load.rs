//! Loading a published card: every blob and receipt file re-hashed against its name, the
//! identity recomputed from the loaded contract, body and kernel bytes, the card checked
//! against the contract. Trust is decided afterwards, for the loader's own devices and trust
//! list ([`LoadedCard::card_for`]).

use super::card::{LocalDevices, OpCard};
use super::error::SharingError;
use super::store::{IndexEntry, Store};
use crate::core::kind::BackendKind;
use crate::core::op::OpSource;
use crate::core::receipt::Receipt;
use crate::core::trust::TrustList;
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
    /// The card as published with the stored receipts (its trust says none; see
    /// [`LoadedCard::card_for`]).
    pub card: OpCard,
    /// The parsed contract.
    pub contract: Contract,
    /// The canonical contract JSON.
    pub contract_json: String,
    /// The reference body's canonical tokens.
    pub body_tokens: String,
    /// Kernels in declaration order.
    pub kernels: Vec<LoadedKernel>,
    /// The receipts stored for its content (every file intact; whether each counts is decided
    /// by [`LoadedCard::card_for`]).
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

    /// The card with each kernel's trust decided for this machine's `devices` and `trust` list
    /// from the stored receipts (tampered and forged ones are left off).
    pub fn card_for(&self, devices: &LocalDevices, trust: &TrustList) -> OpCard {
        self.card.for_devices(devices, trust)
    }

    /// Whether the kernel `backend` runs is verified on `devices` given `trust`.
    pub fn verified(&self, backend: BackendKind, devices: &LocalDevices, trust: &TrustList) -> bool {
        self.card_for(devices, trust).trust_of(backend).is_some_and(|t| t.is_verified())
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
        self.load_entry(id, &index)
    }

    /// Loads the op an index entry describes (see [`Store::load`]).
    pub(crate) fn load_entry(&self, id: &str, index: &IndexEntry) -> Result<LoadedCard, SharingError> {
        if index.op != id {
            return Err(corrupt(id, self.index_path(id).unwrap_or_default(), format!("the entry is for `{}`", index.op)));
        }
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
        let receipts = self.read_receipts(id, &index.content_hash)?;

        let kbytes: Vec<KernelBytes<'_>> = kernels
            .iter()
            .map(|k| KernelBytes {
                path: &k.path,
                bytes: &k.source,
                headers: k.headers.iter().map(|(p, b)| (p.as_str(), b.as_slice())).collect(),
            })
            .collect();
        let recomputed = hex(&op_contract::identity::placed(&identity(&contract_json, &body_tokens, &kbytes), &index.module));
        if recomputed != index.content_hash {
            return Err(SharingError::IdentityMismatch { op: id.to_string(), card: index.content_hash.clone(), recomputed });
        }
        let contract: Contract =
            serde_json::from_str(&contract_json).map_err(|e| corrupt(id, blobs.path(&index.contract), format!("not a contract: {e}")))?;
        let mut card = OpCard::from_json(&card_text).map_err(|e| corrupt(id, blobs.path(&index.card), format!("not a card: {e}")))?;
        check_card(id, &card, &contract, index).map_err(|reason| corrupt(id, blobs.path(&index.card), reason))?;
        card.receipts = receipts.clone();
        Ok(LoadedCard { card, contract, contract_json, body_tokens, kernels, receipts, index: index.clone() })
    }
}

/// The card must say what the (hash-checked) contract, kernels and receipts say; kernels are
/// compared by blob name, which `get` checked against the bytes.
fn check_card(id: &str, card: &OpCard, c: &Contract, index: &IndexEntry) -> Result<(), String> {
    // `builtin/` is reserved for op-runtime at compile time, so the name decides the source of
    // a loaded card (a live op's source comes from its registration path).
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
        ("cpu kernel", card.cpu == c.cpu && card.cpu_more.iter().map(|k| &k.path).eq(c.cpu_more.iter().map(|k| &k.path))),
        ("format", card.format == super::card::CARD_FORMAT),
        ("receipts (stored apart, so empty)", card.receipts.is_empty()),
    ];
    if let Some((what, _)) = fields.iter().find(|(_, ok)| !ok) {
        return Err(format!("its {what} disagrees with the published contract, index or receipts"));
    }
    // The op's kernels, then its VJP kernels: a card marks exactly the latter `backward`.
    let forward = c.kernels.len();
    let kernels_agree = card.kernels.len() == index.kernels.len()
        && card.kernels.iter().enumerate().all(|(i, ck)| ck.backward == (i >= forward))
        && card.kernels.iter().zip(&index.kernels).all(|(ck, ik)| {
            let mut a: Vec<(&str, &str)> = ck.headers.iter().map(|h| (h.path.as_str(), h.blake3.as_str())).collect();
            let mut b: Vec<(&str, &str)> = ik.headers.iter().map(|h| (h.path.as_str(), h.blob.as_str())).collect();
            a.sort();
            b.sort();
            ck.path == ik.path
                && ck.blake3 == ik.source
                && a == b
                && c.embedded_kernels().any(|d| d.path == ck.path && d.lang == ck.language)
        });
    if !kernels_agree {
        return Err("its kernels disagree with the published contract or kernel blobs".into());
    }
    Ok(())
}
