//! Loading a published card: every blob and receipt file re-hashed against its name, the
//! identity recomputed from the loaded contract, body and kernel bytes, the card checked
//! against the contract. Trust is decided afterwards, for the loader's own devices and trust
//! list ([`LoadedCard::card_for`]).

use super::card::{CardMaterial, LocalDevices, OpCard, PUBLISHED_TRUST};
use super::error::SharingError;
use super::store::{IndexEntry, Store};
use op_contract::contract::Contract;
use op_contract::identity::{hex, identity, KernelBytes};
use op_core::kind::BackendKind;
use op_core::op::OpSource;
use op_core::receipt::Receipt;
use op_core::trust::TrustList;

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
    pub fn load_entry(&self, id: &str, index: &IndexEntry) -> Result<LoadedCard, SharingError> {
        if index.op != id {
            return Err(corrupt(id, self.index_path(id).unwrap_or_default(), format!("the entry is for `{}`", index.op)));
        }
        let blobs = self.blobs(id, false)?;
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
        check_card(id, &card, &contract, index, &kbytes).map_err(|reason| corrupt(id, blobs.path(&index.card), reason))?;
        card.receipts = receipts.clone();
        Ok(LoadedCard { card, contract, contract_json, body_tokens, kernels, receipts, index: index.clone() })
    }
}

/// The card must be what the (hash-checked) contract and kernel bytes derive
/// ([`OpCard::derive`]) in every field but the description (unverified text, kept as stored):
/// the published placeholder trust, no receipts (stored apart), and each kernel's path,
/// language, entry, hashes, instances and role as the contract declares them. The embedded
/// kernels must be the contract's, in order (the op's, then its VJP kernels).
fn check_card(id: &str, card: &OpCard, c: &Contract, index: &IndexEntry, kernels: &[KernelBytes<'_>]) -> Result<(), String> {
    let declared: Vec<&str> = c.embedded_kernels().map(|k| k.path.as_str()).collect();
    let embedded: Vec<&str> = kernels.iter().map(|k| k.path).collect();
    if declared != embedded {
        return Err(format!("its kernels {embedded:?} are not the ones the contract declares, {declared:?}"));
    }
    // `builtin/` is reserved for op-runtime at compile time, so the name decides the source of
    // a loaded card (a live op's source comes from its registration path).
    let source = if c.name.starts_with("builtin/") { OpSource::Builtin } else { OpSource::User };
    if c.id() != id {
        return Err(format!("the contract is for `{}`", c.id()));
    }
    let made = CardMaterial { id, content_hash: &index.content_hash, contract: c, source, kernels };
    let derived = OpCard::derive(&made, &card.description, PUBLISHED_TRUST.to_string());
    match card.disagreement(&derived) {
        None => Ok(()),
        Some(field) => Err(format!(
            "its field `{field}` disagrees with the published contract and kernel blobs (every field but the \
             description is derived from them; the card was edited or is of another format)"
        )),
    }
}
