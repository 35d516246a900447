#![warn(missing_docs)]
//! Floor 2, verification: conformance of kernels against the reference (ending in receipts),
//! gradcheck of declared backwards, sharing (cards and the content-addressed store), and the
//! records reports are rendered from (with the catalog's entries). It
//! only imports down: `core` and `backends`, and `train` where gradcheck differentiates a
//! composite op on the tape (the tape never imports verification).

pub mod conformance;
pub mod gradcheck;
pub mod isolate;
pub mod record;
pub mod sharing;
