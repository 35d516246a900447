//! The built-in `matmul` has a `cpu` kernel at every dtype it declares (f16, bf16, f32, f64),
//! each conforming on the engine's corpus (the f32 kernel in its pairwise order within
//! `accum(2)`, the f64 kernel in the same order with its overflow guard, the half types computed in f32
//! and rounded once), and default selection runs it there.

use op_runtime::backend::{CpuBackend, ReferenceBackend};
use op_runtime::conformance::conform;
use op_runtime::{builtins, BackendKind, DType, Registry, Tensor};
use std::sync::Arc;

fn registry() -> Registry {
    let r = Registry::with_backends(vec![Arc::new(CpuBackend::with_threads(2)), Arc::new(ReferenceBackend::default())]);
    builtins::register_all(&r);
    r
}

#[test]
fn every_matmul_instance_conforms_on_cpu() {
    let r = registry();
    let h = r.lookup("builtin/matmul").expect("matmul");
    for d in [DType::f16, DType::bf16, DType::f32, DType::f64] {
        let at = h.at(&[d]).expect("an instance");
        let receipt = conform(&at, BackendKind::Cpu).unwrap_or_else(|e| panic!("matmul at {d}: {e}"));
        println!("matmul at {d}: {} cases conform on cpu", receipt.cases);
    }
}

#[test]
fn default_selection_runs_the_cpu_kernel_at_every_dtype() {
    let r = registry();
    let h = r.lookup("builtin/matmul").expect("matmul");
    for d in [DType::f16, DType::bf16, DType::f32, DType::f64] {
        let a = Tensor::from_f64(d, vec![3, 4], &[0.5; 12]).expect("a");
        let b = Tensor::from_f64(d, vec![4, 2], &[0.25; 8]).expect("b");
        let out = h.call(&[&a, &b], &[]).expect("runs");
        assert_eq!(out.provenance.backend, BackendKind::Cpu, "matmul at {d}");
        assert_eq!(out.outputs[0].dtype(), d);
        assert_eq!(out.outputs[0].data().to_f64_vec().expect("floats"), vec![0.5; 6], "matmul at {d}: 4 * 0.5 * 0.25");
    }
}
