//! Conformance against the reference: engine-generated cases, comparison by tolerance class,
//! guard bands, failure reports, receipts. (Being built: issue 4.)

use crate::decl::OpDecl;

/// The test `#[op]` generates for every declaration: conformance of each kernel on each
/// available backend. (Being built: issue 4.)
pub fn generated_test(decl: &'static OpDecl) {
    let _ = decl;
}
