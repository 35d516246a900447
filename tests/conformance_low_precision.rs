//! References right in every dtype: the built-ins that accumulate (`sum`, `mean`, `mse_loss`,
//! `matmul`, `conv1d` and their VJP rules) add in f64 and round once, and convert counts
//! without passing them through the instance's type, so their f16 and bf16 instances are
//! within one ulp of the exact result on long inputs (an f16 running sum of 0.1 stalls at 256,
//! and `131_071` is infinite in f16). And `accum(k)` measures every output, the reference's own
//! included, against the f64 reference: a kernel copying an f16 running sum is rejected even
//! where the reference is that running sum (the reference is then rejected too), while a
//! kernel that sums in f64 and rounds once conforms.

use op_runtime::conformance::{self, Class, ConformanceFailure, Fault};
use op_runtime::testing::assert_conformance_rejected;
use op_runtime::{bf16, f16};
use op_runtime::{op, BackendKind, CallOptions, DType, OpHandle, Real, Registry, Tensor};

/// One unit in the last place of `v`'s magnitude in `dtype` (the spacing above it).
fn ulp(v: f64, dtype: DType) -> f64 {
    let (mantissa, min_exp) = match dtype {
        DType::f16 => (10, -14),
        DType::bf16 => (7, -126),
        _ => unreachable!("half types only"),
    };
    let e = if v == 0.0 { min_exp } else { (v.abs().log2().floor() as i32).max(min_exp) };
    2f64.powi(e - mantissa)
}

/// `n` copies of 0.1 rounded to `dtype`, and that value.
fn tenths(dtype: DType, n: usize) -> (Tensor, f64) {
    match dtype {
        DType::f16 => (Tensor::vector(vec![f16::from_f64(0.1); n]), f16::from_f64(0.1).to_f64()),
        _ => (Tensor::vector(vec![bf16::from_f64(0.1); n]), bf16::from_f64(0.1).to_f64()),
    }
}

fn on_reference(h: &OpHandle, inputs: &[&Tensor]) -> Vec<f64> {
    let out = h.call_with(inputs, &[], CallOptions::on(BackendKind::Reference)).unwrap_or_else(|e| panic!("`{}`: {e}", h.id()));
    out.outputs[0].data().to_f64_vec().expect("floats")
}

fn within_one_ulp(what: &str, got: f64, exact: f64, dtype: DType) {
    let u = ulp(exact, dtype);
    eprintln!("{what}: {got} (exact {exact}, one ulp {u})");
    assert!((got - exact).abs() <= u, "{what}: {got} is more than one {dtype} ulp ({u}) from the exact {exact}");
}

#[test]
fn half_precision_sums_and_means_of_long_inputs_are_within_one_ulp() {
    let r = op_runtime::registry();
    let (sum, mean) = (r.lookup("builtin/sum").expect("built-in"), r.lookup("builtin/mean").expect("built-in"));
    for dtype in [DType::f16, DType::bf16] {
        for n in [4096usize, 131_071] {
            let (x, v) = tenths(dtype, n);
            // The exact sum of the inputs (each 0.1 rounded to the dtype): 409.5 for 4096 f16s.
            let exact = v * n as f64;
            within_one_ulp(&format!("{dtype} sum of {n} x 0.1"), on_reference(&sum, &[&x])[0], exact, dtype);
            within_one_ulp(&format!("{dtype} mean of {n} x 0.1"), on_reference(&mean, &[&x])[0], v, dtype);
        }
    }
    let (x, _) = tenths(DType::f16, 4096);
    assert_eq!(on_reference(&sum, &[&x])[0], 409.5, "the f16 sum of 4096 x 0.1 (a running f16 sum gives 256)");
}

#[test]
fn every_accumulating_builtin_is_within_one_ulp_in_half_precision() {
    let r = op_runtime::registry();
    let h = |name: &str| r.lookup(name).expect("built-in");
    for dtype in [DType::f16, DType::bf16] {
        let n = 4096;
        let (x, v) = tenths(dtype, n);
        let ones = Tensor::from_f64(dtype, [n], &vec![1.0; n]).expect("ones");
        let zeros = Tensor::from_f64(dtype, [n], &vec![0.0; n]).expect("zeros");
        let exact = v * n as f64;
        within_one_ulp(&format!("{dtype} mse_loss"), on_reference(&h("builtin/mse_loss"), &[&x, &zeros])[0], v * v, dtype);
        let a = Tensor::from_f64(dtype, [1, n], &vec![v; n]).expect("a");
        let b = Tensor::from_f64(dtype, [n, 1], &vec![1.0; n]).expect("b");
        within_one_ulp(&format!("{dtype} matmul"), on_reference(&h("builtin/matmul"), &[&a, &b])[0], exact, dtype);
        within_one_ulp(&format!("{dtype} conv1d"), on_reference(&h("builtin/conv1d"), &[&x, &ones])[0], exact, dtype);
    }
    // The VJP rules: mean's `g / n` and mse_loss's `2 (a - b) g / n` with n = 131_071 in f16
    // (the count is infinite there, `2 / n` subnormal), matmul's and conv1d's sums of products.
    let n = 131_071usize;
    let (x, v) = tenths(DType::f16, n);
    let zeros = Tensor::from_f64(DType::f16, [n], &vec![0.0; n]).expect("zeros");
    let g = Tensor::from_f64(DType::f16, Vec::new(), &[1000.0]).expect("g");
    let grad = |name: &str, inputs: &[&Tensor]| -> Vec<Vec<f64>> {
        let vjp = h(name).vjp_op().unwrap_or_else(|| panic!("{name} declares VJP kernels"));
        let out = vjp.call_with(inputs, &[], CallOptions::on(BackendKind::Reference)).unwrap_or_else(|e| panic!("{name}: {e}"));
        out.outputs.iter().map(|t| t.data().to_f64_vec().expect("floats")).collect()
    };
    let d = grad("builtin/mean", &[&x, &g]);
    within_one_ulp("f16 mean VJP", d[0][0], 1000.0 / n as f64, DType::f16);
    let d = grad("builtin/mse_loss", &[&x, &zeros, &g]);
    within_one_ulp("f16 mse_loss VJP", d[0][n - 1], 2.0 * v * 1000.0 / n as f64, DType::f16);
    let m = 4096;
    let (row, v) = tenths(DType::f16, m);
    // d_b = a^T g sums the m rows of a (a: [m, 1], g: [m, 1] of ones).
    let a = Tensor::from_f64(DType::f16, [m, 1], &vec![v; m]).expect("a");
    let b = Tensor::from_f64(DType::f16, [1, 1], &[1.0]).expect("b");
    let g = Tensor::from_f64(DType::f16, [m, 1], &vec![1.0; m]).expect("g");
    let d = grad("builtin/matmul", &[&a, &b, &g]);
    within_one_ulp("f16 matmul VJP d_b", d[1][0], v * m as f64, DType::f16);
    let w = Tensor::from_f64(DType::f16, [1], &[1.0]).expect("w");
    let g = Tensor::from_f64(DType::f16, [m], &vec![1.0; m]).expect("g");
    let d = grad("builtin/conv1d", &[&row, &w, &g]);
    within_one_ulp("f16 conv1d VJP d_w", d[1][0], v * m as f64, DType::f16);
}

/// Every built-in's reference conforms to the `accum` bound at every instance it declares
/// (f16, bf16, f32, f64): the reference's own output is measured against its f64 evaluation
/// like any kernel's.
#[test]
fn every_builtin_reference_conforms_at_every_dtype() {
    let reg = Registry::with_builtins();
    let mut failures = Vec::new();
    for op in reg.ops() {
        let h = reg.lookup(op.id()).expect("registered");
        for inst in h.instances() {
            match conformance::conform(&inst, BackendKind::Reference) {
                Ok(r) => eprintln!("{:<24} {:<10} reference conforms on {} cases", op.id(), inst.op().binding_text(), r.cases),
                Err(e) => failures.push(format!("{} {}: {e}", op.id(), inst.op().binding_text())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `sum` over f16 (the built-in's reference: f64, rounded once) with a `cpu` kernel that adds
/// in f16, as the built-in's reference once did.
#[op(name = "test/broken/f16_running_sum", version = 1, signature(x: f16[n]) -> f16[],
     category = reduction, tolerance = accum(2), nan = propagate, backward = none, cpu = f16_running_sum_kernel, generated_tests = false)]
pub fn f16_running_sum<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

/// Wrong: a running sum in f16 (each add rounded to f16), from +0 in input order.
pub fn f16_running_sum_kernel(x: &[f16]) -> Vec<f16> {
    vec![x.iter().fold(f16::ZERO, |s, v| s + *v)]
}

/// The same op with a `cpu` kernel that sums in f64 and rounds once.
#[op(name = "test/accum/f16_sum_in_f64", version = 1, signature(x: f16[n]) -> f16[],
     category = reduction, tolerance = accum(2), nan = propagate, backward = none, cpu = f16_sum_in_f64_kernel)]
pub fn f16_sum_in_f64<T: Real>(x: &[T]) -> Vec<T> {
    op_runtime::builtins::sum(x)
}

/// Right: pairwise in f64 (a different order from the reference's), rounded once.
pub fn f16_sum_in_f64_kernel(x: &[f16]) -> Vec<f16> {
    fn pairwise(x: &[f16]) -> f64 {
        match x.len() {
            0 => 0.0,
            1 => x[0].to_f64(),
            n => pairwise(&x[..n / 2]) + pairwise(&x[n / 2..]),
        }
    }
    vec![f16::from_f64(pairwise(x))]
}

/// A sum whose reference is itself an f16 running sum, and whose kernel copies it bit for bit.
#[op(name = "test/broken/f16_running_sum_copied", version = 1, signature(x: f16[n]) -> f16[],
     category = reduction, tolerance = accum(2), nan = propagate, backward = none, cpu = f16_running_sum_kernel, generated_tests = false)]
pub fn f16_running_sum_copied<T: Real>(x: &[T]) -> Vec<T> {
    let mut s = T::zero();
    for v in x {
        s += *v;
    }
    vec![s]
}

#[test]
fn a_kernel_copying_an_f16_running_sum_is_rejected() {
    let report = assert_conformance_rejected(&f16_running_sum::DECL)
        .into_iter()
        .find(|r| r.backend == BackendKind::Cpu)
        .expect("the CPU backend runs everywhere and rejects the running sum");
    eprintln!("{report}");
    match &report.first().fault {
        Fault::Mismatch(m) => assert!(m.detail.contains("accum(2)"), "{report}"),
        other => panic!("expected a value mismatch, got {other:?}\n{report}"),
    }
    // The correct twin conforms.
    let h = Registry::new().register(&f16_sum_in_f64::DECL).expect("registers");
    conformance::conform(&h, BackendKind::Cpu).unwrap_or_else(|e| panic!("the f64 sum: {e}"));
}

#[test]
fn copying_the_reference_bits_earns_nothing_under_accum() {
    // The kernel returns exactly the reference's bits on every case: both are rejected, since
    // both are far from the f64 reference (256 for 409.5 on 4096 x 0.1).
    let h = Registry::new().register(&f16_running_sum_copied::DECL).expect("registers");
    for kind in [BackendKind::Cpu, BackendKind::Reference] {
        match conformance::conform(&h, kind) {
            Err(ConformanceFailure::Rejected(report)) => {
                eprintln!("{report}");
                let Fault::Mismatch(m) = &report.first().fault else { panic!("{report}") };
                assert!(m.detail.contains("f64 reference"), "{report}");
                // Named as what it is: the reference's own bits, outside the bound.
                assert_eq!(report.first().class, Class::ReferenceBits, "{report}");
                assert!(report.explain(report.first()).contains("accumulate in f64"), "{report}");
            }
            other => panic!("{kind}: a copy of an f16 running sum must be rejected, got {other:?}"),
        }
    }
    let (x, _) = tenths(DType::f16, 4096);
    let out = h.call_with(&[&x], &[], CallOptions::on(BackendKind::Cpu)).expect("runs").outputs[0].data().get_f64(0).expect("f16");
    assert_eq!(out, 256.0, "the running sum stalls");
}
