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
//! linked into the binary) and [`report`] (the records `cargo op report` renders). Internally the
//! crate is built in floors, each importing only those below it (`docs/ARCHITECTURE.md`):
//! core, backends, train, verify, builtins.

extern crate self as op_runtime;

pub use op_macros::op;

mod backends;
pub mod builtins;
mod core;
pub mod testing;
pub mod train;
mod verify;

// What every user touches, at the root (candle's convention); the rest in the modules below,
// each named after what a user does with it.
pub use crate::builtins::{gradcheck, register, registry};
pub use crate::core::decl::OpDecl;
pub use crate::core::error::{
    BackendError, DispatchError, KernelCompilationError, KernelFallbackExhaustedError, KernelRegistrationError, TensorError,
};
pub use crate::core::kind::BackendKind;
pub use crate::core::op::{OpSource, RegisteredOp};
pub use crate::core::real::Real;
pub use crate::core::registry::batch::{BatchError, BatchOutcome};
pub use crate::core::registry::dispatch::{CallOptions, Outcome};
pub use crate::core::registry::{OpHandle, Registry, Rejection, Stats};
pub use crate::core::tensor::{Data, Element, ParamValue, Scalar, Shape, Tensor};
pub use crate::train::tape::{Tape, Var};
pub use crate::verify::conformance::{conform, conform_all};
/// The 16-bit float types (from `half`), for `f16`/`bf16` tensors and kernels.
pub use half::{bf16, f16};
/// The span-free contract an `#[op]` declaration compiles to (from `op-contract`): its
/// signature, category, tolerance, backward form and kernels.
pub use op_contract::contract;
pub use op_contract::contract::{Contract, DType, KernelLang};

/// The names most programs use, for `use op_runtime::prelude::*`.
pub mod prelude {
    pub use crate::{
        bf16, conform, f16, gradcheck, op, register, registry, BackendKind, CallOptions, DType, OpHandle, Real, Scalar, Tape, Tensor,
    };
}

/// Conformance: every kernel of an op against its reference on engine-generated cases, ending
/// in a receipt; the failure classes and reports when a kernel disagrees.
pub mod conformance {
    pub use crate::verify::conformance::{
        accum_bound, accum_margin, check_case, conform, conform_all, corpus, AccumScale, Case, CaseShape, Class, ConformanceFailure,
        Corpus, Death, Defect, Fault, Flaky, Isolation, Mismatch, OutOfBounds, Pattern, Report, RunLimits,
    };
}

/// Gradcheck: an op's declared backward against central differences of its reference in `f64`,
/// with kink checks and a negative control.
pub mod gradcheck {
    pub use crate::builtins::gradcheck;
    pub use crate::verify::gradcheck::{
        gradcheck_with, BackwardForm, ControlOutcome, Corruption, DrawRange, GradcheckError, GradcheckOptions, GradcheckReport, Locus,
        Narrowed, ProbePoint,
    };
}

/// The graph a composite backward is written against (`backward = composite(builder)`).
pub mod graph {
    pub use crate::core::decl::CompositeFn;
    pub use crate::core::graph::{Graph, GraphError, Var};
}

/// The catalog: every op description linked into this binary (each `#[op]` adds its own), and
/// what a listing shows of each, without registering any.
pub mod catalog {
    pub use crate::core::catalog::decls;
    pub use crate::verify::record::{CatalogEntry, KernelInfo};

    /// The catalog entry of every op linked into this binary ([`decls`]), each loaded, not
    /// registered, the built-ins labelled as such; sorted by id then identity. An op that does
    /// not load (a tampered build) is left out and returned with its error.
    pub fn entries() -> (Vec<CatalogEntry>, Vec<crate::KernelRegistrationError>) {
        crate::verify::record::entries(&crate::builtins::decls())
    }
}

/// Records for reports: what the tests `#[op]` generates write when [`report::REPORT_DIR_ENV`]
/// names a directory (`cargo op report` sets it), and what a report is rendered from.
pub mod report {
    pub use crate::verify::record::{
        dir_from_env, measure, record_name, write_record, BackendRecord, ConformanceRecord, ControlRecord, DefectRecord, ErrorPoint,
        GradcheckRecord, Verdict, CATALOG_DIR, CONFORMANCE_DIR, GRADCHECK_DIR, MAX_ERROR_CASES, RECORD_FORMAT, REPORT_DIR_ENV,
    };
}

/// Records of what ran: each call's provenance (op, content hash, backend, device, receipt).
pub mod provenance {
    pub use crate::core::provenance::{ConstantEntry, ProvenanceEntry, ProvenanceRecord};
}

/// Receipts: what conformance mints for a kernel on an exact device, and their signatures.
pub mod receipt {
    pub use crate::core::receipt::{engine_version, Attestation, Receipt, ReceiptError, ReceiptSignature, RECEIPT_FORMAT};
}

/// Signing keys and the trust list that says whose receipts count.
pub mod trust {
    pub use crate::core::trust::{KeyError, PublicKey, SigningKey, TrustList, SIGNING_KEY_HEADER};
}

/// Sharing: op cards (trust per declared kernel and device) and the content-addressed store.
pub mod sharing {
    pub use crate::verify::sharing::{
        blob_hash, public_bar, CpuEntry, HeaderEntry, IndexEntry, IndexHeader, IndexKernel, KernelEntry, KernelTrust, LoadedCard,
        LoadedKernel, LocalDevices, Missing, OpCard, PublishedId, RepairReport, SharingError, Store, Trust, UnreadableBlob, CARD_FORMAT,
        INDEX_FORMAT,
    };
}

/// Devices and where tensors live: exact device profiles, placements, and the seam a device
/// implements to take tensors (`Tensor::to_device`).
pub mod device {
    pub use crate::core::device::{fingerprint, machine_fingerprint, DeviceProfile};
    pub use crate::core::placement::{DeviceId, DeviceStorage, Placement};
    pub use crate::core::tensor::Device;
}

/// The typed seam a backend implements, and the two host backends (a registry is built from a
/// list of backends: `Registry::new`).
pub mod backend {
    pub use crate::backends::{all, CpuBackend, ReferenceBackend};
    pub use crate::core::backend::{Backend, ExecRequest, Prepared};
    pub use crate::core::error::BackendError;
}

/// The toolkit `cpu = path` kernels are written with: chunks that do not depend on the thread
/// count ([`cpu::par`]), portable vectors with the instruction set chosen at run time
/// ([`cpu::simd`] for f32, [`cpu::simd64`] for f64, [`with_isa!`]), vector `exp`/`ln`/`tanh` at
/// f32 and f64 ([`cpu::math`]).
pub mod cpu {
    pub use crate::backends::cpu::{hostmem, math, par, simd, simd64, CpuBackend};
}

/// The wgpu (WGSL) backend: its engine on one adapter, device tensors, the buffer pool and the
/// transfer counters. wgpu's own types appear only through [`wgpu::WgpuEngine::raw`].
#[cfg(feature = "wgpu")]
pub mod wgpu {
    pub use crate::backends::transfers::Transfers;
    pub use crate::backends::wgpu::{
        BindStats, Geometry, Pipeline, PoolStats, Slot, SlotKind, WgpuBackend, WgpuBuffer, WgpuEngine, WgpuError, WgpuRaw,
        DEFAULT_POOL_LIMIT,
    };
}

/// The CUDA backend (cudarc and NVRTC, loaded at run time): its engine on one device, device
/// tensors, compiled kernels and their launches, the verified PTX disk cache.
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use crate::backends::cuda::{
        choose_ptx_arch, default_ptx_cache_dir, ptx_cache_key, publish_atomically, resolve_ptx_cache_dir, CudaArg, CudaBackend, CudaBuffer,
        CudaEngine, CudaError, CudaGrid, CudaKernel, CACHE_DIR_ENV, NVIDIA_VENDOR_ID,
    };
    pub use crate::backends::transfers::Transfers;
}

/// Items generated code refers to. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::__op_catalog as op_catalog;
    pub use crate::__op_tests as op_tests;
    pub use crate::core::catalog::CATALOG;
    pub use crate::core::decl::{Call, CompositeFn, DeclMember, KernelSource, Launch, OpDecl, ShimFn};
    pub use crate::core::error::ShimError;
    pub use crate::core::generated::{
        arg, call0, call1, call10, call11, call12, call2, call3, call4, call5, call6, call7, call8, call9, Dest, ShimResult, Src, DECL_BASE,
    };
    pub use crate::core::real::Real;
    pub use crate::core::tensor::ParamValue;
    pub use crate::testing::catalog_test;
    pub use crate::testing::{conformance_test, gradcheck_test};
    pub use ::core::option::Option::{None, Some};
    pub use half::{bf16, f16};
    pub use linkme;
    pub use op_contract::contract::DType;
}
