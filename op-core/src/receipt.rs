//! Conformance receipts: minted only by `conformance` on success, serialised as JSON, bound to
//! the op's content hash and to one device profile by a blake3 digest over every field, and
//! optionally signed (ed25519, over the digest) by a key from `core::trust`.
//! A receipt makes an op shareable; it never gates local use (nothing in dispatch reads it).
//!
//! Whose receipts count ([`Receipt::verify_with`]): the digest must match the fields (else the
//! receipt was tampered with); a signature, when present, must verify (else it is forged) and
//! its key must be on the trust list (else the signer is unknown); then the receipt counts for
//! this content on a device of the same model as the receipt's ([`DeviceProfile::same_model`])
//! when signed by a trusted key, and only on the exact profile it names (the machine that
//! minted it) when unsigned. The digest alone is unkeyed: it proves integrity, not authorship.

use crate::device::DeviceProfile;
use crate::kind::BackendKind;
use crate::op::RegisteredOp;
use crate::trust::{PublicKey, SigningKey, TrustList};
use op_contract::contract::Tolerance;
use serde::{Deserialize, Serialize};

/// Version of the receipt format and of the conformance procedure it attests. Format 2: exact
/// device profiles (details and instance) and optional signatures.
pub const RECEIPT_FORMAT: u32 = 2;

/// The prefix of a device profile's details that name what conformance cannot test on that
/// device (`untested.termination`, ...): each one's value is a sentence saying what and why
/// (`termination not tested: the adapter ends every loop after 65535 turns ...`). A backend
/// puts them in its profile; [`Receipt::untested`] lists them.
pub const UNTESTED_DETAIL: &str = "untested.";

/// Domain separator of the signed message (followed by the receipt's digest, hex).
const SIGNATURE_CONTEXT: &[u8] = b"op-runtime receipt signature v1\0";

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
    /// The instance of an op with dtype variables that conformed (`T = f16`); empty for an op
    /// without variables (and then absent from the JSON).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub dtypes: String,
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
    /// What conformance could not test on this device, one sentence each (e.g. `termination
    /// not tested: the adapter ends every loop after 65535 turns ...`): the device profile's
    /// `untested.*` details, in key order. Empty (and absent from the JSON) where everything
    /// was tested, and in receipts minted before the field existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untested: Vec<String>,
    /// blake3 over every field above (hex).
    pub digest: String,
    /// An ed25519 signature over the digest, if the receipt was signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<ReceiptSignature>,
}

/// A signature on a receipt: who signed (public key) and the signature over the digest. Kept as
/// text so any received JSON parses; [`Receipt::verify_with`] decodes and checks it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptSignature {
    /// `ed25519:<64 hex digits>`.
    pub key: String,
    /// 128 hex digits: the ed25519 signature of the domain separator and the digest.
    pub signature: String,
}

/// Why a receipt counts here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attestation {
    /// Unsigned, on the exact device profile it names: this machine minted it.
    Minted,
    /// Signed by a trusted key, on a device of the same model.
    Signed {
        /// The signer.
        key: PublicKey,
        /// The signer's label in the trust list.
        label: String,
    },
}

impl std::fmt::Display for Attestation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Attestation::Minted => f.write_str("minted on this machine (unsigned)"),
            Attestation::Signed { key, label } if label.is_empty() => write!(f, "signed by trusted key {key}"),
            Attestation::Signed { key, label } => write!(f, "signed by trusted key `{label}` ({key})"),
        }
    }
}

/// Why a receipt is not valid here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiptError {
    /// The text is not a receipt's JSON.
    #[error("the receipt is not valid JSON for a receipt: {0}")]
    Parse(String),
    /// The digest does not match the fields: the receipt was tampered with.
    #[error("receipt for `{op}` was tampered with: its digest {found} does not match its contents ({computed})")]
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
    /// The receipt was minted on another device model or software stack.
    #[error(
        "receipt for `{op}` was minted on {receipt}, not on this device ({local}): {}; \
         conform locally (`op_runtime::conformance::conform`) to mint a receipt for this device",
        differences.join(", ")
    )]
    Device {
        /// The op's `name@version`.
        op: String,
        /// The device the receipt was minted on.
        receipt: String,
        /// This device.
        local: String,
        /// What differs, one `field: receipt vs local` entry each.
        differences: Vec<String>,
    },
    /// An unsigned receipt away from the machine that minted it (or any unsigned receipt,
    /// when the trust list requires signatures).
    #[error(
        "receipt for `{op}` is unsigned and {reason}; an unsigned receipt counts only on the machine that \
         minted it: conform locally, or ask its minter to sign it with a key on your trust list"
    )]
    Unsigned {
        /// The op's `name@version`.
        op: String,
        /// Why it does not count here.
        reason: String,
    },
    /// The signature does not verify: forged, or the fields changed after signing.
    #[error("receipt for `{op}` has a forged signature (key {key}): {reason}; refusing it")]
    BadSignature {
        /// The op named in the receipt.
        op: String,
        /// The key the signature claims (as written in the receipt).
        key: String,
        /// What failed.
        reason: String,
    },
    /// A valid signature by a key that is not on the trust list.
    #[error(
        "receipt for `{op}` is signed by {key}, which is not on your trust list; \
         add the key to the trust list if you trust its holder's receipts, or conform locally"
    )]
    UntrustedSigner {
        /// The op named in the receipt.
        op: String,
        /// The signer.
        key: PublicKey,
    },
    /// The receipt is for another instance (binding of the dtype variables) of the op.
    #[error("receipt for `{op}` covers the instance `{receipt}`, not `{instance}`; each instance conforms on its own")]
    OtherInstance {
        /// The op's `name@version`.
        op: String,
        /// The receipt's instance.
        receipt: String,
        /// The instance being verified.
        instance: String,
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
    #[serde(skip_serializing_if = "str::is_empty")]
    dtypes: &'a str,
    backend: BackendKind,
    device: &'a DeviceProfile,
    tolerance: &'a Tolerance,
    cases: usize,
    corpus_digest: &'a str,
    engine_version: &'a str,
    // Absent when empty, so a receipt without notes has the digest it had before the field.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    untested: &'a [String],
}

impl Receipt {
    /// Mints a receipt (conformance only). What could not be tested comes from the device
    /// profile (its `untested.*` details).
    pub fn mint(op: &RegisteredOp, backend: BackendKind, device: DeviceProfile, cases: usize, corpus_digest: &[u8; 32]) -> Receipt {
        let untested = device.details.iter().filter(|(k, _)| k.starts_with(UNTESTED_DETAIL)).map(|(_, v)| v.clone()).collect();
        let mut r = Receipt {
            format: RECEIPT_FORMAT,
            op: op.id.clone(),
            content_hash: op.hash_hex(),
            dtypes: op.binding_text(),
            backend,
            device,
            tolerance: op.contract.tolerance,
            cases,
            corpus_digest: op_contract::identity::hex(corpus_digest),
            engine_version: engine_version(),
            untested,
            digest: String::new(),
            signature: None,
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
            dtypes: &self.dtypes,
            backend: self.backend,
            device: &self.device,
            tolerance: &self.tolerance,
            cases: self.cases,
            corpus_digest: &self.corpus_digest,
            engine_version: &self.engine_version,
            untested: &self.untested,
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

    /// Parses JSON (digest and signature are checked by [`Receipt::verify_with`], not here).
    pub fn from_json(s: &str) -> Result<Receipt, ReceiptError> {
        serde_json::from_str(s).map_err(|e| ReceiptError::Parse(e.to_string()))
    }

    /// Signs the receipt with `key` (replacing any signature). Refuses a receipt whose digest
    /// does not match its fields: a key vouches only for an intact receipt.
    pub fn sign(&mut self, key: &SigningKey) -> Result<(), ReceiptError> {
        self.check_digest()?;
        let signature = key.sign(&signing_message(&self.digest));
        self.signature = Some(ReceiptSignature { key: key.public_key().to_string(), signature: hex_bytes(&signature) });
        Ok(())
    }

    /// [`Receipt::sign`] by value.
    pub fn signed(mut self, key: &SigningKey) -> Result<Receipt, ReceiptError> {
        self.sign(key)?;
        Ok(self)
    }

    /// The signer, if the receipt carries a signature that verifies (trusted or not).
    pub fn signer(&self) -> Option<PublicKey> {
        self.check_digest().ok()?;
        self.check_signature().ok().flatten()
    }

    /// Intact (digest matches), of this engine's format, and any signature verifies: the
    /// checks that need neither an op nor a device nor a trust list.
    pub fn check_intact(&self) -> Result<(), ReceiptError> {
        self.intact_signer().map(drop)
    }

    /// [`Receipt::check_intact`], returning the signer of a signed receipt.
    fn intact_signer(&self) -> Result<Option<PublicKey>, ReceiptError> {
        self.check_digest()?;
        if self.format != RECEIPT_FORMAT {
            return Err(ReceiptError::Format { op: self.op.clone(), found: self.format });
        }
        self.check_signature()
    }

    /// Counts for `op` as registered now on the device `local`, with no trusted keys: an
    /// intact, unsigned receipt minted on exactly `local`. See [`Receipt::verify_with`].
    pub fn verify(&self, op: &RegisteredOp, local: &DeviceProfile) -> Result<(), ReceiptError> {
        self.verify_with(op, local, &TrustList::new()).map(drop)
    }

    /// [`Receipt::verify`] against an op known only by `name@version` and content hash (hex).
    pub fn verify_parts(&self, id: &str, content_hash: &str, local: &DeviceProfile) -> Result<(), ReceiptError> {
        self.verify_parts_with(id, content_hash, local, &TrustList::new()).map(drop)
    }

    /// Counts for `op` as registered now on the device `local`, given `trust`: intact (else
    /// `Digest`), this format, a signature that verifies (else `BadSignature`) by a trusted key
    /// (else `UntrustedSigner`), this op and content, and then a device of the same model when
    /// signed, or exactly `local` (the minting machine) when unsigned (`Device` / `Unsigned`).
    pub fn verify_with(&self, op: &RegisteredOp, local: &DeviceProfile, trust: &TrustList) -> Result<Attestation, ReceiptError> {
        let attestation = self.verify_parts_with(&op.id, &op.hash_hex(), local, trust)?;
        if self.dtypes != op.binding_text() {
            return Err(ReceiptError::OtherInstance { op: op.id.clone(), receipt: self.dtypes.clone(), instance: op.binding_text() });
        }
        Ok(attestation)
    }

    /// [`Receipt::verify_with`] against an op known only by `name@version` and content hash
    /// (hex), e.g. one loaded from a store: the same checks in the same order.
    pub fn verify_parts_with(
        &self,
        id: &str,
        content_hash: &str,
        local: &DeviceProfile,
        trust: &TrustList,
    ) -> Result<Attestation, ReceiptError> {
        let attestation = match self.intact_signer()? {
            Some(key) => match trust.label(&key) {
                Some(label) => Attestation::Signed { key, label: label.to_string() },
                None => return Err(ReceiptError::UntrustedSigner { op: self.op.clone(), key }),
            },
            None => Attestation::Minted,
        };
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
        if !self.device.same_model(local) {
            return Err(ReceiptError::Device {
                op: id.to_string(),
                receipt: self.device.to_string(),
                local: local.to_string(),
                differences: self.device.differences(local),
            });
        }
        if attestation == Attestation::Minted {
            if trust.requires_signatures() {
                return Err(ReceiptError::Unsigned { op: id.to_string(), reason: "your trust list requires signatures".into() });
            }
            if &self.device != local {
                return Err(ReceiptError::Unsigned {
                    op: id.to_string(),
                    reason: format!(
                        "was minted on another {} of this model ({})",
                        self.device.backend.instance_noun(),
                        self.device.differences(local).join(", ")
                    ),
                });
            }
        }
        Ok(attestation)
    }

    fn check_digest(&self) -> Result<(), ReceiptError> {
        let computed = self.compute_digest();
        if computed != self.digest {
            return Err(ReceiptError::Digest { op: self.op.clone(), found: self.digest.clone(), computed });
        }
        Ok(())
    }

    /// The signer when a signature is present and verifies over the digest; `None` unsigned.
    fn check_signature(&self) -> Result<Option<PublicKey>, ReceiptError> {
        let Some(sig) = &self.signature else { return Ok(None) };
        let forged = |reason: &str| ReceiptError::BadSignature { op: self.op.clone(), key: sig.key.clone(), reason: reason.to_string() };
        let key = PublicKey::parse(&sig.key).map_err(|_| forged("the key is not `ed25519:<64 hex digits>` of a valid key"))?;
        let bytes = parse_hex_bytes::<64>(&sig.signature).ok_or_else(|| forged("the signature is not 128 hex digits"))?;
        let verifying = key.verifying_key().map_err(|e| forged(&e))?;
        verifying
            .verify_strict(&signing_message(&self.digest), &ed25519_dalek::Signature::from_bytes(&bytes))
            .map_err(|_| forged("it does not verify for this receipt's contents under that key"))?;
        Ok(Some(key))
    }
}

/// What a signature signs: a domain separator and the digest (which covers every field).
fn signing_message(digest: &str) -> Vec<u8> {
    let mut m = SIGNATURE_CONTEXT.to_vec();
    m.extend_from_slice(digest.as_bytes());
    m
}

fn hex_bytes(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `N` bytes from exactly `2N` hex digits; `None` for anything else (never panics).
fn parse_hex_bytes<const N: usize>(s: &str) -> Option<[u8; N]> {
    let b = s.as_bytes();
    if b.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (digit(b[2 * i])? << 4) | digit(b[2 * i + 1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(untested: Vec<String>) -> Receipt {
        let mut r = Receipt {
            format: RECEIPT_FORMAT,
            op: "test/receipt@1".into(),
            content_hash: "00".repeat(32),
            dtypes: String::new(),
            backend: BackendKind::Cpu,
            device: DeviceProfile::host(BackendKind::Cpu),
            tolerance: Tolerance::Exact,
            cases: 3,
            corpus_digest: "11".repeat(32),
            engine_version: engine_version(),
            untested,
            digest: String::new(),
            signature: None,
        };
        r.digest = r.compute_digest();
        r
    }

    #[test]
    fn what_was_not_tested_is_covered_by_the_digest_and_absent_when_empty() {
        let plain = receipt(vec![]);
        assert!(!plain.to_json().contains("untested"), "{}", plain.to_json());
        // A receipt written before the field existed parses and keeps its digest.
        let parsed = Receipt::from_json(&plain.to_json()).expect("parses");
        assert_eq!(parsed, plain);
        assert!(parsed.check_intact().is_ok());

        let noted = receipt(vec!["termination not tested: the adapter ends every loop after 65535 turns".into()]);
        assert_ne!(noted.digest, plain.digest);
        let parsed = Receipt::from_json(&noted.to_json()).expect("parses");
        assert_eq!(parsed.untested, noted.untested);
        assert!(parsed.check_intact().is_ok());
        // Dropping a note is tampering.
        let mut stripped = noted.clone();
        stripped.untested.clear();
        assert!(matches!(stripped.check_intact(), Err(ReceiptError::Digest { .. })));
    }
}
