//! A unit test of `op-verify/src/record/errors.rs` that needs a built-in op.

use op_core::kind::BackendKind;
use op_verify::record::measure;

#[test]
fn a_correct_kernel_measures_at_most_one_ulp() {
    let reg = op_core::registry::Registry::new();
    let h = reg.register(&crate::add::DECL).expect("registers");
    let f32_add = h.instances().into_iter().find(|i| i.op().binding_text() == "T = f32").expect("an f32 instance");
    let exact = measure(&f32_add, BackendKind::Cpu);
    assert!(!exact.is_empty());
    assert!(exact.iter().all(|p| p.ulp <= 1.0), "{exact:?}");
}
