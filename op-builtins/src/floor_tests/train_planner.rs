//! Unit tests of `op-train/src/tape/planner.rs` that need a built-in op (moved up to the floor that has them).

use op_contract::contract::DType;
use op_core::error::DispatchError;
use op_core::op::RegisteredOp;
use op_train::tape::planner::*;

fn conv1d() -> RegisteredOp {
    RegisteredOp::load(&crate::conv1d::DECL).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn infers_output_shapes_without_data() {
    let op = conv1d();
    let r = infer(&op, &[(DType::f32, &[1 << 40]), (DType::f32, &[5])], &[], None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.outputs, vec![(DType::f32, vec![(1 << 40) - 4])]);
    let r = infer(&op, &[(DType::f64, &[10]), (DType::f64, &[3])], &[], Some(DType::f64)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.outputs, vec![(DType::f64, vec![8])]);
}

#[test]
fn refuses_like_plan_validate_naming_the_op() {
    let op = conv1d();
    let e = infer(&op, &[(DType::f32, &[3]), (DType::f32, &[5])], &[], None).unwrap_err();
    assert!(matches!(&e, DispatchError::Constraint { op, constraint, .. } if op == "builtin/conv1d@1" && constraint == "m <= n"), "{e}");
    let e = infer(&op, &[(DType::f64, &[3]), (DType::f32, &[2])], &[], None).unwrap_err();
    assert!(matches!(&e, DispatchError::InputDType { input, .. } if input == "x"), "{e}");
    let e = infer(&op, &[(DType::f32, &[3])], &[], None).unwrap_err();
    assert!(matches!(e, DispatchError::InputCount { expected: 2, found: 1, .. }));
    let e = infer(&op, &[(DType::f32, &[3, 1]), (DType::f32, &[2])], &[], None).unwrap_err();
    assert!(matches!(e, DispatchError::InputRank { .. }));
}

#[test]
fn sizes_and_budgets() {
    assert_eq!(buffer_bytes(DType::f32, &[1000]), 4000);
    assert_eq!(buffer_bytes(DType::f64, &[usize::MAX, 2]), usize::MAX);
    assert_eq!(human_bytes(512), "512 B");
    assert_eq!(human_bytes(3 << 20), "3.0 MiB");
    let e = |v: &str, b: usize| PlanEntry {
        value: v.into(),
        op: "o@1".into(),
        output: "out".into(),
        kind: BufferKind::Forward,
        dtype: DType::u8,
        shape: vec![b],
        bytes: b,
    };
    let p = MemoryPlan::new(vec![e("%1", 10), e("%2", 30), e("%3", 20)], Some(50));
    assert_eq!(p.total_bytes, 60);
    assert!(!p.fits());
    assert_eq!(p.largest(2).iter().map(|e| e.value.as_str()).collect::<Vec<_>>(), ["%2", "%3"]);
    assert!(MemoryPlan::new(vec![e("%1", usize::MAX), e("%2", 1)], None).fits());
}
