//! Launching a compiled kernel on the engine's device: its arguments ([`CudaArg`]) uploaded or
//! borrowed from device tensors, the grid checked, the kernel enqueued (timed with events when
//! asked), and the written buffers read back or kept on the device.

use std::sync::atomic::Ordering;

use cudarc::driver::sys as cusys;
use cudarc::driver::{CudaSlice, DriverError, LaunchConfig, PushKernelArg};

use super::engine::CudaEngine;
use super::error::CudaError;
use super::grid::{launch_grid, CudaGrid};
use super::kernel::{CudaKernel, PtxParam};
use super::probe::guarded;
use super::resident::CudaBuffer;
use crate::transfers::Transfers;

/// One kernel argument, in the kernel's parameter order.
#[derive(Clone, Copy, Debug)]
pub enum CudaArg<'a> {
    /// A device buffer initialised from these bytes; not read back.
    Read(&'a [u8]),
    /// A device buffer initialised from these bytes (its initial contents) and read back after
    /// the launch.
    ReadWrite(&'a [u8]),
    /// A device buffer initialised from `init` (guard bands included) and read back in full
    /// after the launch; the kernel receives a pointer `offset` bytes into it, so writes before
    /// or past the output land on the canaries around it.
    Guarded {
        /// Initial contents of the whole buffer, guard bands included.
        init: &'a [u8],
        /// Byte offset of the output within the buffer.
        offset: usize,
    },
    /// A buffer already on this engine's device (a device tensor's storage); not read back.
    Device(&'a CudaSlice<u8>),
    /// A new zero-filled buffer of this many bytes (nothing uploaded), read back after the
    /// launch: a plain call's output.
    Zeroed(u64),
    /// A new zero-filled buffer of this many bytes, left on the device: [`CudaEngine::launch_resident`]
    /// returns it (a device tensor's output).
    Fresh(u64),
    /// A 32-bit unsigned scalar (`unsigned int`).
    U32(u32),
    /// A 32-bit signed scalar (`int`).
    I32(i32),
    /// A 32-bit float scalar (`float`).
    F32(f32),
}

impl CudaEngine {
    /// A new device buffer holding `bytes` (one counted host-to-device transfer).
    pub fn upload_bytes(&self, bytes: &[u8]) -> Result<CudaBuffer, CudaError> {
        let drv = |what: &str, e: DriverError| CudaError::Driver(format!("{what}: {e:?}"));
        self.link.waits.check()?;
        let slot = self.upload(&CudaArg::Read(bytes), &drv)?;
        self.link.waits.wait(&self.stream, "an upload")?;
        match slot {
            Slot::Buf { dev, len, .. } => Ok(CudaBuffer::new(dev, len as u64, self.link.clone())),
            _ => Err(CudaError::InvalidArgument("an upload made no buffer".into())),
        }
    }

    /// Launches `kernel` once with `args` in parameter order, `ceil(threads / block)` blocks
    /// along each dimension of `grid` (see [`CudaGrid`]), waits for it, and returns the final bytes of each
    /// [`CudaArg::ReadWrite`], [`CudaArg::Guarded`] and [`CudaArg::Zeroed`] argument, in order (a [`CudaArg::Fresh`]
    /// buffer is dropped: use [`CudaEngine::launch_resident`]). `threads == 0` launches nothing
    /// and returns the initial contents. Uploads and read-backs count in [`CudaEngine::transfers`].
    pub fn launch(&self, kernel: &CudaKernel, args: &[CudaArg<'_>], grid: CudaGrid) -> Result<Vec<Vec<u8>>, CudaError> {
        let drv = |what: &str, e: DriverError| CudaError::Driver(format!("{what} (kernel `{}`): {e:?}", kernel.entry));
        let slots = self.run(kernel, args, grid)?;
        guarded(
            |msg| CudaError::Driver(format!("cudarc panicked while reading `{}` back: {msg}", kernel.entry)),
            || {
                let mut out = Vec::new();
                for slot in &slots {
                    if let Slot::Buf { dev, len, read_back: true, .. } = slot {
                        let mut host = vec![0u8; *len];
                        if *len > 0 {
                            self.stream
                                .memcpy_dtoh(&dev.slice(0..*len), host.as_mut_slice())
                                .map_err(|e| drv("cannot read a buffer back", e))?;
                        }
                        self.link.counters.down(*len as u64);
                        out.push(host);
                    }
                }
                self.link.waits.wait(&self.stream, &format!("the read back of kernel `{}`", kernel.entry))?;
                drop(slots);
                // Errors cudarc recorded in destructors (frees) are reported now rather than later.
                self.ctx.check_err().map_err(|e| drv("freeing device buffers failed", e))?;
                Ok(out)
            },
        )
    }

    /// [`CudaEngine::launch`] leaving its outputs on the device: returns one buffer per
    /// [`CudaArg::Fresh`] argument, in order; nothing is read back.
    pub fn launch_resident(&self, kernel: &CudaKernel, args: &[CudaArg<'_>], grid: CudaGrid) -> Result<Vec<CudaBuffer>, CudaError> {
        let slots = self.run(kernel, args, grid)?;
        let made = slots
            .into_iter()
            .filter_map(|s| match s {
                Slot::Buf { dev, len, fresh: true, .. } => Some(CudaBuffer::new(dev, len as u64, self.link.clone())),
                _ => None,
            })
            .collect();
        self.ctx.check_err().map_err(|e| CudaError::Driver(format!("kernel `{}`: {e:?}", kernel.entry)))?;
        Ok(made)
    }

    /// Checks, uploads and launches, then waits for the kernel: the arguments on the device.
    fn run<'a>(&self, kernel: &CudaKernel, args: &[CudaArg<'a>], launch: CudaGrid) -> Result<Vec<Slot<'a>>, CudaError> {
        if kernel.engine_id != self.id {
            return Err(CudaError::InvalidArgument(format!("kernel `{}` was compiled by a different CudaEngine", kernel.entry)));
        }
        let grid = launch_grid(launch, self.max_threads_per_block, self.max_block, self.max_grid)?;
        if let Some(params) = &kernel.params {
            check_args_against_params(&kernel.entry, params, args)?;
        }
        // A hung engine refuses at once: an upload behind a kernel that never ends would wait.
        self.link.waits.check()?;
        guarded(
            |msg| CudaError::Driver(format!("cudarc panicked while launching `{}`: {msg}", kernel.entry)),
            || {
                let drv = |what: &str, e: DriverError| CudaError::Driver(format!("{what} (kernel `{}`): {e:?}", kernel.entry));
                let slots = args.iter().map(|a| self.upload(a, &drv)).collect::<Result<Vec<Slot>, CudaError>>()?;
                if !grid.contains(&0) {
                    let b = launch.block;
                    let cfg = LaunchConfig { grid_dim: (grid[0], grid[1], grid[2]), block_dim: (b[0], b[1], b[2]), shared_mem_bytes: 0 };
                    self.launch_slots(kernel, &slots, cfg, &drv)?;
                }
                // Kernel faults surface here (and are sticky: the context is unusable afterwards);
                // a kernel that does not end is a timeout, never a wait without a limit.
                self.link.waits.wait(&self.stream, &format!("kernel `{}`", kernel.entry))?;
                Ok(slots)
            },
        )
    }

    /// One argument on the device: a buffer uploaded (empty ones get a 1-byte allocation so the
    /// kernel sees a valid pointer; the driver refuses zero-sized ones) or a scalar.
    fn upload<'a>(&self, arg: &CudaArg<'a>, drv: &impl Fn(&str, DriverError) -> CudaError) -> Result<Slot<'a>, CudaError> {
        Ok(match *arg {
            CudaArg::Device(slice) => Slot::Borrowed(slice),
            CudaArg::Fresh(bytes) | CudaArg::Zeroed(bytes) => {
                let len = usize::try_from(bytes).map_err(|_| CudaError::InvalidArgument(format!("a {bytes}-byte output does not fit")))?;
                let dev = self.stream.alloc_zeros::<u8>(len.max(1)).map_err(|e| drv(&format!("cannot allocate a {len}-byte output"), e))?;
                let fresh = matches!(arg, CudaArg::Fresh(_));
                Slot::Buf { dev, len, read_back: !fresh, offset: 0, fresh }
            }
            CudaArg::Read(bytes) | CudaArg::ReadWrite(bytes) | CudaArg::Guarded { init: bytes, .. } => {
                let offset = match *arg {
                    CudaArg::Guarded { offset, .. } if offset < bytes.len() => offset,
                    CudaArg::Guarded { offset, .. } => {
                        return Err(CudaError::InvalidArgument(format!("guard offset {offset} is outside a {}-byte buffer", bytes.len())))
                    }
                    _ => 0,
                };
                let dev = if bytes.is_empty() { self.stream.alloc_zeros::<u8>(1) } else { self.stream.clone_htod(bytes) }
                    .map_err(|e| drv(&format!("cannot upload a {}-byte buffer", bytes.len()), e))?;
                self.link.counters.up(bytes.len() as u64);
                Slot::Buf { dev, len: bytes.len(), read_back: !matches!(arg, CudaArg::Read(_)), offset, fresh: false }
            }
            CudaArg::U32(v) => Slot::U32(v),
            CudaArg::I32(v) => Slot::I32(v),
            CudaArg::F32(v) => Slot::F32(v),
        })
    }

    /// Enqueues the kernel on `slots` (guarded buffers passed as views starting `offset` bytes
    /// in); with timing on, between two events whose interval it records once the kernel ends.
    fn launch_slots(
        &self,
        kernel: &CudaKernel,
        slots: &[Slot<'_>],
        cfg: LaunchConfig,
        drv: &impl Fn(&str, DriverError) -> CudaError,
    ) -> Result<(), CudaError> {
        let views: Vec<Option<cudarc::driver::CudaView<'_, u8>>> = slots
            .iter()
            .map(|s| match s {
                Slot::Buf { dev, offset, .. } if *offset > 0 => Some(dev.slice(*offset..)),
                _ => None,
            })
            .collect();
        let mut builder = self.stream.launch_builder(&kernel.function);
        for (slot, view) in slots.iter().zip(&views) {
            match (slot, view) {
                (_, Some(v)) => builder.arg(v),
                (Slot::Buf { dev, .. }, None) => builder.arg(dev),
                (Slot::Borrowed(dev), None) => builder.arg(*dev),
                (Slot::U32(v), None) => builder.arg(v),
                (Slot::I32(v), None) => builder.arg(v),
                (Slot::F32(v), None) => builder.arg(v),
            };
        }
        let event = |what: &str| {
            self.stream
                .record_event(Some(cusys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| drv(&format!("cannot record the {what} event"), e))
        };
        let start = if self.timing.load(Ordering::Relaxed) { Some(event("start")?) } else { None };
        // SAFETY: the arguments were checked against the kernel's PTX parameter list where it
        // could be parsed (count and sizes); buffers and scalars live in `slots`, which the caller
        // keeps untouched until the stream has been synchronised.
        unsafe { builder.launch(cfg) }.map_err(|e| drv("cuLaunchKernel failed", e))?;
        if let Some(start) = start {
            let end = event("end")?;
            // `elapsed_ms` synchronises both events without a limit: the kernel ends first.
            self.link.waits.wait(&self.stream, &format!("kernel `{}`", kernel.entry))?;
            let ms = start.elapsed_ms(&end).map_err(|e| drv("kernel execution failed", e))?;
            self.last_kernel_ns.store((f64::from(ms) * 1e6) as u64, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// One kernel argument on the device (see [`CudaEngine::launch`]): a buffer this launch made
/// (`fresh`: a new output to keep on the device), one a device tensor owns, or a scalar.
enum Slot<'a> {
    Buf { dev: CudaSlice<u8>, len: usize, read_back: bool, offset: usize, fresh: bool },
    Borrowed(&'a CudaSlice<u8>),
    U32(u32),
    I32(i32),
    F32(f32),
}

impl CudaEngine {
    /// Tensor data moved between the host and this engine's device so far (explicit moves and
    /// host-tensor calls' uploads and read-backs).
    pub fn transfers(&self) -> Transfers {
        self.link().counters.snapshot()
    }
}

/// Checks `args` against the kernel's PTX parameter list: the count, each size, and float
/// against integer; an [`CudaError::InvalidArgument`] naming the argument and listing the
/// parameters otherwise.
pub(super) fn check_args_against_params(entry: &str, params: &[PtxParam], args: &[CudaArg<'_>]) -> Result<(), CudaError> {
    let describe = || params.iter().map(|p| format!("{} ({} bytes)", p.ty, p.bytes)).collect::<Vec<_>>().join(", ");
    if params.len() != args.len() {
        return Err(CudaError::InvalidArgument(format!(
            "kernel `{entry}` takes {} parameter(s) [{}] but {} argument(s) were given",
            params.len(),
            describe(),
            args.len()
        )));
    }
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let (want, what) = match a {
            CudaArg::Read(_)
            | CudaArg::ReadWrite(_)
            | CudaArg::Guarded { .. }
            | CudaArg::Device(_)
            | CudaArg::Fresh(_)
            | CudaArg::Zeroed(_) => (8, "a buffer (device pointer)"),
            CudaArg::U32(_) | CudaArg::I32(_) | CudaArg::F32(_) => (4, "a 4-byte scalar"),
        };
        let float_mismatch = match a {
            CudaArg::F32(_) => p.ty.starts_with(".u") || p.ty.starts_with(".s"),
            // A buffer is a device pointer: an integer-typed 64-bit parameter.
            CudaArg::Read(_)
            | CudaArg::ReadWrite(_)
            | CudaArg::Guarded { .. }
            | CudaArg::Device(_)
            | CudaArg::Fresh(_)
            | CudaArg::Zeroed(_)
            | CudaArg::U32(_)
            | CudaArg::I32(_) => p.ty.starts_with(".f"),
        };
        if p.bytes != want || float_mismatch {
            return Err(CudaError::InvalidArgument(format!(
                "argument {i} of kernel `{entry}` is {what} ({a:?}) but the parameter is {} ({} bytes); \
                 parameters: [{}]",
                p.ty,
                p.bytes,
                describe()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::kernel::ptx_entry_params;
    use super::super::kernel::tests::SAMPLE_PTX;
    use super::*;

    #[test]
    fn launch_arguments_are_checked_against_the_ptx_parameters() {
        let add = ptx_entry_params(SAMPLE_PTX, "add").expect("add is declared");
        let buf = [0u8; 4];
        let good =
            [CudaArg::Read(&buf), CudaArg::Read(&buf), CudaArg::ReadWrite(&buf), CudaArg::F32(1.0), CudaArg::I32(-1), CudaArg::U32(4)];
        check_args_against_params("add", &add, &good).unwrap();
        let err = check_args_against_params("add", &add, &good[..5]).unwrap_err();
        assert!(matches!(&err, CudaError::InvalidArgument(m) if m.contains("takes 6 parameter")), "{err}");
        let mut swapped = good;
        swapped.swap(2, 3);
        assert!(matches!(check_args_against_params("add", &add, &swapped), Err(CudaError::InvalidArgument(_))));
        let mut int_for_float = good;
        int_for_float[3] = CudaArg::U32(1);
        assert!(matches!(check_args_against_params("add", &add, &int_for_float), Err(CudaError::InvalidArgument(_))));
        let f64_param = [PtxParam { ty: ".f64".to_string(), bytes: 8 }];
        assert!(check_args_against_params("d", &f64_param, &[CudaArg::Read(&buf)]).is_err());
    }
}
