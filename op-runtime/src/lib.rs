#![warn(missing_docs)]
//! Op runtime: declare an op with [`op`], register it, call it through one dispatch path on
//! the reference, CPU, wgpu or CUDA backends, conform its kernels, gradcheck its backward and
//! train through it. Users depend on this crate alone.
//!
//! ```
//! use op_runtime::{op, Real, Scalar, Tensor};
//!
//! /// Clamp every element to `[lo, hi]`.
//! #[op(name = "user/doc/clamp", version = 1, signature(x: f32[n], lo: f32, hi: f32) -> f32[n],
//!      category = selection, tolerance = exact, backward = none)]
//! pub fn clamp<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {
//!     x.iter().map(|v| if *v < lo { lo } else if *v > hi { hi } else { *v }).collect()
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let clamp = op_runtime::register(&clamp::DECL)?;
//! let x = Tensor::vector(vec![-2.0f32, 0.5, 3.0]);
//! let out = clamp.call(&[&x], &[Scalar::F32(0.0), Scalar::F32(1.0)])?;
//! assert_eq!(out.outputs[0].as_slice::<f32>(), Some(&[0.0f32, 0.5, 1.0][..]));
//! println!("ran on {}", out.provenance.backend);
//! # Ok(())
//! # }
//! ```
//!
//! What a program uses sits at the root ([`register`], [`Tensor`], [`OpHandle::call`],
//! [`CallOptions`], [`Tape`], [`conform`], [`gradcheck()`], ...) and in [`prelude`]; the rest is
//! in modules named after what a user does: [`conformance`], [`gradcheck`](mod@gradcheck),
//! [`train`], [`graph`] (composite backwards), [`sharing`], [`receipt`], [`trust`],
//! [`provenance`], [`device`], [`backend`] (the seam a backend implements), [`cpu`] (the toolkit
//! of `cpu` kernels), `wgpu` and `cuda` (the GPU engines, by feature), [`builtins`] (the built-in
//! ops), [`testing`] (asserting a deliberately broken fixture's rejection), [`catalog`] (every op
//! linked into the binary) and [`report`] (the records `cargo op report` renders). This crate is a
//! facade over one crate per floor, each depending only on those below it, so cargo enforces the
//! layering (`docs/ARCHITECTURE.md`): `op-core`, `op-backends`, `op-train`, `op-verify`,
//! `op-builtins`.
//!
//! The [`guide`] is the documentation beyond the README, one chapter per module, each run as
//! doctests: declaring ops, tolerances and categories, composing, devices, differentiation,
//! interop, verification and reports, identity, trust and sharing, limitations.

/// Runs a body with the portable vector type of the best instruction set found at run time (the
/// `cpu` toolkit's dispatch; see [`cpu::simd`]).
pub use op_backends::with_isa;
pub use op_macros::op;

/// The built-in ops (each op's module holds its `DECL`; its function is the reference), the list
/// of their declarations and what installs them into a registry.
pub mod builtins {
    pub use op_builtins::*;
}

/// Test support: the tests `#[op]` generates for every declaration, and the helpers a fixture's
/// own tests call to assert a rejection (fixtures declaring `generated_tests = false`).
pub mod testing {
    pub use op_builtins::testing::*;
}

/// Training: the tape (reverse mode, forward mode, second order, batches through it), its
/// errors and memory planning, and the optimisers.
pub mod train {
    pub use op_train::*;
}

// What every user touches, at the root (candle's convention); the rest in the modules below,
// each named after what a user does with it.
/// The 16-bit float types (from `half`), for `f16`/`bf16` tensors and kernels.
pub use half::{bf16, f16};
pub use op_builtins::gradcheck;
/// The span-free contract an `#[op]` declaration compiles to (from `op-contract`): its
/// signature, category, tolerance, backward form and kernels.
pub use op_contract::contract;
pub use op_contract::contract::{Contract, DType, KernelLang};
pub use op_core::decl::OpDecl;
/// The former name of [`RegistrationError`].
#[allow(deprecated)]
pub use op_core::error::KernelRegistrationError;
pub use op_core::error::{
    BackendError, Cause, DispatchError, KernelCompilationError, KernelFallbackExhaustedError, RegistrationError, TensorError,
};
pub use op_core::kind::BackendKind;
pub use op_core::op::{OpSource, RegisteredOp};
pub use op_core::real::Real;
pub use op_core::registry::batch::{BatchError, BatchOutcome};
pub use op_core::registry::defaults::{register, registry};
pub use op_core::registry::dispatch::{CallOptions, Outcome};
pub use op_core::registry::{OpHandle, Registry, Rejection, Stats};
pub use op_core::tensor::{Data, Element, ParamValue, Scalar, Shape, Tensor};
pub use op_train::tape::{Tape, Var};
pub use op_verify::conformance::{conform, conform_all};

/// The names most programs use, for `use op_runtime::prelude::*`.
pub mod prelude {
    pub use crate::{
        bf16, conform, f16, gradcheck, op, register, registry, BackendKind, CallOptions, DType, OpHandle, Real, Scalar, Tape, Tensor,
    };
}

/// Conformance: every kernel of an op against its reference on engine-generated cases, ending
/// in a receipt; the failure classes and reports when a kernel disagrees.
pub mod conformance {
    pub use op_verify::conformance::{
        accum_bound, accum_margin, carry_bound, check_case, conform, conform_all, corpus, AccumScale, Case, CaseShape, Class,
        ConformanceFailure, Corpus, Death, Defect, Fault, Flaky, Isolation, Mismatch, OutOfBounds, Pattern, Report, RunLimits,
    };
}

/// Gradcheck: an op's declared backward against central differences of its reference in `f64`,
/// with kink checks and a negative control.
pub mod gradcheck {
    pub use op_builtins::gradcheck;
    pub use op_verify::gradcheck::{
        gradcheck_with, BackwardForm, ControlOutcome, Corruption, DrawRange, GradcheckError, GradcheckOptions, GradcheckReport, Locus,
        Narrowed, ProbePoint, ReachRound,
    };
}

/// The graph a composite backward is written against (`backward = composite(builder)`).
pub mod graph {
    pub use op_core::decl::CompositeFn;
    pub use op_core::graph::{Graph, GraphError, Var};
}

/// The catalog: every op description linked into this binary (each `#[op]` adds its own), and
/// what a listing shows of each, without registering any.
pub mod catalog {
    pub use op_core::catalog::decls;
    pub use op_verify::record::{CatalogEntry, KernelInfo};

    /// The catalog entry of every op linked into this binary ([`decls`]), each loaded, not
    /// registered, the built-ins labelled as such; sorted by id then identity. An op that does
    /// not load (a tampered build) is left out and returned with its error.
    pub fn entries() -> (Vec<CatalogEntry>, Vec<crate::RegistrationError>) {
        op_verify::record::entries(&op_builtins::decls())
    }
}

/// Records for reports: what the tests `#[op]` generates write when [`report::REPORT_DIR_ENV`]
/// names a directory (`cargo op report` sets it), and what a report is rendered from.
pub mod report {
    pub use op_verify::record::{
        dir_from_env, measure, record_name, write_record, BackendRecord, ConformanceRecord, ControlRecord, DefectRecord, ErrorPoint,
        GradcheckRecord, Verdict, CATALOG_DIR, CONFORMANCE_DIR, GRADCHECK_DIR, MAX_ERROR_CASES, RECORD_FORMAT, REPORT_DIR_ENV,
    };
}

/// Records of what ran: each call's provenance (op, content hash, backend, device, receipt).
pub mod provenance {
    pub use op_core::provenance::{ConstantEntry, ProvenanceEntry, ProvenanceRecord};
}

/// Receipts: what conformance mints for a kernel on an exact device, and their signatures.
pub mod receipt {
    pub use op_core::receipt::{engine_version, Attestation, Receipt, ReceiptError, ReceiptSignature, RECEIPT_FORMAT};
}

/// Signing keys and the trust list that says whose receipts count.
pub mod trust {
    pub use op_core::trust::{KeyError, PublicKey, SigningKey, TrustList, SIGNING_KEY_HEADER};
}

/// Sharing: op cards (trust per declared kernel and device) and the content-addressed store.
pub mod sharing {
    pub use op_verify::sharing::{
        blob_hash, public_bar, CpuEntry, HeaderEntry, IndexEntry, IndexHeader, IndexKernel, KernelEntry, KernelTrust, LoadedCard,
        LoadedKernel, LocalDevices, Missing, OpCard, PublishedId, RepairReport, SharingError, Store, Trust, UnreadableBlob, CARD_FORMAT,
        INDEX_FORMAT,
    };
}

/// Devices and where tensors live: exact device profiles, placements, and the seam a device
/// implements to take tensors (`Tensor::to_device`).
pub mod device {
    pub use op_core::device::{fingerprint, machine_fingerprint, DeviceProfile};
    pub use op_core::device::{DeviceId, DeviceStorage, Placement};
    pub use op_core::tensor::Device;
}

/// The typed seam a backend implements, and the two host backends (a registry is built from a
/// list of backends: `Registry::new`).
pub mod backend {
    pub use op_backends::{all, CpuBackend, ReferenceBackend};
    pub use op_core::backend::{Backend, ExecRequest, Prepared};
    pub use op_core::error::{BackendError, Cause};
}

/// The toolkit `cpu = path` kernels are written with: chunks that do not depend on the thread
/// count ([`cpu::par`]), portable vectors with the instruction set chosen at run time
/// ([`cpu::simd`] for f32, [`cpu::simd64`] for f64, [`with_isa!`]), vector `exp`/`ln`/`tanh` at
/// f32 and f64 ([`cpu::math`]).
pub mod cpu {
    pub use op_backends::cpu::{hostmem, math, par, simd, simd64, CpuBackend};
}

/// The wgpu (WGSL) backend: its engine on one adapter, device tensors, the buffer pool and the
/// transfer counters. wgpu's own types appear only through [`wgpu::WgpuEngine::raw`].
#[cfg(feature = "wgpu")]
pub mod wgpu {
    pub use op_backends::transfers::Transfers;
    pub use op_backends::wgpu::{
        BindStats, Geometry, Pipeline, PoolStats, Slot, SlotKind, WgpuBackend, WgpuBuffer, WgpuEngine, WgpuError, WgpuRaw,
        DEFAULT_POOL_LIMIT,
    };
}

/// The CUDA backend (cudarc and NVRTC, loaded at run time): its engine on one device, device
/// tensors, compiled kernels and their launches, the verified PTX disk cache.
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use op_backends::cuda::{
        compile_without_device, default_ptx_cache_dir, CudaArg, CudaBackend, CudaBuffer, CudaEngine, CudaError, CudaGrid, CudaKernel,
        CACHE_DIR_ENV, NVIDIA_VENDOR_ID,
    };
    pub use op_backends::transfers::Transfers;
    /// Where NVRTC finds CUDA's half-precision headers (`OP_CUDA_INCLUDE`, `CUDA_PATH`, ...).
    pub use op_contract::cuda_headers;
}

#[cfg(test)]
mod size_tests;

pub mod guide;

/// Items generated code refers to. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use op_builtins::__private::*;
}
