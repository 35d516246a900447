#![warn(missing_docs)]
//! Floor 0, the core: everything a call needs and nothing above it. Backend kinds and device
//! profiles, host tensors, validation plans, the op description `#[op]` generates, the loaded
//! op, the one shim runner, the registry with dispatch and batching, the typed backend seam,
//! the graph-builder seam composite backwards are written against, and the records of what
//! ran (provenance, receipts, the keys and trust list that sign and judge receipts), and the
//! crash- and symlink-safe file primitives every cache and store writes through. Depends on
//! no other floor: what a default registry holds (backends, built-ins) reaches it through the
//! distributed slices of `registry::defaults`.
//!
//! A crate of op-runtime (users depend on the facade, `op-runtime`); cargo enforces the floors.
//! Items marked `#[doc(hidden)]` are shared with the floors above and are not part of the API.

pub mod backend;
pub mod broadcast;
pub mod catalog;
pub mod decl;
pub mod device;
pub mod error;
pub mod files;
pub mod generated;
pub mod graph;
pub mod hostmem;
pub mod kind;
pub mod limits;
pub mod nonfinite;
pub mod op;
pub mod placement;
pub mod plan;
pub mod process;
pub mod provenance;
pub mod real;
pub mod receipt;
pub mod registry;
pub mod require;
pub mod shim;
pub mod tensor;
pub mod trust;
pub mod vjp_op;
