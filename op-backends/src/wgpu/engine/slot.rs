//! What one launch binds and how it is launched: the [`Slot`]s in binding order, their
//! [`SlotKind`]s, and the [`Geometry`] of the dispatch.

use op_core::decl::Launch;

/// One slot of a launch, in binding order (`@group(0) @binding(i)`).
#[derive(Clone, Copy, Debug)]
pub enum Slot<'a> {
    /// A read-only storage buffer (`var<storage, read>`).
    Read(&'a [u8]),
    /// A read-write storage buffer (`var<storage, read_write>`): these are its initial contents
    /// (e.g. guard-band canaries); its final contents are read back after the launch, in full.
    ReadWrite(&'a [u8]),
    /// A uniform buffer (`var<uniform>`), padded to a multiple of 16 bytes.
    Uniform(&'a [u8]),
    /// A read-write storage buffer initialised with `init` (all of it: guard bands included)
    /// but bound only at `offset .. offset + size`, so the kernel's `arrayLength` covers that
    /// window. Used for guard bands: `offset` (a multiple of
    /// [`WgpuEngine::storage_offset_alignment`](super::WgpuEngine::storage_offset_alignment)) skips the front guard, `size` includes the back
    /// guard, so a write past the end lands on canaries instead of being dropped by wgpu's
    /// bounds checks. The whole buffer is read back.
    Guarded {
        /// Initial contents of the whole buffer, guard bands included.
        init: &'a [u8],
        /// Byte offset of the bound window (skips the front guard).
        offset: u64,
        /// Byte size of the bound window (includes the back guard).
        size: u64,
    },
    /// A read-write storage buffer of `len` bytes whose initial contents do not matter (wgpu
    /// zero-fills it; nothing is uploaded); read back after the launch. For plain outputs.
    Output {
        /// Size in bytes.
        len: usize,
    },
    /// A uniform buffer already on the device (from the engine's uniform buffers, kept by
    /// a prepared kernel for calls with the same dims and parameters): nothing written.
    UniformBuffer(&'a wgpu::Buffer),
    /// A read-only storage buffer already on the device (a device tensor's): bound as it is,
    /// nothing uploaded.
    Resident {
        /// The buffer (of this engine's device).
        buffer: &'a wgpu::Buffer,
        /// Bytes of data in it.
        bytes: u64,
    },
}

impl<'a> Slot<'a> {
    pub(super) fn kind(&self) -> SlotKind {
        match self {
            Slot::Read(_) | Slot::Resident { .. } => SlotKind::Read,
            Slot::ReadWrite(_) => SlotKind::ReadWrite,
            Slot::Uniform(_) | Slot::UniformBuffer(_) => SlotKind::Uniform,
            Slot::Guarded { .. } | Slot::Output { .. } => SlotKind::ReadWrite,
        }
    }

    pub(super) fn len(&self) -> usize {
        match *self {
            Slot::Output { len } => len,
            Slot::Resident { bytes, .. } => usize::try_from(bytes).unwrap_or(usize::MAX),
            Slot::UniformBuffer(b) => usize::try_from(b.size()).unwrap_or(usize::MAX),
            s => s.bytes().len(),
        }
    }

    pub(super) fn bytes(&self) -> &'a [u8] {
        match *self {
            Slot::Read(b) | Slot::ReadWrite(b) | Slot::Uniform(b) => b,
            Slot::Guarded { init, .. } => init,
            Slot::Output { .. } | Slot::Resident { .. } | Slot::UniformBuffer(_) => &[],
        }
    }

    pub(super) fn read_back(&self) -> bool {
        matches!(self, Slot::ReadWrite(_) | Slot::Guarded { .. } | Slot::Output { .. })
    }
}

/// The launch of one dispatch: workgroup size, invocations, and the kernel's launch
/// convention. A flat kernel gets `ceil(threads / wg)` workgroups along x (and along y and z
/// for a 2-D or 3-D launch, `yz`); a linear one a 2-D grid of rows (`row` workgroups wide, the
/// device's per-dimension limit by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// `@workgroup_size`: `[x, 1, 1]` for 1-D launches.
    pub wg: [u32; 3],
    /// Invocations to launch (along x).
    pub threads: u64,
    /// Invocations along y and z: `[1, 1]` for a 1-D launch.
    pub yz: [u64; 2],
    /// How the kernel indexes its invocations.
    pub launch: Launch,
    /// Row width in workgroups for linear kernels (`None`: as wide as the device allows).
    /// Conformance launches narrow rows so a wrong linearisation fails on small cases.
    pub row: Option<u32>,
}

impl Geometry {
    /// A flat launch of `threads` invocations in workgroups of `wg`.
    pub fn flat(wg: [u32; 3], threads: u64) -> Geometry {
        Geometry { wg, threads, yz: [1, 1], launch: Launch::Flat, row: None }
    }

    /// Whether the launch has no invocation (an extent is 0).
    pub fn is_empty(&self) -> bool {
        self.threads == 0 || self.yz.contains(&0)
    }
}

/// The binding kind of a [`Slot`], without its contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SlotKind {
    /// A read-only storage buffer.
    Read,
    /// A read-write storage buffer.
    ReadWrite,
    /// A uniform buffer.
    Uniform,
}
