//! `bool` and `u8` masks (issue 37, item 4): `builtin/where` takes a `u32`, `bool` or `u8` mask
//! (its dtype variable `M`), and `greater_bool`, `less_bool` and `equal_bool` give `bool` masks.
//! The `bool` and `u8` instances conform on the host backends and select exactly as the `u32`
//! one does (a `u8` mask selects `a` wherever it is non-zero, 255 as 1); GPU kernels serve
//! `u32` masks only, so a `bool` or `u8` instance is a skip with a reason on a GPU backend,
//! never a conversion. `where`'s VJP on the tape gives the mask no gradient and the operands
//! the same gradients whatever the mask's dtype. A `cpu` kernel that inverts a `bool` mask is
//! rejected.

use op_runtime::train::Tape;
use op_runtime::{op, BackendKind, CallOptions, DType, OpHandle, Real, Registry, Tensor};

/// `where` on a `bool` mask whose `cpu` kernel inverts the mask (wrong on purpose).
#[op(name = "test/masks/where_inverted", version = 1, signature(cond: bool[n], a: f32[n], b: f32[n]) -> f32[n],
     category = selection, tolerance = exact, backward = none, cpu = where_inverted_cpu,
     generated_tests = false)]
pub fn where_inverted<T: Real>(cond: &[bool], a: &[T], b: &[T]) -> Vec<T> {
    cond.iter().zip(a.iter().zip(b)).map(|(c, (a, b))| if *c { *a } else { *b }).collect()
}

/// The broken `cpu` kernel: `b` where the mask is `true`.
pub fn where_inverted_cpu(cond: &[bool], a: &[f32], b: &[f32]) -> Vec<f32> {
    cond.iter().zip(a.iter().zip(b)).map(|(c, (a, b))| if *c { *b } else { *a }).collect()
}

fn where_at(t: DType, m: DType) -> OpHandle {
    op_runtime::registry().lookup("builtin/where").expect("a built-in").at(&[t, m]).expect("an instance")
}

fn vector<E: op_runtime::Element>(v: Vec<E>) -> Tensor {
    Tensor::vector(v)
}

/// `where(cond, a, b)` on `kind`, as f32 bits.
fn where_bits(kind: BackendKind, cond: &Tensor, a: &Tensor, b: &Tensor) -> Vec<u32> {
    let r = op_runtime::registry();
    let out =
        r.lookup("builtin/where").unwrap().call_with(&[cond, a, b], &[], CallOptions::on(kind)).unwrap_or_else(|e| panic!("{kind}: {e}"));
    assert_eq!(out.provenance.backend, kind);
    out.outputs[0].as_slice::<f32>().expect("f32").iter().map(|v| v.to_bits()).collect()
}

#[test]
fn where_with_a_bool_or_u8_mask_conforms_on_the_host_backends() {
    for m in [DType::bool, DType::u8] {
        for t in [DType::f32, DType::f64] {
            let h = where_at(t, m);
            let r = op_runtime::conform(&h, BackendKind::Reference).unwrap_or_else(|e| panic!("T = {t}, M = {m}: reference: {e}"));
            assert!(r.cases > 10, "T = {t}, M = {m}: {} cases", r.cases);
        }
        // The f32 instance has a `cpu` kernel of its own; it conforms.
        let h = where_at(DType::f32, m);
        assert!(h.op().contract().cpu_serves(), "M = {m}: a cpu kernel serves T = f32");
        let r = op_runtime::conform(&h, BackendKind::Cpu).unwrap_or_else(|e| panic!("M = {m}: cpu: {e}"));
        assert!(r.cases > 10, "M = {m}: {} cases", r.cases);
    }
}

#[test]
fn every_backend_conforms_or_skips_the_bool_and_u8_instances_and_gpus_skip() {
    for m in [DType::bool, DType::u8] {
        let h = where_at(DType::f32, m);
        // No GPU kernel serves a `bool` or `u8` mask (WGSL storage holds neither).
        let op = h.op();
        let c = op.contract();
        assert!((0..c.kernels.len()).all(|k| !c.kernel_serves(k)), "M = {m}: a GPU kernel serves it");
        for kind in BackendKind::PRIORITY {
            match (kind, op_runtime::conform(&h, kind)) {
                (BackendKind::Reference | BackendKind::Cpu, r) => {
                    r.unwrap_or_else(|e| panic!("M = {m}: {kind}: {e}"));
                }
                (_, Ok(_)) => panic!("M = {m}: {kind} conformed an instance no GPU kernel serves"),
                (_, Err(e)) => {
                    assert!(e.is_skip(), "M = {m}: {kind}: a skip with a reason, got {e}");
                    println!("M = {m}: {kind}: {e}");
                }
            }
        }
    }
}

#[test]
fn a_bool_or_u8_mask_selects_as_the_u32_mask_does() {
    let n = 70_000; // beyond one chunk of the cpu kernel
    let bits: Vec<bool> = (0..n).map(|i| (i * 7919) % 3 == 0).collect();
    let a = vector((0..n).map(|i| i as f32 * 0.5).collect::<Vec<f32>>());
    let mut bv: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
    bv[1] = f32::NAN;
    bv[2] = -0.0;
    let b = vector(bv);
    let (mu32, mbool, mu8) = (
        vector(bits.iter().map(|c| *c as u32).collect::<Vec<u32>>()),
        vector(bits.clone()),
        vector(bits.iter().map(|c| *c as u8).collect::<Vec<u8>>()),
    );
    for kind in [BackendKind::Reference, BackendKind::Cpu] {
        let want = where_bits(kind, &mu32, &a, &b);
        assert_eq!(where_bits(kind, &mbool, &a, &b), want, "{kind}: bool mask");
        assert_eq!(where_bits(kind, &mu8, &a, &b), want, "{kind}: u8 mask");
    }
}

#[test]
fn a_u8_mask_selects_a_wherever_it_is_non_zero() {
    // Documented: any non-zero byte selects `a` (as any non-zero u32 does), not only 1.
    let cond: Vec<u8> = vec![0, 1, 2, 127, 128, 255, 0];
    let a = vector(vec![1.0f32; 7]);
    let b = vector(vec![2.0f32; 7]);
    let want: Vec<u32> = [2.0f32, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0].iter().map(|v| v.to_bits()).collect();
    let as_u32 = vector(cond.iter().map(|c| u32::from(*c)).collect::<Vec<u32>>());
    for kind in [BackendKind::Reference, BackendKind::Cpu] {
        assert_eq!(where_bits(kind, &vector(cond.clone()), &a, &b), want, "{kind}");
        assert_eq!(where_bits(kind, &as_u32, &a, &b), want, "{kind}: the u32 mask of the same values");
    }
}

#[test]
fn bool_comparisons_feed_where_and_agree_with_the_u32_ones() {
    let r = op_runtime::registry();
    let av = vec![1.0f32, -0.0, f32::NAN, 3.0, 2.0, f32::INFINITY];
    let bv = vec![2.0f32, 0.0, 1.0, 3.0, -1.0, 5.0];
    let (a, b) = (vector(av.clone()), vector(bv.clone()));
    for kind in [BackendKind::Reference, BackendKind::Cpu] {
        for (name, u32_name) in
            [("builtin/less_bool", "builtin/less"), ("builtin/greater_bool", "builtin/greater"), ("builtin/equal_bool", "builtin/equal")]
        {
            let call = |op: &str| {
                r.lookup(op).unwrap().call_with(&[&a, &b], &[], CallOptions::on(kind)).unwrap_or_else(|e| panic!("{kind}: {op}: {e}"))
            };
            let mask = call(name).outputs.remove(0);
            assert_eq!(mask.dtype(), DType::bool, "{kind}: {name}");
            let as_u32 = call(u32_name).outputs.remove(0);
            let m: Vec<u32> = mask.as_slice::<bool>().unwrap().iter().map(|c| *c as u32).collect();
            assert_eq!(m, as_u32.as_slice::<u32>().unwrap(), "{kind}: {name} against {u32_name}");
            assert_eq!(where_bits(kind, &mask, &a, &b), where_bits(kind, &as_u32, &a, &b), "{kind}: where on {name}");
        }
        // `where(a < b, a, b)`: the smaller, and `b` where a NaN makes the comparison false.
        let mask = r.lookup("builtin/less_bool").unwrap().call_with(&[&a, &b], &[], CallOptions::on(kind)).unwrap().outputs.remove(0);
        let want: Vec<u32> = av.iter().zip(&bv).map(|(x, y)| if x < y { *x } else { *y }.to_bits()).collect();
        assert_eq!(where_bits(kind, &mask, &a, &b), want, "{kind}");
    }
    // The bool comparisons conform on the host backends.
    for name in ["builtin/less_bool", "builtin/greater_bool", "builtin/equal_bool"] {
        let h = r.lookup(name).unwrap().at(&[DType::f32]).unwrap();
        for kind in [BackendKind::Reference, BackendKind::Cpu] {
            op_runtime::conform(&h, kind).unwrap_or_else(|e| panic!("{name}: {kind}: {e}"));
        }
    }
}

#[test]
fn a_bool_mask_broadcasts_like_a_u32_one() {
    let (rows, cols) = (3, 4);
    let x = Tensor::from_vec(vec![rows, cols], (0..rows * cols).map(|i| i as f32).collect::<Vec<f32>>()).unwrap();
    let y = Tensor::from_vec(vec![rows, cols], vec![-1.0f32; rows * cols]).unwrap();
    let row = [true, false, false, true];
    for kind in [BackendKind::Reference, BackendKind::Cpu] {
        let want = where_bits(kind, &vector(row.iter().map(|c| *c as u32).collect::<Vec<u32>>()), &x, &y);
        assert_eq!(where_bits(kind, &vector(row.to_vec()), &x, &y), want, "{kind}");
        assert_eq!(where_bits(kind, &vector(row.iter().map(|c| *c as u8).collect::<Vec<u8>>()), &x, &y), want, "{kind}");
    }
}

/// The gradients of `sum(where(cond, a, b) * w)` with respect to `a` and `b`, on `kind`.
fn where_grads(kind: BackendKind, cond: &Tensor, a: &Tensor, b: &Tensor, w: &Tensor) -> (Vec<f32>, Vec<f32>) {
    let n = a.shape()[0];
    let mut tape = Tape::with_registry(&Registry::with_builtins());
    tape.set_call_options(CallOptions::on(kind));
    let (av, bv) = (tape.param("a", a.clone()).unwrap(), tape.param("b", b.clone()).unwrap());
    let (cv, wv) = (tape.input("cond", cond.dtype(), [n]), tape.input("w", DType::f32, [n]));
    let s = tape.call1("builtin/where", &[cv, av, bv], &[]).unwrap_or_else(|e| panic!("{kind}: {e}"));
    let p = tape.call1("builtin/mul", &[s, wv], &[]).unwrap();
    let loss = tape.call1("builtin/sum", &[p], &[]).unwrap();
    let mut run = tape.run(&[(cv, cond), (wv, w)]).unwrap_or_else(|e| panic!("{kind}: {e}"));
    let g = tape.backward(&mut run, loss).unwrap_or_else(|e| panic!("{kind}: {e}"));
    assert!(g.get(cv).is_none(), "{kind}: the mask has no gradient");
    let get = |v| g.get(v).expect("a gradient").as_slice::<f32>().expect("f32").to_vec();
    (get(av), get(bv))
}

#[test]
fn the_vjp_of_where_routes_the_cotangent_by_a_bool_or_u8_mask() {
    let n = 9;
    let bits: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
    let a = vector((0..n).map(|i| i as f32).collect::<Vec<f32>>());
    let b = vector((0..n).map(|i| -(i as f32)).collect::<Vec<f32>>());
    let wv: Vec<f32> = (0..n).map(|i| i as f32 + 0.5).collect();
    let w = vector(wv.clone());
    let want_a: Vec<f32> = (0..n).map(|i| if bits[i] { wv[i] } else { 0.0 }).collect();
    let want_b: Vec<f32> = (0..n).map(|i| if bits[i] { 0.0 } else { wv[i] }).collect();
    let masks = [
        vector(bits.iter().map(|c| *c as u32).collect::<Vec<u32>>()),
        vector(bits.clone()),
        vector(bits.iter().map(|c| if *c { 200u8 } else { 0 }).collect::<Vec<u8>>()),
    ];
    for kind in [BackendKind::Reference, BackendKind::Cpu] {
        for m in &masks {
            let (ga, gb) = where_grads(kind, m, &a, &b, &w);
            assert_eq!((ga, gb), (want_a.clone(), want_b.clone()), "{kind}: {} mask", m.dtype());
        }
    }
}

// Explaining this rejection asks whether each input element is a NaN, the `bool` mask's too:
// conformance once overflowed there on 1-byte inputs (an overflow panic in debug builds).
#[test]
fn a_where_kernel_that_inverts_a_bool_mask_is_rejected() {
    let reports = op_runtime::testing::assert_conformance_rejected(&where_inverted::DECL);
    assert!(reports.iter().any(|r| r.backend == BackendKind::Cpu), "the cpu kernel's rejection");
}

#[test]
fn an_unpinned_where_still_stands_for_f32_with_a_u32_mask() {
    // Existing code that does not pick an instance keeps the instance it had, which the GPU
    // kernels serve; the bool and u8 instances follow it.
    let h = op_runtime::registry().lookup("builtin/where").unwrap();
    assert_eq!(h.op().contract().binding(), vec![DType::f32, DType::u32]);
    let bindings: Vec<Vec<DType>> = h.instances().iter().map(|i| i.op().contract().binding()).collect();
    assert_eq!(bindings.len(), 12);
    assert_eq!(bindings[..3], [vec![DType::f32, DType::u32], vec![DType::f32, DType::bool], vec![DType::f32, DType::u8]]);
}
