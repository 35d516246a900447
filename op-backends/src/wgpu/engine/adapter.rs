//! Which adapter the engine takes (hardware before software, `WGPU_ADAPTER_NAME`, a fallback
//! request last), what to say when there is none, and the device profile of the one taken.

use super::WgpuError;
use op_core::device::DeviceProfile;
use op_core::kind::BackendKind;

fn no_adapter_hint(detail: &str) -> String {
    format!(
        "{detail}. wgpu was built with backends {:?}. On a machine without a GPU install Mesa's \
         software Vulkan driver (lavapipe): `apt-get install mesa-vulkan-drivers` \
         (Debian/Ubuntu); check with `vulkaninfo --summary` or VK_ICD_FILENAMES",
        wgpu::Instance::enabled_backend_features()
    )
}

/// Preference of an adapter type: hardware first, software (CPU) last.
fn rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

/// The adapter to use: hardware before software (`rank`), `WGPU_ADAPTER_NAME` (the variable
/// wgpu's own helpers read) picking one by name, and an explicit fallback request last.
pub(super) fn choose_adapter(instance: &wgpu::Instance) -> Result<wgpu::Adapter, WgpuError> {
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    adapters.sort_by_key(|a| rank(a.get_info().device_type));
    if let Some(want) = std::env::var("WGPU_ADAPTER_NAME").ok().filter(|s| !s.is_empty()) {
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        let want_lc = want.to_lowercase();
        adapters.retain(|a| a.get_info().name.to_lowercase().contains(&want_lc));
        if adapters.is_empty() {
            return Err(WgpuError::NoAdapter { hint: format!("WGPU_ADAPTER_NAME={want:?} matches none of the adapters {names:?}") });
        }
    }
    match adapters.into_iter().next() {
        Some(a) => Ok(a),
        None => {
            // Ask once more, explicitly for a fallback (software) adapter.
            let opts = wgpu::RequestAdapterOptions { force_fallback_adapter: true, ..Default::default() };
            pollster::block_on(instance.request_adapter(&opts)).map_err(|e| WgpuError::NoAdapter { hint: no_adapter_hint(&e.to_string()) })
        }
    }
}

/// The device profile of an adapter: name, driver (and driver info), PCI ids.
pub(super) fn wgpu_profile(info: &wgpu::AdapterInfo) -> DeviceProfile {
    let driver = match (info.driver.trim(), info.driver_info.trim()) {
        ("", "") => format!("{:?}", info.backend),
        (d, "") => d.to_string(),
        ("", i) => i.to_string(),
        (d, i) => format!("{d} ({i})"),
    };
    let mut details = std::collections::BTreeMap::new();
    details.insert("api".to_string(), format!("{:?}", info.backend));
    details.insert("device_type".to_string(), format!("{:?}", info.device_type));
    // The machine, and the adapter's PCI slot where the platform reports one.
    let instance = op_core::device::machine_fingerprint().map(|m| match info.device_pci_bus_id.trim() {
        "" => m.to_string(),
        bus => format!("{m}/pci {bus}"),
    });
    DeviceProfile {
        backend: BackendKind::Wgpu,
        adapter: info.name.clone(),
        driver,
        vendor_id: info.vendor,
        device_id: info.device,
        details,
        instance,
    }
}
