//! The generated shims' calling convention at its edges: a reference of twelve arguments (the
//! most `op_runtime::__private::call12` passes), a VJP of thirteen (the general path that reads
//! each argument itself), results of eight and nine outputs (the most a tuple stores, and one
//! more), and `usize` dims after a parameter. Every argument carries a different weight, so
//! arguments read from the wrong source or in the wrong order change the values checked here.

use op_runtime::{op, Real, Scalar, Tensor};

/// `x * (a + 2b + 3c + ... + 11k)`.
#[op(
    name = "test/shim/wide", version = 1,
    signature(x: f32[n], a: f32, b: f32, c: f32, d: f32, e: f32, f: f32, g: f32, h: f32, i: f32, j: f32, k: f32) -> f32[n],
    category = elementwise, tolerance = ulp(4),
    backward = vjp(wide_vjp),
)]
#[allow(clippy::too_many_arguments)]
pub fn wide<T: Real>(x: &[T], a: T, b: T, c: T, d: T, e: T, f: T, g: T, h: T, i: T, j: T, k: T) -> Vec<T> {
    let w = weight([a, b, c, d, e, f, g, h, i, j, k]);
    x.iter().map(|v| *v * w).collect()
}

/// The parameters' weighted sum, weights 1 to 11.
fn weight<T: Real>(p: [T; 11]) -> T {
    p.iter().enumerate().fold(T::zero(), |s, (n, v)| s + *v * T::from_f64(n as f64 + 1.0))
}

/// Its VJP: the cotangent times the weight (thirteen arguments).
#[allow(clippy::too_many_arguments)]
pub fn wide_vjp<T: Real>(_x: &[T], a: T, b: T, c: T, d: T, e: T, f: T, g: T, h: T, i: T, j: T, k: T, ct: &[T]) -> Vec<T> {
    let w = weight([a, b, c, d, e, f, g, h, i, j, k]);
    ct.iter().map(|v| *v * w).collect()
}

/// Eight outputs: `x + 0`, ..., `x + 7` (wrapping).
#[op(
    name = "test/shim/eight", version = 1,
    signature(x: u32[n]) -> (o0: u32[n], o1: u32[n], o2: u32[n], o3: u32[n], o4: u32[n], o5: u32[n], o6: u32[n], o7: u32[n]),
    category = integer, tolerance = exact, backward = none,
)]
#[allow(clippy::type_complexity)]
pub fn eight(x: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>) {
    let p = |k: u32| x.iter().map(|v| v.wrapping_add(k)).collect::<Vec<u32>>();
    (p(0), p(1), p(2), p(3), p(4), p(5), p(6), p(7))
}

/// Nine outputs: `x + 0`, ..., `x + 8` (wrapping).
#[op(
    name = "test/shim/nine", version = 1,
    signature(x: u32[n]) -> (o0: u32[n], o1: u32[n], o2: u32[n], o3: u32[n], o4: u32[n], o5: u32[n], o6: u32[n], o7: u32[n], o8: u32[n]),
    category = integer, tolerance = exact, backward = none,
)]
#[allow(clippy::type_complexity)]
pub fn nine(x: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>) {
    let p = |k: u32| x.iter().map(|v| v.wrapping_add(k)).collect::<Vec<u32>>();
    (p(0), p(1), p(2), p(3), p(4), p(5), p(6), p(7), p(8))
}

/// Row sums of an `m x k` matrix times `s`, the dims read after the parameter.
#[op(
    name = "test/shim/rowsum", version = 1,
    signature(a: f32[m, k], s: u32) -> f32[m],
    category = reduction, tolerance = accum(2),
    backward = vjp(rowsum_vjp),
)]
pub fn rowsum<T: Real>(a: &[T], s: u32, m: usize, k: usize) -> Vec<T> {
    // Summed and scaled in f64, rounded once (`accum` holds the reference to its bound too).
    (0..m).map(|r| T::from_f64(a[r * k..(r + 1) * k].iter().map(|v| v.to_f64()).sum::<f64>() * s as f64)).collect()
}

/// Its VJP: each element's gradient is its row's cotangent times `s`.
pub fn rowsum_vjp<T: Real>(_a: &[T], s: u32, m: usize, k: usize, ct: &[T]) -> Vec<T> {
    (0..m * k).map(|i| ct[i / k] * T::from_f64(s as f64)).collect()
}

fn floats(t: &Tensor) -> Vec<f32> {
    t.as_slice::<f32>().expect("an f32 output").to_vec()
}

#[test]
fn twelve_arguments_are_read_in_order_and_thirteen_take_the_general_path() {
    let h = op_runtime::register(&wide::DECL).expect("registers");
    let params: Vec<Scalar> = (1..=11).map(|p| Scalar::F32(p as f32 * 0.5)).collect();
    let x = Tensor::vector(vec![1.0f32, -2.0]);
    let out = h.call(&[&x], &params).expect("runs");
    // sum over n of n * (n / 2) for n = 1..=11: 253.
    assert_eq!(floats(&out.outputs[0]), vec![253.0, -506.0]);
    // The VJP (thirteen arguments) against central differences.
    op_runtime::gradcheck(&wide::DECL).expect("the VJP checks");
}

#[test]
fn eight_results_are_stored_as_a_tuple_and_nine_one_by_one() {
    let x = Tensor::vector(vec![10u32, u32::MAX]);
    let out = op_runtime::register(&eight::DECL).expect("registers").call(&[&x], &[]).expect("runs");
    let nine_out = op_runtime::register(&nine::DECL).expect("registers").call(&[&x], &[]).expect("runs");
    assert_eq!((out.outputs.len(), nine_out.outputs.len()), (8, 9));
    for (k, o) in nine_out.outputs.iter().enumerate() {
        let want = [10 + k as u32, (k as u32).wrapping_sub(1)];
        assert_eq!(o.as_slice::<u32>(), Some(&want[..]), "output {k}");
        if let Some(o8) = out.outputs.get(k) {
            assert_eq!(o8.as_slice::<u32>(), Some(&want[..]), "output {k} of eight");
        }
    }
}

#[test]
fn dims_are_read_by_name_after_the_parameters() {
    let h = op_runtime::register(&rowsum::DECL).expect("registers");
    let a = Tensor::from_vec(vec![2, 3], vec![1.0f32, 2.0, 3.0, 10.0, 20.0, 30.0]).expect("a 2 x 3 matrix");
    let out = h.call(&[&a], &[Scalar::U32(2)]).expect("runs");
    assert_eq!(floats(&out.outputs[0]), vec![12.0, 120.0]);
    op_runtime::gradcheck(&rowsum::DECL).expect("the VJP checks");
}
