//! The exact profile of a CUDA device (name, compute capability, driver API and build, NVRTC,
//! PTX target, PCI ids, UUID) and the platform facts it is read from.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use cudarc::driver::sys as cusys;
use cudarc::driver::CudaContext;

use op_core::device::DeviceProfile;
use op_core::kind::BackendKind;

/// PCI vendor id of NVIDIA.
pub const NVIDIA_VENDOR_ID: u32 = 0x10de;

/// PCI device (product) id from sysfs, via the device's PCI domain/bus/slot.
pub(super) fn pci_device_id(ctx: &CudaContext) -> Option<u32> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let a = |attr| ctx.attribute(attr).ok();
    let domain = a(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?;
    let bus = a(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
    let slot = a(cusys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?;
    let dir = PathBuf::from(format!("/sys/bus/pci/devices/{domain:04x}:{bus:02x}:{slot:02x}.0"));
    let vendor = parse_pci_hex(&fs::read_to_string(dir.join("vendor")).ok()?)?;
    if vendor != NVIDIA_VENDOR_ID {
        return None;
    }
    parse_pci_hex(&fs::read_to_string(dir.join("device")).ok()?)
}

/// Parses a sysfs PCI id such as `0x2335\n`.
fn parse_pci_hex(s: &str) -> Option<u32> {
    let s = s.trim();
    let s = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    u32::from_str_radix(s, 16).ok()
}

/// Facts a CUDA device profile is made of.
#[derive(Clone, Debug)]
pub struct CudaFacts {
    pub name: String,
    pub uuid: String,
    pub compute_capability: (i32, i32),
    /// `cuDriverGetVersion` (e.g. 12080).
    pub driver_api: i32,
    /// The kernel driver's build (e.g. `550.54.15`), where the platform reports it.
    pub driver_build: Option<String>,
    pub nvrtc: (i32, i32),
    pub ptx_target: i32,
    pub device_id: u32,
}

/// The exact profile of a CUDA device: the model part (name, compute capability, driver API
/// and build, NVRTC, PTX target, PCI ids) and the UUID as the instance. Pure.
pub fn cuda_profile(f: CudaFacts) -> DeviceProfile {
    let (cc_major, cc_minor) = f.compute_capability;
    let api = format!("{}.{}", f.driver_api / 1000, (f.driver_api % 1000) / 10);
    let build = f.driver_build.clone().unwrap_or_else(|| "unknown".to_string());
    let mut details = BTreeMap::new();
    details.insert("compute_capability".to_string(), format!("{cc_major}.{cc_minor}"));
    details.insert("driver_api".to_string(), api.clone());
    details.insert("driver_build".to_string(), build.clone());
    details.insert("nvrtc".to_string(), format!("{}.{}", f.nvrtc.0, f.nvrtc.1));
    details.insert("ptx_target".to_string(), format!("compute_{}", f.ptx_target));
    DeviceProfile {
        backend: BackendKind::Cuda,
        adapter: f.name,
        driver: format!(
            "CUDA driver {api}, build {build} (NVRTC {}.{}, compute capability {cc_major}.{cc_minor}, PTX compute_{})",
            f.nvrtc.0, f.nvrtc.1, f.ptx_target
        ),
        vendor_id: NVIDIA_VENDOR_ID,
        device_id: f.device_id,
        details,
        instance: Some(f.uuid),
    }
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as `nvidia-smi -L` shows a device UUID.
pub fn format_uuid(b: &[u8; 16]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("GPU-{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// The driver build from `/proc/driver/nvidia/version` (its `NVRM version` line, e.g.
/// `NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 ...`). Pure.
pub fn parse_nvidia_driver_build(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.trim_start().starts_with("NVRM version"))?;
    line.split_whitespace()
        .find(|t| {
            let parts: Vec<&str> = t.split('.').collect();
            parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_profiles_are_exact() {
        let facts = CudaFacts {
            name: "NVIDIA H200".into(),
            uuid: format_uuid(&[0xab; 16]),
            compute_capability: (9, 0),
            driver_api: 12080,
            driver_build: Some("570.86.15".into()),
            nvrtc: (12, 8),
            ptx_target: 90,
            device_id: 0x2335,
        };
        let p = cuda_profile(facts.clone());
        assert_eq!(p.instance.as_deref(), Some("GPU-abababab-abab-abab-abab-abababababab"));
        for (k, v) in [("compute_capability", "9.0"), ("driver_api", "12.8"), ("driver_build", "570.86.15"), ("nvrtc", "12.8")] {
            assert_eq!(p.details[k], v, "{k}");
        }
        assert!(p.driver.contains("570.86.15") && p.driver.contains("NVRTC 12.8"), "{}", p.driver);
        // Another card of the same model: same model, other instance. Any other fact: another model.
        let twin = cuda_profile(CudaFacts { uuid: format_uuid(&[1; 16]), ..facts.clone() });
        assert!(p.same_model(&twin) && p != twin);
        for other in [
            CudaFacts { driver_build: Some("570.86.16".into()), ..facts.clone() },
            CudaFacts { nvrtc: (12, 9), ..facts.clone() },
            CudaFacts { compute_capability: (9, 1), ..facts.clone() },
            CudaFacts { driver_api: 12090, ..facts.clone() },
            CudaFacts { name: "NVIDIA H100".into(), ..facts.clone() },
        ] {
            assert!(!p.same_model(&cuda_profile(other.clone())), "{other:?}");
        }
        let proprietary =
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(parse_nvidia_driver_build(proprietary).as_deref(), Some("550.54.15"));
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder@U16)  Thu Jan 23\n";
        assert_eq!(parse_nvidia_driver_build(open).as_deref(), Some("570.86.15"));
        assert_eq!(parse_nvidia_driver_build("garbage \u{ff}"), None);
        assert_eq!(parse_nvidia_driver_build("NVRM version: x86_64 ..1 1."), None);
    }

    #[test]
    fn pci_ids_are_parsed() {
        assert_eq!(parse_pci_hex("0x2335\n"), Some(0x2335));
        assert_eq!(parse_pci_hex("10de"), Some(0x10de));
        assert_eq!(parse_pci_hex("zz"), None);
    }
}
