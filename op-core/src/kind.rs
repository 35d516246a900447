//! The kinds of backend and their one default priority list. Owns naming and order only; which
//! backends exist in a build is decided by `backends`, which one runs a call by dispatch.

use op_contract::contract::KernelLang;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The kinds of backend, declared in default priority order (first = preferred).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// CUDA via cudarc + NVRTC.
    Cuda,
    /// WGSL compute via wgpu.
    Wgpu,
    /// The op's optional fast CPU kernel, run over the CPU's cores.
    Cpu,
    /// The annotated reference function.
    Reference,
}

impl BackendKind {
    /// Every kind in default priority order: the one list dispatch, the registry and
    /// conformance read. A backend on a software device (a CPU-type GPU adapter such as
    /// lavapipe) ranks below [`BackendKind::Cpu`]; see [`BackendKind::rank`].
    pub const PRIORITY: [BackendKind; 4] = [BackendKind::Cuda, BackendKind::Wgpu, BackendKind::Cpu, BackendKind::Reference];

    /// The backend's name.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cpu => "cpu",
            BackendKind::Reference => "reference",
        }
    }

    /// What a profile's instance names on this backend: one physical `device` (CUDA: its UUID)
    /// or the `machine` (host backends; wgpu adapters are named by machine and PCI slot).
    pub fn instance_noun(self) -> &'static str {
        match self {
            BackendKind::Cuda => "device",
            BackendKind::Wgpu | BackendKind::Cpu | BackendKind::Reference => "machine",
        }
    }

    /// Position in default selection (lower = preferred): the kind's place in [`PRIORITY`],
    /// except that a backend whose device is emulated in software on the CPU ranks just above
    /// the reference, below the native CPU backend.
    ///
    /// [`PRIORITY`]: BackendKind::PRIORITY
    pub fn rank(self, software: bool) -> usize {
        let pos = BackendKind::PRIORITY.iter().position(|k| *k == self).unwrap_or(BackendKind::PRIORITY.len());
        let cpu = BackendKind::PRIORITY.iter().position(|k| *k == BackendKind::Cpu).unwrap_or(0);
        if software && pos < cpu {
            // Just below cpu (demoted kinds tie; a stable sort keeps their relative order).
            2 * cpu + 1
        } else {
            2 * pos
        }
    }
}

impl BackendKind {
    /// The GPU backend that runs kernels written in `lang`.
    pub fn for_kernel(lang: KernelLang) -> BackendKind {
        match lang {
            KernelLang::Wgsl => BackendKind::Wgpu,
            KernelLang::Cuda => BackendKind::Cuda,
        }
    }

    /// Which of an op's GPU kernels (their languages in declaration order) this backend runs:
    /// the first one in its language. The one rule the launch plan and the cards read.
    pub fn runs_kernel(self, langs: impl IntoIterator<Item = KernelLang>) -> Option<usize> {
        langs.into_iter().position(|l| BackendKind::for_kernel(l) == self)
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::BackendKind::{self, *};

    #[test]
    fn software_devices_rank_below_the_native_cpu_but_above_the_reference() {
        let order = |software: bool| {
            let mut v = BackendKind::PRIORITY.to_vec();
            v.sort_by_key(|k| k.rank(software && *k == Wgpu));
            v
        };
        assert_eq!(order(false), vec![Cuda, Wgpu, Cpu, Reference]);
        assert_eq!(order(true), vec![Cuda, Cpu, Wgpu, Reference]);
    }
}
