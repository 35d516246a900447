//! Conformance receipts: minted on success, bound to content hash and device profile.
//! (Being built: issue 4.)
