//! Conformance receipts: minted only by `conformance` on success, serialised as JSON, bound to
//! the op's content hash and to one device profile by a blake3 digest over every field.
//! A receipt makes an op shareable; it never gates local use (nothing in dispatch reads it).
//! The digest is unkeyed: it proves the record is intact and matches (content, device), not who
//! produced it. Whoever needs more than integrity conforms locally (it is cheap) or signs.

use crate::core::device::DeviceProfile;
use crate::core::kind::BackendKind;
use crate::core::op::RegisteredOp;
use op_contract::contract::Tolerance;
use serde::{Deserialize, Serialize};

/// Version of the receipt format and of the conformance procedure it attests.
pub const RECEIPT_FORMAT: u32 = 1;

/// The engine version a receipt names: this crate's version and the conformance scheme.
pub fn engine_version() -> String {
    format!("op-runtime {} (conformance v{RECEIPT_FORMAT})", env!("CARGO_PKG_VERSION"))
}

/// Proof that an op's kernel on one backend and device matched its reference on the generated
/// corpus.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    /// Receipt format version.
    pub format: u32,
    /// `name@version`.
    pub op: String,
    /// The op's content hash (hex).
    pub content_hash: String,
    /// The backend whose kernel conformed.
    pub backend: BackendKind,
    /// The device it conformed on.
    pub device: DeviceProfile,
    /// The declared tolerance it conformed within.
    pub tolerance: Tolerance,
    /// Number of cases run.
    pub cases: usize,
    /// blake3 of the generated corpus (hex).
    pub corpus_digest: String,
    /// Engine version.
    pub engine_version: String,
    /// blake3 over every field above (hex).
    pub digest: String,
}

/// Why a receipt is not valid here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReceiptError {
    /// The text is not a receipt's JSON.
    #[error("the receipt is not valid JSON for a receipt: {0}")]
    Parse(String),
    /// The digest does not match the fields: the receipt was altered.
    #[error("receipt for `{op}`: its digest {found} does not match its contents ({computed}); the receipt was altered")]
    Digest {
        /// The op named in the receipt.
        op: String,
        /// The digest stored in the receipt.
        found: String,
        /// The digest recomputed from its fields.
        computed: String,
    },
    /// The receipt is for another `name@version`.
    #[error("receipt is for op `{receipt}`, not `{op}`")]
    OtherOp {
        /// The op being verified.
        op: String,
        /// The op named in the receipt.
        receipt: String,
    },
    /// The receipt is for other content of this op.
    #[error(
        "receipt for `{op}` was minted for content {receipt}, but the op's content is now {current}; \
         conform locally (`op_runtime::conformance::conform`) to mint a receipt for this content"
    )]
    ContentHash {
        /// The op's `name@version`.
        op: String,
        /// The content hash in the receipt.
        receipt: String,
        /// The op's content hash now.
        current: String,
    },
    /// The receipt was minted on another device.
    #[error(
        "receipt for `{op}` was minted on {receipt}, not on this device ({local}); \
         conform locally (`op_runtime::conformance::conform`) to mint a receipt for this device"
    )]
    Device {
        /// The op's `name@version`.
        op: String,
        /// The device the receipt was minted on.
        receipt: String,
        /// This device.
        local: String,
    },
    /// The receipt's format is not the one this engine reads.
    #[error("receipt for `{op}` has format {found}; this engine reads format {RECEIPT_FORMAT}; conform locally")]
    Format {
        /// The op named in the receipt.
        op: String,
        /// The receipt's format version.
        found: u32,
    },
}

#[derive(Serialize)]
struct Body<'a> {
    format: u32,
    op: &'a str,
    content_hash: &'a str,
    backend: BackendKind,
    device: &'a DeviceProfile,
    tolerance: &'a Tolerance,
    cases: usize,
    corpus_digest: &'a str,
    engine_version: &'a str,
}

impl Receipt {
    /// Mints a receipt (conformance only).
    pub(crate) fn mint(op: &RegisteredOp, backend: BackendKind, device: DeviceProfile, cases: usize, corpus_digest: &[u8; 32]) -> Receipt {
        let mut r = Receipt {
            format: RECEIPT_FORMAT,
            op: op.id.clone(),
            content_hash: op.hash_hex(),
            backend,
            device,
            tolerance: op.contract.tolerance,
            cases,
            corpus_digest: op_contract::identity::hex(corpus_digest),
            engine_version: engine_version(),
            digest: String::new(),
        };
        r.digest = r.compute_digest();
        r
    }

    /// blake3 over the canonical JSON of every field except `digest` (hex).
    pub fn compute_digest(&self) -> String {
        let body = Body {
            format: self.format,
            op: &self.op,
            content_hash: &self.content_hash,
            backend: self.backend,
            device: &self.device,
            tolerance: &self.tolerance,
            cases: self.cases,
            corpus_digest: &self.corpus_digest,
            engine_version: &self.engine_version,
        };
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let mut h = blake3::Hasher::new();
        h.update(b"op-runtime receipt\0");
        h.update(&bytes);
        h.finalize().to_hex().to_string()
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parses JSON (the digest is checked by [`Receipt::verify`], not here).
    pub fn from_json(s: &str) -> Result<Receipt, ReceiptError> {
        serde_json::from_str(s).map_err(|e| ReceiptError::Parse(e.to_string()))
    }

    /// Valid for `op` as registered now on the device `local`: the digest matches the fields,
    /// the op and content hash are the op's current ones, the device profile is `local`'s.
    pub fn verify(&self, op: &RegisteredOp, local: &DeviceProfile) -> Result<(), ReceiptError> {
        self.verify_parts(&op.id, &op.hash_hex(), local)
    }

    /// [`Receipt::verify`] against an op known only by `name@version` and content hash (hex),
    /// e.g. one loaded from a store: the same checks in the same order.
    pub fn verify_parts(&self, id: &str, content_hash: &str, local: &DeviceProfile) -> Result<(), ReceiptError> {
        let computed = self.compute_digest();
        if computed != self.digest {
            return Err(ReceiptError::Digest { op: self.op.clone(), found: self.digest.clone(), computed });
        }
        if self.format != RECEIPT_FORMAT {
            return Err(ReceiptError::Format { op: self.op.clone(), found: self.format });
        }
        if self.op != id {
            return Err(ReceiptError::OtherOp { op: id.to_string(), receipt: self.op.clone() });
        }
        if self.content_hash != content_hash {
            return Err(ReceiptError::ContentHash {
                op: id.to_string(),
                receipt: self.content_hash.clone(),
                current: content_hash.to_string(),
            });
        }
        if &self.device != local {
            return Err(ReceiptError::Device { op: id.to_string(), receipt: self.device.to_string(), local: local.to_string() });
        }
        Ok(())
    }
}
