//! A unit test of `op-verify/src/gradcheck` that needs a built-in op.

use op_core::decl::OpDecl;
use op_verify::gradcheck::*;

#[test]
fn an_unloadable_declaration_is_a_typed_error() {
    let n = &crate::neg::DECL;
    let bad: &'static OpDecl = Box::leak(Box::new(OpDecl {
        rust_name: n.rust_name,
        site: n.site,
        module: n.module,
        contract_json: "{",
        body_tokens: n.body_tokens,
        hash: n.hash,
        description: n.description,
        kernels: n.kernels,
        reference: n.reference,
        reference_f64: n.reference_f64,
        cpu: n.cpu,
        vjp: n.vjp,
        vjp_f64: n.vjp_f64,
        vjp_cpu: n.vjp_cpu,
        jvp: n.jvp,
        jvp_f64: n.jvp_f64,
        composite: n.composite,
        members: n.members,
    }));
    assert!(matches!(crate::gradcheck(bad), Err(GradcheckError::Load(_))));
}
