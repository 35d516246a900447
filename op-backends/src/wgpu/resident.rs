//! Device-resident tensors on wgpu: [`WgpuBuffer`] (a tensor's storage in a buffer of one
//! engine's device), the engine's transfer counters ([`Transfers`]), and the explicit moves:
//! `Tensor::to_device(&engine)` uploads through `Device` for `WgpuEngine`,
//! `Tensor::to_host()` reads back through [`DeviceStorage`] for [`WgpuBuffer`]. Each is one
//! counted transfer (the first is implemented beside the engine); nothing else moves tensor
//! data between host and device except the host path's own uploads and readbacks (also
//! counted).

use super::pool::BufferPool;
use super::wait::Waits;
use crate::transfers::Counters;
pub use crate::transfers::Transfers;
use op_core::device::{DeviceId, DeviceStorage};
use op_core::error::TensorError;
use op_core::kind::BackendKind;
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

/// What a buffer needs of its engine to be read back, recognised and recycled: the engine's
/// identity, device, queue, counters, buffer pool and wait limit.
#[derive(Debug)]
pub struct Link {
    #[doc(hidden)]
    pub id: u64,
    #[doc(hidden)]
    pub device: wgpu::Device,
    #[doc(hidden)]
    pub queue: wgpu::Queue,
    #[doc(hidden)]
    pub counters: Counters,
    #[doc(hidden)]
    pub pool: BufferPool,
    #[doc(hidden)]
    pub waits: Waits,
}

impl Link {
    #[doc(hidden)]
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Link {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Link {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            device: device.clone(),
            queue: queue.clone(),
            counters: Counters::default(),
            pool: BufferPool::default(),
            waits: Waits::default(),
        }
    }
    #[doc(hidden)]
    pub fn device_id(&self) -> DeviceId {
        DeviceId { backend: BackendKind::Wgpu, instance: self.id }
    }
}

/// A tensor's storage on one engine's device: a storage buffer (usable as a kernel's input or
/// output and as a copy source/destination) of at least `bytes` bytes, padded to 4. Dropped,
/// its buffer returns to the engine's pool for the next device tensor of its size (the buffer
/// is not handed out, so nothing else can hold it then).
#[derive(Debug)]
pub struct WgpuBuffer {
    buffer: wgpu::Buffer,
    bytes: u64,
    link: Arc<Link>,
}

impl WgpuBuffer {
    #[doc(hidden)]
    pub fn new(buffer: wgpu::Buffer, bytes: u64, link: Arc<Link>) -> WgpuBuffer {
        WgpuBuffer { buffer, bytes, link }
    }
    /// The device buffer.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }
    /// The id of the engine whose device holds the buffer (`WgpuEngine::id`).
    pub fn engine_id(&self) -> u64 {
        self.link.id
    }
}

impl Drop for WgpuBuffer {
    fn drop(&mut self) {
        self.link.pool.give(self.buffer.clone());
    }
}

/// Usage of every buffer a device tensor may own.
pub const TENSOR_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC).union(wgpu::BufferUsages::COPY_DST);

/// A buffer's size for `bytes` of data: padded to 4, at least 4 (wgpu binds no empty buffer).
pub fn padded(bytes: u64) -> u64 {
    bytes.div_ceil(4).max(1) * 4
}

impl DeviceStorage for WgpuBuffer {
    fn device(&self) -> DeviceId {
        self.link.device_id()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn read(&self) -> Result<Vec<u8>, TensorError> {
        let fail = |reason: String| TensorError::Transfer { device: self.link.device_id().to_string(), reason };
        let len = usize::try_from(self.bytes).map_err(|_| fail("the buffer does not fit the host's address space".into()))?;
        let size = self.buffer.size();
        let link = &self.link;
        // A hung device would run the copy only after the launch that never ends.
        link.waits.check(&link.device).map_err(|e| fail(e.to_string()))?;
        let staging = link.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("op-runtime to_host"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = link.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        encoder.copy_buffer_to_buffer(&self.buffer, 0, &staging, 0, size);
        let submission = link.queue.submit(Some(encoder.finish()));
        let (tx, rx) = mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        let what = format!("a readback of {} bytes (with the launches queued before it)", self.bytes);
        link.waits.wait(&link.device, submission, 0, &what).map_err(|e| fail(e.to_string()))?;
        // The callback may run on another thread polling the device: wait for it, bounded.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match rx.recv_timeout(std::time::Duration::from_millis(2)) {
                Ok(Ok(())) => break,
                Ok(Err(e)) => return Err(fail(format!("map_async: {e}"))),
                Err(_) if std::time::Instant::now() >= deadline => return Err(fail("the map callback did not run".into())),
                Err(_) => {
                    let _ = link.device.poll(wgpu::PollType::Poll);
                }
            }
        }
        let bytes = {
            let view = staging.get_mapped_range(..).map_err(|e| fail(e.to_string()))?;
            view[..len].to_vec()
        };
        staging.unmap();
        link.counters.down(self.bytes);
        Ok(bytes)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
