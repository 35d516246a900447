//! Compiled pipelines: [`Pipeline`] (a compute pipeline with its bind-group layout and the
//! bind groups of calls on device tensors), the engine's cache of them by key and entry point,
//! and their compilation, inside error scopes.

use super::super::bind_cache::BindCache;
use super::{lock, Slot, SlotKind, WgpuEngine, WgpuError};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A compiled compute pipeline with its bind-group layout, as `prepare` built it. Held by the
/// backend's prepared kernel, so a call finds it without a lookup.
pub struct Pipeline {
    pub(super) pipeline: wgpu::ComputePipeline,
    pub(super) layout: wgpu::BindGroupLayout,
    pub(super) kinds: Vec<SlotKind>,
    pub(super) source: String,
    /// Bind groups of calls on device tensors, by the buffers they bind.
    pub(super) binds: BindCache,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline").field("kinds", &self.kinds).finish_non_exhaustive()
    }
}

/// Pipelines by key, then by entry point (a Vec: kernels have one or a few entries, and this
/// avoids allocating a `String` per lookup).
impl Pipeline {
    /// `Ok` where `slots` have the kinds the pipeline was prepared with, one per binding; else
    /// the `KeyMismatch` naming both.
    pub(super) fn check_slots(&self, slots: &[Slot<'_>]) -> Result<(), WgpuError> {
        if slots.len() == self.kinds.len() && slots.iter().zip(&self.kinds).all(|(s, k)| s.kind() == *k) {
            return Ok(());
        }
        let kinds: Vec<SlotKind> = slots.iter().map(Slot::kind).collect();
        Err(WgpuError::KeyMismatch { entry: String::new(), detail: format!("prepared with slots {:?}, called with {kinds:?}", self.kinds) })
    }
}

pub(super) type PipelineCache = HashMap<[u8; 32], Vec<(String, Arc<Pipeline>)>>;

impl WgpuEngine {
    /// Builds (or finds in the cache) the pipeline for `(key, entry)` with this slot layout,
    /// without running anything: compilation and validation errors surface here. The caller
    /// keeps the pipeline and launches it with [`WgpuEngine::run_pipeline`].
    pub fn prepare(&self, key: [u8; 32], source: &str, entry: &str, kinds: &[SlotKind]) -> Result<Arc<Pipeline>, WgpuError> {
        self.check_lost()?;
        self.pipeline(key, source, entry, kinds)
    }

    /// How many pipelines have been compiled so far (cache misses that built successfully).
    pub fn pipelines_built(&self) -> usize {
        self.built.load(Ordering::Relaxed)
    }

    /// Finds or builds the pipeline for `(key, entry)`.
    pub(super) fn pipeline(&self, key: [u8; 32], source: &str, entry: &str, kinds: &[SlotKind]) -> Result<Arc<Pipeline>, WgpuError> {
        let check = |p: &Arc<Pipeline>| -> Result<Arc<Pipeline>, WgpuError> {
            if p.kinds != kinds {
                return Err(WgpuError::KeyMismatch {
                    entry: entry.to_string(),
                    detail: format!("cached with slots {:?}, called with {:?}", p.kinds, kinds),
                });
            }
            if p.source != source {
                return Err(WgpuError::KeyMismatch { entry: entry.to_string(), detail: "cached with a different WGSL source".to_string() });
            }
            Ok(Arc::clone(p))
        };
        if let Some(entries) = lock(&self.pipelines).get(&key) {
            if let Some((_, p)) = entries.iter().find(|(e, _)| e == entry) {
                return check(p);
            }
        }
        // Built outside the lock; a concurrent build of the same key keeps the first insert.
        let built = Arc::new(self.build(source, entry, kinds)?);
        self.built.fetch_add(1, Ordering::Relaxed);
        let mut cache = lock(&self.pipelines);
        let entries = cache.entry(key).or_default();
        if let Some((_, p)) = entries.iter().find(|(e, _)| e == entry) {
            return check(p);
        }
        entries.push((entry.to_string(), Arc::clone(&built)));
        Ok(built)
    }

    /// Compiles a pipeline (uncached, uncounted: [`WgpuEngine::pipelines_built`] counts the
    /// cache's builds).
    pub(super) fn build(&self, source: &str, entry: &str, kinds: &[SlotKind]) -> Result<Pipeline, WgpuError> {
        let count = kinds.iter().filter(|k| **k != SlotKind::Uniform).count() as u64;
        let max = u64::from(self.limits.max_storage_buffers_per_shader_stage);
        if count > max {
            return Err(WgpuError::TooLarge { what: "storage buffer slots".into(), requested: count, limit: max });
        }
        let count = kinds.len() as u64 - count;
        let max = u64::from(self.limits.max_uniform_buffers_per_shader_stage);
        if count > max {
            return Err(WgpuError::TooLarge { what: "uniform buffer slots".into(), requested: count, limit: max });
        }
        let module = self.scoped("shader module", || {
            self.device
                .create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(entry), source: wgpu::ShaderSource::Wgsl(source.into()) })
        })?;
        let (layout, pipeline) = self.scoped("compute pipeline", || {
            let entries: Vec<wgpu::BindGroupLayoutEntry> = kinds
                .iter()
                .enumerate()
                .map(|(i, k)| wgpu::BindGroupLayoutEntry {
                    binding: i as u32,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: match k {
                            SlotKind::Read => wgpu::BufferBindingType::Storage { read_only: true },
                            SlotKind::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
                            SlotKind::Uniform => wgpu::BufferBindingType::Uniform,
                        },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                })
                .collect();
            let layout = self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(entry), entries: &entries });
            let pipeline_layout = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(entry),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
            let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            });
            (layout, pipeline)
        })?;
        Ok(Pipeline { pipeline, layout, kinds: kinds.to_vec(), source: source.to_string(), binds: BindCache::default() })
    }
}
