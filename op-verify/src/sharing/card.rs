//! Op cards: what a user sees of an op before using someone else's (source, licence, tolerance,
//! kernels, receipts) and, per declared kernel, whether it is trusted on this machine's device
//! for that kernel's backend. Every field but the description is derived from identity-covered
//! material ([`OpCard::derive`]), receipts and trust from signed or digest-checked receipts;
//! the description is unverified text. Reads receipts; never mints one. (Text: `show`.)

use op_contract::contract::{Backward, Category, Contract, KernelLang, Tolerance, Visibility};
use op_contract::identity::KernelBytes;
use op_core::device::DeviceProfile;
use op_core::kind::BackendKind;
use op_core::op::{OpSource, RegisteredOp};
use op_core::receipt::Receipt;
use op_core::registry::Registry;
use op_core::trust::TrustList;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the card format. Format 2: trust per declared kernel. Format 3: VJP kernels
/// marked (`backward`), without trust lines of the op's.
pub const CARD_FORMAT: u32 = 3;

/// Whether one kernel is trusted on this machine's device for its backend.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Trust {
    /// A receipt from this kernel's backend, for the op's current content, counts on this
    /// device ([`Receipt::verify_with`]).
    Verified {
        /// The device the receipt was minted on (this one, or one of the same model).
        device: DeviceProfile,
        /// The receipt's digest.
        receipt: String,
        /// Why it counts: minted on this machine, or signed by a trusted key.
        attestation: String,
    },
    /// No receipt counts for this kernel on this device.
    Unverified {
        /// Why not (no receipt, other device, other content, tampered, forged, unknown signer).
        reason: String,
    },
}

impl Trust {
    /// Whether a receipt verified.
    pub fn is_verified(&self) -> bool {
        matches!(self, Trust::Verified { .. })
    }
}

/// The trust of one declared kernel: the reference, the `cpu =` kernel, each GPU kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelTrust {
    /// The backend that runs it.
    pub backend: BackendKind,
    /// What runs: `reference` (the annotated function), the `cpu =` path, or the kernel path.
    pub kernel: String,
    /// The instance (`T = f16`) of an op with dtype variables this line is about; empty for
    /// an op without them. Each instance a kernel serves has its own line and its own receipts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub dtypes: String,
    /// Whether it is trusted here.
    pub trust: Trust,
}

/// This machine's device for each backend kind: what a card's trust is decided against.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalDevices {
    profiles: BTreeMap<BackendKind, DeviceProfile>,
}

impl LocalDevices {
    /// No devices: every kernel is unverified.
    pub fn new() -> LocalDevices {
        LocalDevices::default()
    }

    /// The host's reference and cpu devices.
    pub fn host() -> LocalDevices {
        LocalDevices::new()
            .with(BackendKind::Reference, DeviceProfile::host(BackendKind::Reference))
            .with(BackendKind::Cpu, DeviceProfile::host(BackendKind::Cpu))
    }

    /// The devices of every backend of `registry` available on this machine.
    pub fn of(registry: &Registry) -> LocalDevices {
        let mut devices = LocalDevices::new();
        for b in registry.backends() {
            if let Ok(p) = b.availability().and_then(|()| b.profile()) {
                devices.profiles.insert(b.kind(), (*p).clone());
            }
        }
        devices
    }

    /// With `profile` as the device of `kind` (builder style).
    pub fn with(mut self, kind: BackendKind, profile: DeviceProfile) -> LocalDevices {
        self.profiles.insert(kind, profile);
        self
    }

    /// The device of `kind`, if this machine has one.
    pub fn get(&self, kind: BackendKind) -> Option<&DeviceProfile> {
        self.profiles.get(&kind)
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

/// A `cpu` kernel after the first, of an op with dtype variables.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuEntry {
    /// The kernel's path.
    pub path: String,
    /// The instances it serves.
    pub dtypes: Vec<String>,
}

/// One GPU kernel of an op.
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
    /// The instances (`T = f32`) it serves, for an op with dtype variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dtypes: Vec<String>,
    /// A kernel of the op's VJP op (`backward = vjp(rule, kernel(...))`): it runs, and is
    /// conformed and trusted, as the VJP op `<name>/vjp`, so this card lists it without a
    /// trust line of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backward: bool,
}

/// An op's card. What covers each field:
/// - the identity: `format`, `id`, `name`, `version`, `content_hash`, `source` (from the name),
///   `visibility`, `license`, `category`, `tolerance`, `backward`, `subgradient`, `cpu`,
///   `instances`, `cpu_dtypes` and every field of `kernels` (path, language, entry, blake3,
///   headers, dtypes, backward) are derived from the contract and the kernel bytes the content
///   hash covers; a loaded card must equal that derivation in every one of them, or it is
///   refused ([`super::Store::load`]);
/// - receipts: `receipts` (each digest-checked, signed ones verified) and `trust` (decided from
///   them for the loader's devices and trust list; a stored card carries none);
/// - nothing: `description`, the author's doc comment, which the identity does not hash; the
///   card shows it as unverified text, quoted, and no other line can be forged through it.
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
    /// The doc comment: unverified text (covered by neither the identity nor a receipt).
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
    /// The `cpu =` kernel's path, where declared.
    pub cpu: Option<String>,
    /// Every instance (`T = f16`, ...) of an op with dtype variables, in declaration order
    /// (the reference serves each); empty for an op without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<String>,
    /// The instances the `cpu` kernel serves, for an op with dtype variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_dtypes: Vec<String>,
    /// Further `cpu` kernels, each serving other instances (`cpu(f32_fn, dtypes(T: f32)),
    /// cpu(f64_fn, dtypes(T: f64))`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_more: Vec<CpuEntry>,
    /// GPU kernels in declaration order.
    pub kernels: Vec<KernelEntry>,
    /// Intact receipts for this content, on any device, signed or not (a tampered or forged
    /// one is left off).
    pub receipts: Vec<Receipt>,
    /// Trust per declared kernel on the devices the card was made for: the reference, the cpu
    /// kernel, then each GPU kernel in declaration order.
    pub trust: Vec<KernelTrust>,
}

/// What a card is derived from: the identity-covered material of one content (the contract
/// and the kernel bytes the identity hashes, with the op's id, content hash and source).
pub struct CardMaterial<'a> {
    /// `name@version`.
    pub id: &'a str,
    /// The content hash (hex).
    pub content_hash: &'a str,
    /// The contract.
    pub contract: &'a Contract,
    /// Built-in or user.
    pub source: OpSource,
    /// The embedded kernels in order (the op's, then its VJP kernels), with their headers.
    pub kernels: &'a [KernelBytes<'a>],
}

/// Why a card as published carries no trust of its own.
pub const PUBLISHED_TRUST: &str = "a published card carries no trust: the loader decides it for its own devices";

impl OpCard {
    /// The card of `op` with the receipts known for it, each declared kernel trusted only when
    /// a receipt from its backend counts for the op's current content on this machine's device
    /// for that backend (`devices`), given `trust` ([`Receipt::verify_with`]). Tampered and
    /// forged receipts, and those for other ops or content, are left off the card.
    pub fn of(op: &RegisteredOp, receipts: &[Receipt], devices: &LocalDevices, trust: &TrustList) -> OpCard {
        let mut card = OpCard::untrusted(op, receipts, String::new());
        card.trust = card.judge(receipts, devices, trust);
        card
    }

    /// The card as published: every intact receipt for this content, no trust of its own.
    pub fn published(op: &RegisteredOp, receipts: &[Receipt]) -> OpCard {
        OpCard::untrusted(op, receipts, PUBLISHED_TRUST.to_string())
    }

    /// The same card with each kernel's trust decided for `devices` and `trust` from its own
    /// receipts. Only meaningful for a card whose content hash was checked (e.g. one loaded
    /// from a [`super::Store`]).
    pub fn for_devices(&self, devices: &LocalDevices, trust: &TrustList) -> OpCard {
        let mut card = self.clone();
        card.receipts = intact(&self.receipts, &self.id, &self.content_hash);
        card.trust = card.judge(&self.receipts, devices, trust);
        card
    }

    /// The trust of the kernel that `backend` runs (the first declared for it), if any.
    pub fn trust_of(&self, backend: BackendKind) -> Option<&Trust> {
        self.trust.iter().find(|k| k.backend == backend).map(|k| &k.trust)
    }

    /// Whether every declared kernel is verified here.
    pub fn fully_verified(&self) -> bool {
        !self.trust.is_empty() && self.trust.iter().all(|k| k.trust.is_verified())
    }

    /// The declared kernels, in card order, one line per instance served (an op with dtype
    /// variables): (backend, what runs, instance, why no backend runs it).
    fn declared(&self) -> Vec<(BackendKind, String, String, Option<String>)> {
        let lines = |served: &[String]| if self.instances.is_empty() { vec![String::new()] } else { served.to_vec() };
        let mut out: Vec<_> =
            lines(&self.instances).into_iter().map(|d| (BackendKind::Reference, "reference".to_string(), d, None)).collect();
        if let Some(cpu) = &self.cpu {
            out.extend(lines(&self.cpu_dtypes).into_iter().map(|d| (BackendKind::Cpu, cpu.clone(), d, None)));
        }
        for more in &self.cpu_more {
            out.extend(lines(&more.dtypes).into_iter().map(|d| (BackendKind::Cpu, more.path.clone(), d, None)));
        }
        for (i, k) in self.kernels.iter().enumerate().filter(|(_, k)| !k.backward) {
            let backend = BackendKind::for_kernel(k.language);
            let idle = self.idle(backend, i);
            out.extend(lines(&k.dtypes).into_iter().map(|d| (backend, k.path.clone(), d, idle.clone())));
        }
        out
    }

    /// Why no backend runs GPU kernel `i`, if none does (without dtype variables a backend runs
    /// the first kernel in its language; with them, the first serving the call's instance).
    fn idle(&self, backend: BackendKind, i: usize) -> Option<String> {
        if !self.instances.is_empty() {
            return None;
        }
        // The forward kernels come first: their indices are the card's.
        let run = backend.runs_kernel(self.kernels.iter().filter(|k| !k.backward).map(|k| k.language));
        (run != Some(i)).then(|| {
            let first = run.and_then(|j| self.kernels.get(j)).map(|k| k.path.as_str()).unwrap_or("?");
            format!("no backend runs this kernel: the {backend} backend runs the first one in its language, `{first}`")
        })
    }

    fn judge(&self, receipts: &[Receipt], devices: &LocalDevices, trust: &TrustList) -> Vec<KernelTrust> {
        self.declared()
            .into_iter()
            .map(|(backend, kernel, dtypes, idle)| {
                let trust = match (idle, devices.get(backend)) {
                    (Some(reason), _) => Trust::Unverified { reason },
                    (None, None) => Trust::Unverified { reason: format!("this machine has no {backend} device to verify it on") },
                    (None, Some(device)) => judge_kernel(&self.id, &self.content_hash, (backend, &dtypes), receipts, device, trust),
                };
                KernelTrust { backend, kernel, dtypes, trust }
            })
            .collect()
    }

    fn untrusted(op: &RegisteredOp, receipts: &[Receipt], reason: String) -> OpCard {
        let kernels: Vec<KernelBytes<'_>> = op
            .decl
            .kernels
            .iter()
            .map(|k| KernelBytes { path: k.path, bytes: k.source, headers: k.headers.iter().map(|(p, b)| (*p, *b)).collect() })
            .collect();
        let hash = op.hash_hex();
        let made = CardMaterial { id: &op.id, content_hash: &hash, contract: &op.contract, source: op.source, kernels: &kernels };
        let mut card = OpCard::derive(&made, op.decl.description, reason);
        card.receipts = intact(receipts, &op.id, &hash);
        card
    }

    /// The card of `made` with `description` (the author's text, covered by nothing) and every
    /// trust line unverified for `reason`. Every other field is derived here from the
    /// identity-covered material, so a stored card can be checked whole against it
    /// ([`OpCard::disagreement`]). Kernels are paired with the contract's embedded kernels
    /// (the op's, then its VJP kernels) in order; the caller checked they correspond.
    pub fn derive(made: &CardMaterial<'_>, description: &str, reason: String) -> OpCard {
        let c = made.contract;
        let kernels = made
            .kernels
            .iter()
            .zip(c.embedded_kernels())
            .enumerate()
            .map(|(i, (k, d))| {
                let mut headers: Vec<HeaderEntry> =
                    k.headers.iter().map(|(p, b)| HeaderEntry { path: p.to_string(), blake3: blob_hash(b) }).collect();
                headers.sort_by(|a, b| a.path.cmp(&b.path));
                KernelEntry {
                    path: k.path.to_string(),
                    language: d.lang,
                    entry: d.entry.clone(),
                    blake3: blob_hash(k.bytes),
                    headers,
                    dtypes: served(c, |b| op_contract::generic::serves(&d.dtypes, &c.signature.dtype_vars, b)),
                    backward: i >= c.kernels.len(),
                }
            })
            .collect();
        let mut card = OpCard {
            format: CARD_FORMAT,
            id: made.id.to_string(),
            name: c.name.clone(),
            version: c.version,
            content_hash: made.content_hash.to_string(),
            description: description.to_string(),
            source: made.source,
            visibility: c.visibility,
            license: c.license.clone(),
            category: c.category,
            tolerance: c.tolerance,
            backward: c.backward.clone(),
            subgradient: c.subgradient.clone(),
            cpu: c.cpu.clone(),
            instances: served(c, |_| true),
            cpu_dtypes: served(c, |b| op_contract::generic::serves(&c.cpu_dtypes, &c.signature.dtype_vars, b)),
            cpu_more: c
                .cpu_more
                .iter()
                .map(|k| CpuEntry {
                    path: k.path.clone(),
                    dtypes: served(c, |b| op_contract::generic::serves(&k.dtypes, &c.signature.dtype_vars, b)),
                })
                .collect(),
            kernels,
            receipts: Vec::new(),
            trust: Vec::new(),
        };
        card.trust = card
            .declared()
            .into_iter()
            .map(|(backend, kernel, dtypes, _)| KernelTrust {
                backend,
                kernel,
                dtypes,
                trust: Trust::Unverified { reason: reason.clone() },
            })
            .collect();
        card
    }

    /// The first field (a JSON path such as `kernels[1].entry`) where this card differs from
    /// `other`, if any: every field is compared, so a field added to the card later is
    /// compared too.
    pub fn disagreement(&self, other: &OpCard) -> Option<String> {
        let (a, b) = (serde_json::to_value(self).ok()?, serde_json::to_value(other).ok()?);
        first_difference(&a, &b, String::new())
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

/// The receipts that are intact (digest, format, any signature verifies) and for this op and
/// content, without duplicates.
pub fn intact(receipts: &[Receipt], id: &str, content_hash: &str) -> Vec<Receipt> {
    let mut kept: Vec<Receipt> = Vec::new();
    for r in receipts {
        if r.check_intact().is_ok() && r.op == id && r.content_hash == content_hash && !kept.contains(r) {
            kept.push(r.clone());
        }
    }
    kept
}

/// The instances (`T = f16`) of `c` that `serves` admits, for an op with dtype variables;
/// empty otherwise.
fn served(c: &op_contract::contract::Contract, serves: impl Fn(&[op_contract::contract::DType]) -> bool) -> Vec<String> {
    if !c.is_generic() {
        return Vec::new();
    }
    c.instances().iter().filter(|b| serves(b)).map(|b| op_contract::generic::binding_text(&c.signature.dtype_vars, b)).collect()
}

/// The trust of the kernel `backend` runs at instance `dtypes` (empty without dtype
/// variables), from the receipts of that backend and instance.
fn judge_kernel(
    id: &str,
    content_hash: &str,
    (backend, dtypes): (BackendKind, &str),
    receipts: &[Receipt],
    device: &DeviceProfile,
    trust: &TrustList,
) -> Trust {
    let mut reasons = Vec::new();
    for r in receipts.iter().filter(|r| r.backend == backend && r.dtypes == dtypes) {
        match r.verify_parts_with(id, content_hash, device, trust) {
            Ok(attestation) => {
                return Trust::Verified { device: r.device.clone(), receipt: r.digest.clone(), attestation: attestation.to_string() }
            }
            Err(e) => reasons.push(e.to_string()),
        }
    }
    if reasons.is_empty() {
        let others: Vec<String> = receipts
            .iter()
            .filter(|r| r.backend != backend || r.dtypes != dtypes)
            .map(|r| if r.dtypes.is_empty() { r.backend.name().to_string() } else { format!("{} at {}", r.backend, r.dtypes) })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let note = if others.is_empty() {
            String::new()
        } else {
            format!(" (receipts from other backends or instances — {} — verify only their own kernels)", others.join(", "))
        };
        let at = if dtypes.is_empty() { String::new() } else { format!(" at {dtypes}") };
        return Trust::Unverified {
            reason: format!(
                "no {backend} receipt{at} for this content{note}; conform it on this device ({device}) with \
                 `op_runtime::conformance::conform(&handle, BackendKind::{backend:?})` to mint one"
            ),
        };
    }
    Trust::Unverified { reason: reasons.join("; ") }
}

/// The first path at which two JSON values differ.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: String) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(u), Some(v)) => first_difference(u, v, if at.is_empty() { k.clone() } else { format!("{at}.{k}") }),
                _ => Some(if at.is_empty() { k.clone() } else { format!("{at}.{k}") }),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (u, v))| first_difference(u, v, format!("{at}[{i}]")))
        }
        _ => (a != b).then_some(at),
    }
}
