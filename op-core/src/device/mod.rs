//! Devices: where a tensor lives ([`Placement`], [`DeviceId`]), a tensor's buffer on a device
//! ([`DeviceStorage`]), and which device model, software stack and machine a kernel ran on
//! ([`DeviceProfile`]). The seam a device implements to take host tensors is
//! [`crate::tensor::Device`], beside `Tensor`, which it produces (so that this module never
//! depends on tensors). This module describes devices: choosing one is dispatch's, driving one
//! the backends'. `op_core::placement::{DeviceId, DeviceStorage, Placement}`, their former path,
//! still names the same items.
//!
//! **Profiles.** Receipts are bound to a profile.
//!
//! A profile has two parts. The *model* part (backend, adapter, driver, PCI ids, `details`) is
//! everything that can change what a kernel computes: for the host CPU the vendor and model
//! string, the ISA features the build uses and those detected at run time, the target triple and
//! the compiler (`rustc -V`, recorded at build time); for CUDA the device name, compute
//! capability, driver and NVRTC versions; for wgpu the adapter, driver and PCI ids. The
//! *instance* part says which physical device (CUDA: the device UUID) or machine (host and
//! wgpu: a fingerprint of the machine id) it is. An unsigned receipt counts only on its exact
//! profile, instance included (the machine that minted it); a receipt signed by a trusted key
//! counts on any device of the same model ([`DeviceProfile::same_model`]).

mod placement;
pub use placement::{DeviceId, DeviceStorage, Placement};

use crate::kind::BackendKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

/// Identifies the device model, driver stack and instance a backend executes on.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    /// The backend that ran on this device (serialised by name: `reference`, `cpu`, `wgpu`,
    /// `cuda`).
    pub backend: BackendKind,
    /// Adapter, device or CPU model name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub adapter: String,
    /// Driver name and version (host: the compiler).
    pub driver: String,
    /// PCI vendor id (0 where none applies).
    pub vendor_id: u32,
    /// PCI device id (0 where none applies).
    pub device_id: u32,
    /// Every further fact of the model part, by name (see the module doc); compared exactly.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub details: BTreeMap<String, String>,
    /// Which physical device or machine this is (CUDA: `GPU-<uuid>`; host and wgpu:
    /// `machine:<fingerprint>`), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
}

impl DeviceProfile {
    /// The profile of host CPU backends (reference and cpu): CPU vendor and model, ISA features
    /// (built with and detected), target triple, compiler version, and the machine.
    pub fn host(backend: BackendKind) -> Self {
        let facts = host_facts();
        let mut details = BTreeMap::new();
        details.insert("cpu.vendor".to_string(), facts.vendor.clone());
        details.insert("cpu.model".to_string(), facts.model.clone());
        if !facts.signature.is_empty() {
            details.insert("cpu.signature".to_string(), facts.signature.clone());
        }
        details.insert("isa.build".to_string(), facts.build_features.join(","));
        details.insert("isa.runtime".to_string(), facts.runtime_features.join(","));
        details.insert("target".to_string(), env!("OP_TARGET_TRIPLE").to_string());
        details.insert("rustc".to_string(), env!("OP_RUSTC_VERSION").to_string());
        DeviceProfile {
            backend,
            adapter: format!("{} ({})", facts.model, facts.vendor),
            driver: env!("OP_RUSTC_VERSION").to_string(),
            vendor_id: 0,
            device_id: 0,
            details,
            instance: machine_fingerprint().map(str::to_string),
        }
    }

    /// The same device model and software stack: every field but [`DeviceProfile::instance`]
    /// is equal. A signed receipt from a trusted key counts on any device of the same model.
    pub fn same_model(&self, other: &DeviceProfile) -> bool {
        self.backend == other.backend
            && self.adapter == other.adapter
            && self.driver == other.driver
            && self.vendor_id == other.vendor_id
            && self.device_id == other.device_id
            && self.details == other.details
    }

    /// What differs between `self` and `other`, one `field: self vs other` line per field (empty
    /// when equal), for error messages.
    pub fn differences(&self, other: &DeviceProfile) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |name: &str, a: &str, b: &str| {
            if a != b {
                out.push(format!("{name}: `{a}` vs `{b}`"));
            }
        };
        cmp("backend", self.backend.name(), other.backend.name());
        cmp("adapter", &self.adapter, &other.adapter);
        cmp("driver", &self.driver, &other.driver);
        cmp("vendor id", &format!("{:04x}", self.vendor_id), &format!("{:04x}", other.vendor_id));
        cmp("device id", &format!("{:04x}", self.device_id), &format!("{:04x}", other.device_id));
        let keys: std::collections::BTreeSet<&String> = self.details.keys().chain(other.details.keys()).collect();
        for k in keys {
            let none = "(absent)";
            cmp(k, self.details.get(k).map_or(none, String::as_str), other.details.get(k).map_or(none, String::as_str));
        }
        cmp("instance", self.instance.as_deref().unwrap_or("(none)"), other.instance.as_deref().unwrap_or("(none)"));
        out
    }
}

impl fmt::Display for DeviceProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {} ({}, {:04x}:{:04x})", self.backend, self.adapter, self.driver, self.vendor_id, self.device_id)
    }
}

// ---------------------------------------------------------------------------------------------
// Host facts

/// What the host profile records, computed once per process.
struct HostFacts {
    vendor: String,
    model: String,
    /// x86: `family F model M stepping S` from CPUID; empty elsewhere.
    signature: String,
    build_features: Vec<&'static str>,
    runtime_features: Vec<&'static str>,
}

fn host_facts() -> &'static HostFacts {
    static FACTS: OnceLock<HostFacts> = OnceLock::new();
    FACTS.get_or_init(|| {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let (info_vendor, info_model) = parse_cpuinfo(&cpuinfo);
        let (cpuid_vendor, cpuid_model, signature) = cpuid_facts();
        let pick = |a: String, b: Option<String>| if a.trim().is_empty() { b.unwrap_or_else(|| "unknown".to_string()) } else { a };
        let (build_features, runtime_features) = isa_features();
        HostFacts {
            vendor: pick(cpuid_vendor, info_vendor),
            model: pick(cpuid_model, info_model),
            signature,
            build_features,
            runtime_features,
        }
    })
}

/// (vendor, model) from `/proc/cpuinfo` text: x86 `vendor_id` / `model name`; Arm
/// `CPU implementer` / `CPU part` (with variant and revision); other `Hardware` / `cpu model`
/// lines. First processor only. Pure.
pub fn parse_cpuinfo(text: &str) -> (Option<String>, Option<String>) {
    fn pair(line: &str) -> Option<(&str, &str)> {
        line.split_once(':').map(|(k, v)| (k.trim(), v.trim()))
    }
    // The first processor's block, plus `Hardware` lines wherever they are (Arm puts them last).
    let mut fields: Vec<(&str, &str)> =
        text.lines().skip_while(|l| l.trim().is_empty()).take_while(|l| !l.trim().is_empty()).filter_map(pair).collect();
    fields.extend(text.lines().filter_map(pair).filter(|(k, _)| *k == "Hardware"));
    let get = |key: &str| fields.iter().find(|(k, v)| *k == key && !v.is_empty()).map(|(_, v)| v.to_string());
    let vendor = get("vendor_id").or_else(|| get("CPU implementer").map(|v| format!("implementer {v}"))).or_else(|| get("vendor"));
    let part = get("CPU part").map(|part| {
        let mut m = format!("part {part}");
        for (k, label) in [("CPU variant", "variant"), ("CPU revision", "revision")] {
            if let Some(v) = get(k) {
                m.push_str(&format!(" {label} {v}"));
            }
        }
        m
    });
    let model = get("model name").or_else(|| get("cpu model")).or(part).or_else(|| get("Hardware"));
    (vendor, model)
}

/// (vendor, brand string, family/model/stepping) from CPUID on x86; empty strings elsewhere.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn cpuid_facts() -> (String, String, String) {
    #[cfg(target_arch = "x86")]
    use std::arch::x86::{__cpuid, CpuidResult};
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::{__cpuid, CpuidResult};
    #[allow(unused_unsafe)]
    let cpuid = |leaf: u32| -> CpuidResult {
        // SAFETY: the CPUID instruction exists on every CPU Rust's x86/x86_64 targets run on;
        // reading a leaf has no side effect.
        unsafe { __cpuid(leaf) }
    };
    let bytes = |regs: &[u32]| -> String {
        let b: Vec<u8> = regs.iter().flat_map(|r| r.to_le_bytes()).collect();
        String::from_utf8_lossy(&b).trim_matches(|c: char| c == '\0' || c.is_whitespace()).to_string()
    };
    let leaf0 = cpuid(0);
    let vendor = bytes(&[leaf0.ebx, leaf0.edx, leaf0.ecx]);
    let signature = if leaf0.eax >= 1 {
        let eax = cpuid(1).eax;
        let (base_family, base_model, stepping) = ((eax >> 8) & 0xf, (eax >> 4) & 0xf, eax & 0xf);
        let (ext_family, ext_model) = ((eax >> 20) & 0xff, (eax >> 16) & 0xf);
        let family = if base_family == 0xf { base_family + ext_family } else { base_family };
        let model = if base_family == 0x6 || base_family == 0xf { (ext_model << 4) | base_model } else { base_model };
        format!("family {family:#x} model {model:#x} stepping {stepping}")
    } else {
        String::new()
    };
    let brand = if cpuid(0x8000_0000).eax >= 0x8000_0004 {
        let regs: Vec<u32> = (0x8000_0002u32..=0x8000_0004)
            .flat_map(|l| {
                let r = cpuid(l);
                [r.eax, r.ebx, r.ecx, r.edx]
            })
            .collect();
        bytes(&regs).split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        String::new()
    };
    (vendor, brand, signature)
}

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
fn cpuid_facts() -> (String, String, String) {
    (String::new(), String::new(), String::new())
}

/// Expands to `(built with, detected at run time)` lists of the named ISA features.
macro_rules! features {
    ($detect:ident: $($name:tt),* $(,)?) => {{
        let mut build = Vec::new();
        let mut runtime = Vec::new();
        $(
            if cfg!(target_feature = $name) {
                build.push($name);
            }
            if std::arch::$detect!($name) {
                runtime.push($name);
            }
        )*
        (build, runtime)
    }};
}

/// The ISA features the build was compiled with (`cfg!(target_feature)`) and those detected at
/// run time that kernels may dispatch on.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn isa_features() -> (Vec<&'static str>, Vec<&'static str>) {
    features!(is_x86_feature_detected:
        "sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma", "f16c",
        "bmi1", "bmi2", "lzcnt", "movbe", "aes", "pclmulqdq", "sha", "adx", "avx512f", "avx512cd",
        "avx512bw", "avx512dq", "avx512vl", "avx512ifma", "avx512vbmi", "avx512vnni", "avx512bf16",
        "avx512vpopcntdq", "gfni", "vaes", "vpclmulqdq",
    )
}

#[cfg(target_arch = "aarch64")]
fn isa_features() -> (Vec<&'static str>, Vec<&'static str>) {
    features!(is_aarch64_feature_detected: "neon", "fp16", "fhm", "dotprod", "i8mm", "bf16", "sve", "sve2", "lse", "rcpc")
}

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
fn isa_features() -> (Vec<&'static str>, Vec<&'static str>) {
    (Vec::new(), Vec::new())
}

/// `machine:<32 hex>`: a keyed blake3 of the machine id (`/etc/machine-id`, else
/// `/var/lib/dbus/machine-id`, else the host name), never the id itself; `None` when none can be
/// read. Identifies the machine an unsigned receipt was minted on.
pub fn machine_fingerprint() -> Option<&'static str> {
    static FINGERPRINT: OnceLock<Option<String>> = OnceLock::new();
    FINGERPRINT
        .get_or_init(|| {
            let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
            let id = read("/etc/machine-id")
                .or_else(|| read("/var/lib/dbus/machine-id"))
                .or_else(|| read("/proc/sys/kernel/hostname"))
                .or_else(|| read("/etc/hostname"))?;
            Some(fingerprint(&id))
        })
        .as_deref()
}

/// The fingerprint of a machine id (pure; see [`machine_fingerprint`]).
pub fn fingerprint(machine_id: &str) -> String {
    let mut h = blake3::Hasher::new_derive_key("op-runtime 2025 machine fingerprint v1");
    h.update(machine_id.as_bytes());
    let hex = h.finalize().to_hex();
    format!("machine:{}", &hex.as_str()[..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_profile_is_exact() {
        let p = DeviceProfile::host(BackendKind::Cpu);
        println!("host profile: {p:#?}");
        let rustc = &p.details["rustc"];
        assert!(rustc.starts_with("rustc ") && rustc.chars().any(|c| c.is_ascii_digit()), "{rustc}");
        assert_ne!(rustc, "rustc stable");
        assert_eq!(p.driver, *rustc);
        assert!(p.details["target"].contains(std::env::consts::ARCH), "{:?}", p.details);
        assert!(!p.details["cpu.model"].is_empty() && !p.details["cpu.vendor"].is_empty(), "{:?}", p.details);
        if cfg!(target_arch = "x86_64") {
            // Every x86-64 build uses SSE2, and what the build uses the CPU has.
            assert!(p.details["isa.build"].split(',').any(|f| f == "sse2"), "{:?}", p.details);
            for f in p.details["isa.build"].split(',').filter(|f| !f.is_empty()) {
                assert!(p.details["isa.runtime"].split(',').any(|g| g == f), "built with {f} but not detected");
            }
        }
        // Stable within a process, distinct per backend.
        assert_eq!(p, DeviceProfile::host(BackendKind::Cpu));
        assert_ne!(p, DeviceProfile::host(BackendKind::Reference));
    }

    #[test]
    fn same_model_ignores_only_the_instance() {
        let a = DeviceProfile::host(BackendKind::Cpu);
        let mut b = a.clone();
        b.instance = Some(fingerprint("another machine"));
        assert!(a.same_model(&b) && a != b);
        assert_eq!(a.differences(&b).len(), 1, "{:?}", a.differences(&b));
        assert!(a.differences(&b)[0].starts_with("instance"));
        let mut c = a.clone();
        c.details.insert("rustc".into(), "rustc 0.0.0".into());
        assert!(!a.same_model(&c));
        assert!(a.differences(&c)[0].starts_with("rustc"), "{:?}", a.differences(&c));
        assert!(a.differences(&a).is_empty());
    }

    #[test]
    fn fingerprints_hide_the_machine_id() {
        let f = fingerprint("0123456789abcdef");
        assert!(f.starts_with("machine:") && f.len() == "machine:".len() + 32);
        assert!(!f.contains("0123456789abcdef"));
        assert_ne!(f, fingerprint("0123456789abcdee"));
    }

    #[test]
    fn cpuinfo_is_parsed_for_x86_and_arm() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\nvendor_id\t: Other\n";
        assert_eq!(parse_cpuinfo(x86), (Some("GenuineIntel".into()), Some("Intel(R) Xeon(R) CPU @ 2.20GHz".into())));
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\nprocessor\t: 1\nCPU part\t: 0xd40\n";
        assert_eq!(parse_cpuinfo(arm), (Some("implementer 0x41".into()), Some("part 0xd0c variant 0x3 revision 1".into())));
        assert_eq!(parse_cpuinfo(""), (None, None));
        assert_eq!(parse_cpuinfo("\u{0}\u{ff}:\n:::\nvendor_id:\n"), (None, None));
    }
}
