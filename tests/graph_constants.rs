//! Constants in composite graphs (`Graph::constant`): a composite whose graph multiplies by a
//! constant mask gradchecks (the mask in f64 there) and trains; the constant is pinned by its
//! content hash in every run's provenance, so two runs whose constants differ are told apart
//! even where the op's code identity is the same; two composites whose builders differ only in
//! the constant's value have different identities; integer constants are held as they are (a
//! reversal gathers through a `u32` index table constant, and gradchecks); a device tensor is
//! refused.

use op_runtime::graph::{Graph, GraphError, Var};
use op_runtime::train::{Sgd, Tape, TapeError};
use op_runtime::{op, DType, Real, Registry, Scalar, Tensor};
use std::sync::atomic::{AtomicU32, Ordering};

/// The mask's value at position `i`: 1 where `i % 3 == KEEP`, else 0.
fn mask(n: usize, keep: usize, dtype: DType) -> Result<Tensor, GraphError> {
    let v: Vec<f64> = (0..n).map(|i| if i % 3 == keep { 1.0 } else { 0.0 }).collect();
    Tensor::from_f64(dtype, [n], &v).map_err(|e| GraphError(Box::new(e)))
}

/// `x * mask` with the mask a constant of the graph sized after `x`.
fn masked_graph(g: &mut dyn Graph, x: &[Var], keep: usize) -> Result<Vec<Var>, GraphError> {
    let n = g.shape_of(x[0]).ok_or_else(|| GraphError("no shape".into()))?[0];
    let dtype = g.dtype_of(x[0]).ok_or_else(|| GraphError("no dtype".into()))?;
    let m = g.constant("keep mask", mask(n, keep, dtype)?)?;
    Ok(vec![g.call1("builtin/mul", &[x[0], m], &[])?])
}

mod keep_first {
    use super::*;
    /// Keeps the elements at positions `0 mod 3` (the mask is a constant of the graph
    /// `keep_graph`).
    #[op(name = "test/constants/keep_first", version = 1, signature(x: f32[n]) -> f32[n],
         category = elementwise, tolerance = ulp(0), backward = composite(keep_graph))]
    pub fn keep<T: Real>(x: &[T]) -> Vec<T> {
        x.iter().enumerate().map(|(i, v)| if i % 3 == 0 { *v } else { *v * T::zero() }).collect()
    }
    /// The graph, keeping position 0 of every 3.
    pub fn keep_graph(g: &mut dyn Graph, x: &[Var], _p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
        masked_graph(g, x, 0)
    }
}

mod keep_second {
    use super::*;
    /// The same declaration whose graph's constant keeps position 1 of every 3 instead.
    #[op(name = "test/constants/keep_first", version = 1, signature(x: f32[n]) -> f32[n],
         category = elementwise, tolerance = ulp(0), backward = composite(keep_graph), generated_tests = false)]
    pub fn keep<T: Real>(x: &[T]) -> Vec<T> {
        x.iter().enumerate().map(|(i, v)| if i % 3 == 0 { *v } else { *v * T::zero() }).collect()
    }
    /// The graph, keeping position 1 of every 3 (the constant differs, nothing else).
    pub fn keep_graph(g: &mut dyn Graph, x: &[Var], _p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
        masked_graph(g, x, 1)
    }
}

mod keep_second_again {
    use super::*;
    /// `keep_second` again, word for word in its code: the control twin of the identity test.
    #[op(name = "test/constants/keep_first", version = 1, signature(x: f32[n]) -> f32[n],
         category = elementwise, tolerance = ulp(0), backward = composite(keep_graph), generated_tests = false)]
    pub fn keep<T: Real>(x: &[T]) -> Vec<T> {
        x.iter().enumerate().map(|(i, v)| if i % 3 == 0 { *v } else { *v * T::zero() }).collect()
    }
    /// The graph, keeping position 1 of every 3, as `keep_second`'s does.
    pub fn keep_graph(g: &mut dyn Graph, x: &[Var], _p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
        masked_graph(g, x, 1)
    }
}

/// The position the runtime-chosen mask keeps (read when the graph is recorded).
static KEEP: AtomicU32 = AtomicU32::new(0);

/// A composite whose constant is chosen at run time: the code identity cannot see it, the
/// provenance does.
#[op(name = "test/constants/keep_chosen", version = 1, signature(x: f32[n]) -> f32[n],
     category = elementwise, tolerance = ulp(0), backward = composite(chosen_graph), generated_tests = false)]
pub fn keep_chosen<T: Real>(x: &[T]) -> Vec<T> {
    let keep = KEEP.load(Ordering::SeqCst) as usize;
    x.iter().enumerate().map(|(i, v)| if i % 3 == keep { *v } else { *v * T::zero() }).collect()
}
/// The graph, keeping the position `KEEP` says.
pub fn chosen_graph(g: &mut dyn Graph, x: &[Var], _p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
    masked_graph(g, x, KEEP.load(Ordering::SeqCst) as usize)
}

#[test]
fn a_composite_with_a_constant_gradchecks_and_trains() {
    let report = op_runtime::gradcheck(&keep_first::keep::DECL).unwrap_or_else(|e| panic!("{e}"));
    println!("{report}");
    let reg = Registry::with_builtins();
    reg.register(&keep_first::keep::DECL).unwrap();
    let mut t = Tape::with_registry(&reg);
    let x = t.param("x", Tensor::vector(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])).unwrap();
    let y = t.call1("test/constants/keep_first", &[x], &[]).unwrap();
    let target = t.input("target", DType::f32, [6]);
    let loss = t.call1("builtin/mse_loss", &[y, target], &[]).unwrap();
    let zeros = Tensor::vector(vec![0.0f32; 6]);
    let mut run = t.run(&[(target, &zeros)]).unwrap();
    let g = t.backward(&mut run, loss).unwrap();
    // d/dx mean((m x)^2) = 2 m^2 x / n: zero where the mask is 0.
    let gx = g.get(x).unwrap().as_slice::<f32>().unwrap().to_vec();
    let expect: Vec<f32> = (0..6).map(|i| if i % 3 == 0 { 2.0 * (i + 1) as f32 / 6.0 } else { 0.0 }).collect();
    assert_eq!(gx, expect);
    Sgd::new(0.5).step(&mut t, &g).unwrap();
    let after = t.run(&[(target, &zeros)]).unwrap().scalar(loss).unwrap();
    assert!(after < run.scalar(loss).unwrap());
    // The run's provenance pins the graph's constant by content hash.
    assert_eq!(run.provenance.constants.len(), 1, "{}", run.provenance);
    let c = &run.provenance.constants[0];
    assert_eq!((c.name.as_str(), c.dtype, c.shape.as_slice()), ("keep mask", DType::f32, &[6][..]));
    assert!(run.provenance.to_string().contains("constant keep mask"), "{}", run.provenance);
    let back = op_runtime::provenance::ProvenanceRecord::from_json(&run.provenance.to_json()).unwrap();
    assert_eq!(back, run.provenance);
}

#[test]
fn a_composite_changes_identity_when_its_constant_changes() {
    let (a, b) = (&keep_first::keep::DECL, &keep_second::keep::DECL);
    let contract = |d| Registry::new().register(d).unwrap().op().contract().clone();
    assert_eq!(contract(a), contract(b), "the same contract");
    // The code identity (before placement in the module) covers the builder's code: the two
    // builders differ only in the constant's value.
    assert_ne!(a.hash, b.hash, "the constant's value is in the code identity");
    assert_ne!(a.identity(), b.identity());
    // The control twin: the same code with the same constant has the same code identity, so
    // the difference above is the constant's and nothing else's.
    assert_eq!(b.hash, keep_second_again::keep::DECL.hash, "the same constant, the same code identity");
}

/// The constants of a run of `keep_chosen` recorded with `KEEP = keep`.
fn run_constants(keep: u32) -> Vec<op_runtime::provenance::ConstantEntry> {
    KEEP.store(keep, Ordering::SeqCst);
    let reg = Registry::with_builtins();
    reg.register(&keep_chosen::DECL).unwrap();
    let mut t = Tape::with_registry(&reg);
    let x = t.input("x", DType::f32, [9]);
    t.call1("test/constants/keep_chosen", &[x], &[]).unwrap();
    let xs = Tensor::vector(vec![1.0f32; 9]);
    t.run(&[(x, &xs)]).unwrap().provenance.constants
}

#[test]
fn the_provenance_tells_runs_with_other_constants_apart() {
    let (first, again, other) = (run_constants(0), run_constants(0), run_constants(2));
    KEEP.store(0, Ordering::SeqCst);
    assert_eq!(first, again, "the same constant, the same record");
    assert_eq!(first.len(), 1);
    assert_ne!(first[0].content_hash, other[0].content_hash, "another mask, another hash");
}

#[test]
fn integer_constants_are_held_as_they_are_and_device_tensors_are_refused() {
    let mut t = Tape::with_mode(&Registry::with_builtins(), op_runtime::train::Mode::ReferenceF64);
    let idx = t.constant("index table", Tensor::vector(vec![2u32, 0, 1])).unwrap();
    assert_eq!(t.dtype(idx), Some(DType::u32), "integers stay integers");
    let w = t.constant("weight", Tensor::vector(vec![0.5f32, 1.5])).unwrap();
    assert_eq!(t.dtype(w), Some(DType::f64), "a float constant runs at the tape's float type");
    if let Ok(engine) = op_runtime::wgpu::WgpuEngine::shared() {
        let d = Tensor::vector(vec![1.0f32]).to_device(engine).unwrap();
        let e = t.constant("on the device", d).unwrap_err();
        assert!(matches!(e, TapeError::Placement { .. }), "{e}");
    }
}

/// `x` reversed, as a gather through an index table that is a constant of the graph.
#[op(name = "test/constants/reversed", version = 1, signature(x: f32[n] where n >= 1) -> f32[n],
     category = selection, tolerance = exact, backward = composite(reversed_graph),
     subgradient = "a permutation: each cotangent goes back to the element moved")]
pub fn reversed<T: Real>(x: &[T]) -> Vec<T> {
    x.iter().rev().copied().collect()
}
/// `gather(x, [n - 1, ..., 1, 0])`.
pub fn reversed_graph(g: &mut dyn Graph, x: &[Var], _p: &[Scalar]) -> Result<Vec<Var>, GraphError> {
    let n = g.shape_of(x[0]).ok_or_else(|| GraphError("no shape".into()))?[0];
    let table = Tensor::vector((0..n as u32).rev().collect::<Vec<u32>>());
    let idx = g.constant("index table", table)?;
    Ok(vec![g.call1("builtin/gather", &[x[0], idx], &[])?])
}

#[test]
fn an_index_table_constant_feeds_a_gather_and_the_composite_gradchecks() {
    let report = op_runtime::gradcheck(&reversed::DECL).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.to_string().contains("builtin/gather@1"), "{report}");
    let reg = Registry::with_builtins();
    reg.register(&reversed::DECL).unwrap();
    let mut t = Tape::with_registry(&reg);
    let x = t.param("x", Tensor::vector(vec![1.0f32, 2.0, 3.0])).unwrap();
    let y = t.call1("test/constants/reversed", &[x], &[]).unwrap();
    let w = t.input("w", DType::f32, [3]);
    let p = t.call1("builtin/mul", &[y, w], &[]).unwrap();
    let loss = t.call1("builtin/sum", &[p], &[]).unwrap();
    let ws = Tensor::vector(vec![10.0f32, 20.0, 30.0]);
    let mut run = t.run(&[(w, &ws)]).unwrap();
    let g = t.backward(&mut run, loss).unwrap();
    // d/dx sum(reverse(x) * w) = reverse(w).
    assert_eq!(g.get(x).unwrap().as_slice::<f32>().unwrap(), &[30.0, 20.0, 10.0]);
    let c = &run.provenance.constants[0];
    assert_eq!((c.name.as_str(), c.dtype), ("index table", DType::u32));
}
