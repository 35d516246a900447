#![warn(missing_docs)]
//! Floor 3, verification: conformance of kernels against the reference (ending in receipts),
//! gradcheck of declared backwards, sharing (cards and the content-addressed store), and the
//! records reports are rendered from (with the catalog's entries). It
//! depends on `op-core`, and on `op-train` where gradcheck differentiates a composite op on the
//! tape (the tape never imports verification); never on a backend crate, so editing a
//! verification file rebuilds no backend.
//!
//! A crate of op-runtime (users depend on the facade, `op-runtime`); cargo enforces the floors.
//! Items marked `#[doc(hidden)]` are shared with the floors above and are not part of the API.

// Unit tests run on the built-ins: linking op-builtins installs them into every default registry.
#[cfg(test)]
use op_builtins as _;

pub mod conformance;
pub mod gradcheck;
pub mod isolate;
pub mod record;
pub mod sharing;
