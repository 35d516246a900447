//! Provenance: every call yields an entry pinning the op by name@version and content hash, with
//! the backend, device and receipt used, and whether the kernel that ran (or one passed over
//! to reach it) was rejected by conformance in this process; a run collects them into a
//! record. Built-in and user ops produce entries of identical form. Records are printed and
//! serialised, never interpreted.

use crate::device::DeviceProfile;
use crate::kind::BackendKind;
use crate::op::RegisteredOp;
use crate::tensor::Tensor;
use op_contract::contract::DType;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

mod hex32 {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(h: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&op_contract::identity::hex(h))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let s = String::deserialize(d)?;
        op_contract::identity::parse_hex(&s).ok_or_else(|| serde::de::Error::custom("content hash must be 64 hex digits"))
    }
}

/// What one call ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProvenanceEntry {
    /// `name@version`.
    pub op: Arc<str>,
    /// The op's content hash.
    #[serde(with = "hex32")]
    pub content_hash: [u8; 32],
    /// The backend that executed it.
    pub backend: BackendKind,
    /// The device it executed on.
    pub device: Arc<DeviceProfile>,
    /// Digest of the receipt covering (content hash, device), if one was presented.
    pub receipt: Option<String>,
    /// Set when the kernel that ran is one conformance rejected on this device in this process
    /// (reached by an explicit choice): why. Its outputs are not to be trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Arc<str>>,
    /// The kernels default selection passed over for this call because conformance rejected
    /// them in this process, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_over: Option<Arc<str>>,
}

impl ProvenanceEntry {
    /// The entry of one call of `op` on `backend`'s `device`, with no receipt attached.
    pub fn new(op: &RegisteredOp, backend: BackendKind, device: Arc<DeviceProfile>) -> Self {
        ProvenanceEntry {
            op: op.id_shared.clone(),
            content_hash: op.hash,
            backend,
            device,
            receipt: None,
            rejected: None,
            passed_over: None,
        }
    }

    /// The entry with what backend selection said: the kernel that ran was rejected
    /// (`rejected`), or rejected kernels were passed over to reach it (`passed_over`).
    pub fn noting(mut self, rejected: Option<Arc<str>>, passed_over: Option<Arc<str>>) -> Self {
        self.rejected = rejected;
        self.passed_over = passed_over;
        self
    }
}

impl fmt::Display for ProvenanceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = op_contract::identity::hex(&self.content_hash);
        write!(f, "{:<40} {}  {:<9} {}", self.op, &h[..16], self.backend.name(), self.device.adapter)?;
        match &self.receipt {
            // A received entry may hold any text: cut on a character boundary, never mid-char.
            Some(r) => write!(f, "  receipt {}", r.chars().take(16).collect::<String>())?,
            None => write!(f, "  receipt -")?,
        }
        // Received entries may hold any text: printed on this one line.
        if let Some(why) = &self.rejected {
            write!(f, "  REJECTED KERNEL RAN: {}", why.escape_debug())?;
        }
        if let Some(why) = &self.passed_over {
            write!(f, "  (passed over {})", why.escape_debug())?;
        }
        Ok(())
    }
}

/// A constant a run used (introduced by a composite graph, `Graph::constant`): pinned by its
/// content hash, so a record tells runs whose constants differ apart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConstantEntry {
    /// The constant's name on its graph.
    pub name: String,
    /// Its dtype.
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<usize>,
    /// blake3 over its dtype, shape and little-endian element bytes.
    #[serde(with = "hex32")]
    pub content_hash: [u8; 32],
}

impl ConstantEntry {
    /// The entry of a host tensor (`None` for a tensor on a device).
    pub fn of(name: &str, t: &Tensor) -> Option<ConstantEntry> {
        let bytes = t.host_data().ok()?.to_le_bytes();
        let mut h = blake3::Hasher::new();
        h.update(b"op-runtime constant\0");
        h.update(t.dtype().to_string().as_bytes());
        h.update(&[0]);
        for d in t.shape() {
            h.update(&(*d as u64).to_le_bytes());
        }
        h.update(&bytes);
        Some(ConstantEntry { name: name.to_string(), dtype: t.dtype(), shape: t.shape().to_vec(), content_hash: *h.finalize().as_bytes() })
    }
}

impl fmt::Display for ConstantEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape = self.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ");
        // A received entry's name may hold any text: printed on this one line.
        write!(
            f,
            "constant {:<30} {}  {}[{shape}]",
            self.name.escape_debug(),
            &op_contract::identity::hex(&self.content_hash)[..16],
            self.dtype
        )
    }
}

/// The provenance of a run: one entry per call, in order, and the constants it used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProvenanceRecord {
    /// The entries.
    pub entries: Vec<ProvenanceEntry>,
    /// The constants the run's graphs introduced (each once per graph that holds it), with
    /// their content hashes. Absent from the JSON when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constants: Vec<ConstantEntry>,
}

impl ProvenanceRecord {
    /// Appends an entry.
    pub fn push(&mut self, e: ProvenanceEntry) {
        self.entries.push(e);
    }
    /// JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parses a record's JSON (e.g. one received from another machine): a typed error for any
    /// text that is not one, never a panic (hashes are parsed by `parse_hex`).
    pub fn from_json(s: &str) -> Result<ProvenanceRecord, serde_json::Error> {
        serde_json::from_str(s)
    }
}

impl fmt::Display for ProvenanceRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "provenance ({} calls)", self.entries.len())?;
        for e in &self.entries {
            writeln!(f, "  {e}")?;
        }
        for c in &self.constants {
            writeln!(f, "  {c}")?;
        }
        Ok(())
    }
}
