//! Op cards: what a user sees of an op before using someone else's (source, licence, tolerance,
//! kernels, receipts) and whether it is trusted on this device. Reads receipts; never mints one.

use crate::core::device::DeviceProfile;
use crate::core::op::{OpSource, RegisteredOp};
use crate::core::receipt::{Receipt, ReceiptError};
use op_contract::contract::{Backward, Category, KernelLang, Tolerance, Visibility};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Version of the card format.
pub const CARD_FORMAT: u32 = 1;

/// Whether an op's kernels are trusted on a device. `Verified` means an intact receipt for this
/// content and this device profile exists; receipts are unsigned (see `receipt`), so it attests
/// integrity and binding, not authorship.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Trust {
    /// A receipt for the op's current content verifies for this device.
    Verified {
        /// The device the receipt was minted on (this one).
        device: DeviceProfile,
    },
    /// No receipt verifies for this device.
    Unverified {
        /// Why not (no receipt, other device, other content, altered receipt).
        reason: String,
    },
}

impl Trust {
    /// Whether a receipt verified.
    pub fn is_verified(&self) -> bool {
        matches!(self, Trust::Verified { .. })
    }
}

/// One `#include`d header of a kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderEntry {
    /// Path relative to the declaring crate.
    pub path: String,
    /// blake3 of the header bytes (hex).
    pub blake3: String,
}

/// One kernel of an op.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelEntry {
    /// Path relative to the declaring crate.
    pub path: String,
    /// Source language.
    pub language: KernelLang,
    /// Entry point.
    pub entry: String,
    /// blake3 of the source bytes (hex).
    pub blake3: String,
    /// Included headers, sorted by path.
    pub headers: Vec<HeaderEntry>,
}

/// An op's card.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpCard {
    /// Card format version.
    pub format: u32,
    /// `name@version`.
    pub id: String,
    /// Namespaced name.
    pub name: String,
    /// Contract version.
    pub version: u32,
    /// Content hash: the op's identity (hex).
    pub content_hash: String,
    /// The doc comment.
    pub description: String,
    /// Built-in or user.
    pub source: OpSource,
    /// Who may see the op.
    pub visibility: Visibility,
    /// SPDX licence expression.
    pub license: Option<String>,
    /// Semantic category.
    pub category: Category,
    /// Tolerance class kernels conform within.
    pub tolerance: Tolerance,
    /// Backward form.
    pub backward: Backward,
    /// Behaviour at kinks, where declared.
    pub subgradient: Option<String>,
    /// GPU kernels in declaration order.
    pub kernels: Vec<KernelEntry>,
    /// Intact receipts for this content, on any device.
    pub receipts: Vec<Receipt>,
    /// Trust on the device the card was made for.
    pub trust: Trust,
}

/// Why a freshly published card carries no trust of its own.
pub(crate) const PUBLISHED_TRUST: &str = "a published card carries no trust: the loader verifies its receipts for its own device";

impl OpCard {
    /// The card of `op` with the receipts known for it, trusted on `device` only when one of
    /// them verifies for the op's current content on `device` ([`Receipt::verify`]). Receipts
    /// for other ops or other content, and altered ones, are left off the card (the trust
    /// reason says why).
    pub fn of(op: &RegisteredOp, receipts: &[Receipt], device: &DeviceProfile) -> OpCard {
        let mut card = OpCard::untrusted(op, String::new());
        (card.receipts, card.trust) = judge(receipts, device, |r| r.verify(op, device));
        card
    }

    /// The card as published: every intact receipt for this content, no trust of its own.
    pub(crate) fn published(op: &RegisteredOp, receipts: &[Receipt]) -> OpCard {
        let mut card = OpCard::untrusted(op, PUBLISHED_TRUST.to_string());
        let any = DeviceProfile::host("reference");
        card.receipts = judge(receipts, &any, |r| r.verify(op, &any)).0;
        card
    }

    /// The same card with its trust decided for `device` from its own receipts. Only meaningful
    /// for a card whose content hash was checked (e.g. one loaded from a [`super::Store`]).
    pub fn for_device(&self, device: &DeviceProfile) -> OpCard {
        let mut card = self.clone();
        (card.receipts, card.trust) = judge(&self.receipts, device, |r| r.verify_parts(&self.id, &self.content_hash, device));
        card
    }

    fn untrusted(op: &RegisteredOp, reason: String) -> OpCard {
        let c = &op.contract;
        let kernels = op
            .decl
            .kernels
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let declared = c.kernels.iter().find(|d| d.path == k.path).or_else(|| c.kernels.get(i));
                let language =
                    declared.map(|d| d.lang).unwrap_or(if k.path.ends_with(".cu") { KernelLang::Cuda } else { KernelLang::Wgsl });
                let mut headers: Vec<HeaderEntry> =
                    k.headers.iter().map(|(p, b)| HeaderEntry { path: p.to_string(), blake3: blob_hash(b) }).collect();
                headers.sort_by(|a, b| a.path.cmp(&b.path));
                KernelEntry { path: k.path.to_string(), language, entry: k.entry.to_string(), blake3: blob_hash(k.source), headers }
            })
            .collect();
        OpCard {
            format: CARD_FORMAT,
            id: op.id.clone(),
            name: c.name.clone(),
            version: c.version,
            content_hash: op.hash_hex(),
            description: op.decl.description.to_string(),
            source: op.source,
            visibility: c.visibility,
            license: c.license.clone(),
            category: c.category,
            tolerance: c.tolerance,
            backward: c.backward.clone(),
            subgradient: c.subgradient.clone(),
            kernels,
            receipts: Vec::new(),
            trust: Trust::Unverified { reason },
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parses a card's JSON.
    pub fn from_json(s: &str) -> Result<OpCard, serde_json::Error> {
        serde_json::from_str(s)
    }
}

/// Lowercase hex blake3 of bytes: a blob's name in a store, and a kernel's hash on its card.
pub fn blob_hash(b: &[u8]) -> String {
    blake3::hash(b).to_hex().to_string()
}

/// Keeps the intact receipts for this content (valid here or on another device) and decides
/// trust: verified when one is valid here, otherwise every reason.
fn judge(receipts: &[Receipt], device: &DeviceProfile, verify: impl Fn(&Receipt) -> Result<(), ReceiptError>) -> (Vec<Receipt>, Trust) {
    let mut kept = Vec::new();
    let mut reasons = Vec::new();
    let mut verified = None;
    for r in receipts {
        match verify(r) {
            Ok(()) => {
                verified.get_or_insert_with(|| r.device.clone());
                kept.push(r.clone());
            }
            Err(e) => {
                if matches!(e, ReceiptError::Device { .. }) {
                    kept.push(r.clone());
                }
                reasons.push(e.to_string());
            }
        }
    }
    let trust = match verified {
        Some(device) => Trust::Verified { device },
        None if receipts.is_empty() => Trust::Unverified {
            reason: format!(
                "no receipt for this content; conform it on this device ({device}) with `op_runtime::conformance::conform` to mint one"
            ),
        },
        None => Trust::Unverified { reason: reasons.join("; ") },
    };
    (kept, trust)
}

fn backward_text(b: &Backward) -> String {
    match b {
        Backward::None => "none (not differentiable)".into(),
        Backward::Composite { graph: None } => "composite".into(),
        Backward::Composite { graph: Some(g) } => format!("composite({g})"),
        Backward::Declared { vjp, jvp } => {
            let mut parts = Vec::new();
            if let Some(v) = vjp {
                parts.push(format!("vjp({v})"));
            }
            if !jvp.is_empty() {
                parts.push(format!("jvp({})", jvp.join(", ")));
            }
            parts.join(" + ")
        }
    }
}

fn short(hash: &str) -> &str {
    hash.get(..16).unwrap_or(hash)
}

impl fmt::Display for OpCard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match self.source {
            OpSource::Builtin => "builtin",
            OpSource::User => "user",
        };
        let visibility = match self.visibility {
            Visibility::Private => "private",
            Visibility::Workspace => "workspace",
            Visibility::Public => "public",
        };
        writeln!(f, "{}  [{source}, {visibility}, licence {}]", self.id, self.license.as_deref().unwrap_or("none"))?;
        for line in self.description.lines() {
            writeln!(f, "  {line}")?;
        }
        writeln!(f, "  content      {}", self.content_hash)?;
        writeln!(f, "  category     {}", self.category.name())?;
        writeln!(f, "  tolerance    {}", self.tolerance)?;
        writeln!(f, "  backward     {}", backward_text(&self.backward))?;
        if let Some(s) = &self.subgradient {
            writeln!(f, "  subgradient  {s}")?;
        }
        if self.kernels.is_empty() {
            writeln!(f, "  kernels      none (reference only)")?;
        }
        for k in &self.kernels {
            let lang = match k.language {
                KernelLang::Wgsl => "wgsl",
                KernelLang::Cuda => "cuda",
            };
            writeln!(f, "  kernel       {lang} {} (entry `{}`, blake3 {})", k.path, k.entry, short(&k.blake3))?;
            for h in &k.headers {
                writeln!(f, "    header     {} (blake3 {})", h.path, short(&h.blake3))?;
            }
        }
        if self.receipts.is_empty() {
            writeln!(f, "  receipts     none")?;
        }
        for r in &self.receipts {
            writeln!(f, "  receipt      {} on {} ({} cases, {})", r.backend, r.device, r.cases, r.engine_version)?;
        }
        match &self.trust {
            Trust::Verified { device } => write!(f, "  trust        verified on {device}"),
            Trust::Unverified { reason } => write!(f, "  trust        unverified: {reason}"),
        }
    }
}
