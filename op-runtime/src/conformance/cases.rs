//! The case generator: every conformance case is derived from the op's signature and seeded
//! from its content hash; the author picks nothing. Owns shapes, parameter values and input
//! data; it must not run kernels or compare results (see `compare` and the parent module).
//!
//! Families, in corpus order (smallest first, so the first failure is the simplest one):
//! 1. `smallest`: for each boundary value of the integer parameters (every constraint literal
//!    and its neighbours that is admissible, e.g. `w = 1, 3, 31` for the median), the smallest
//!    admissible dims (coordinate descent from an admissible start: the median gets `n = w`,
//!    i.e. exactly one output), once with dims allowed to reach 0 and once with dims >= 1;
//!    each shape with every value pattern.
//! 2. `random`: random admissible shapes (dims log-uniform up to a few hundred, tensors capped
//!    at [`MAX_NUMEL`] elements) with random admissible parameters, each with one pattern.
//!
//! Value patterns ([`Pattern`]): random mixed magnitudes, edge values (+0/-0, +-inf,
//! subnormals, largest and smallest finite), constant, sorted, reverse-sorted, ties and
//! duplicates, signed zeros, subnormals, extremes; NaN only when the contract declares `nan`.
//! Admissibility is decided by the op's own plan (`Plan::validate`): a case it refuses is
//! dropped, never run.

use crate::registry::RegisteredOp;
use crate::tensor::{bf16, f16, Data, Scalar, Tensor};
use op_spec::contract::{DType, Expr};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::fmt;

/// Largest number of elements of any input or output tensor in a generated case.
pub const MAX_NUMEL: usize = 4096;
/// Largest dim value the generator tries.
pub const MAX_DIM: i128 = 512;
/// Random-shape cases per corpus.
pub const RANDOM_CASES: usize = 40;

/// How input values are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Mixed signs and magnitudes (1e-3 .. 1e3) with a few small integers.
    Random,
    /// Edge values mixed with ordinary ones: +0, -0, +-inf, subnormals, extremes, +-1.
    Edge,
    /// One value repeated.
    Constant,
    /// Ascending (total order).
    Sorted,
    /// Descending (total order).
    ReverseSorted,
    /// Few distinct values (duplicates and ties), +0 and -0 among them.
    Ties,
    /// Only +0 and -0.
    SignedZeros,
    /// Subnormals of both signs, with a few zeros and normal values.
    Subnormal,
    /// Largest and smallest finite values and infinities.
    Extremes,
    /// Ordinary values with NaNs (only for ops that declare NaN behaviour).
    Nan,
}

impl Pattern {
    /// Every pattern without NaN.
    pub const FINITE_AND_EDGE: [Pattern; 9] = [
        Pattern::Random,
        Pattern::Edge,
        Pattern::Constant,
        Pattern::Sorted,
        Pattern::ReverseSorted,
        Pattern::Ties,
        Pattern::SignedZeros,
        Pattern::Subnormal,
        Pattern::Extremes,
    ];

    /// The pattern's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Edge => "edge values",
            Pattern::Constant => "constant",
            Pattern::Sorted => "sorted",
            Pattern::ReverseSorted => "reverse-sorted",
            Pattern::Ties => "ties and duplicates",
            Pattern::SignedZeros => "signed zeros",
            Pattern::Subnormal => "subnormals",
            Pattern::Extremes => "extremes",
            Pattern::Nan => "NaN",
        }
    }
}

/// The shape part of a case: a value for each of the plan's symbols and each float parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// Values of `Plan::syms` (dim symbols, then integer parameters), in order.
    pub syms: Vec<i128>,
    /// Values of the float parameters, in signature order.
    pub float_params: Vec<f64>,
}

/// One generated case.
#[derive(Clone, Debug)]
pub struct Case {
    /// Position in the corpus.
    pub index: usize,
    /// Family (`smallest`, `smallest non-empty`, `random`, `shrunk`).
    pub family: &'static str,
    /// Value pattern.
    pub pattern: Pattern,
    /// Seed of the case's own data generator.
    pub seed: u64,
    /// Symbol values and float parameters.
    pub shape: Shape,
    /// Symbol names (for reports).
    pub sym_names: Vec<String>,
    /// The tensor inputs.
    pub inputs: Vec<Tensor>,
    /// The parameters.
    pub params: Vec<Scalar>,
    /// Parameter names (for reports).
    pub param_names: Vec<String>,
}

impl Case {
    /// Total number of output-relevant input elements (for ordering and shrinking).
    pub fn size(&self) -> usize {
        self.inputs.iter().map(Tensor::numel).sum()
    }

    /// The value of a symbol.
    pub fn sym(&self, name: &str) -> Option<i128> {
        self.sym_names.iter().position(|s| s == name).map(|k| self.shape.syms[k])
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let syms: Vec<String> = self.sym_names.iter().zip(&self.shape.syms).map(|(n, v)| format!("{n} = {v}")).collect();
        let shapes: Vec<String> = self.inputs.iter().map(|t| format!("{}{:?}", t.dtype(), t.shape())).collect();
        let params: Vec<String> = self.param_names.iter().zip(&self.params).map(|(n, p)| format!("{n} = {p}")).collect();
        write!(
            f,
            "case #{} ({}, {}): {}; inputs [{}]; params [{}]; seed {:#018x}",
            self.index,
            self.family,
            self.pattern.name(),
            if syms.is_empty() { "no symbols".to_string() } else { syms.join(", ") },
            shapes.join(", "),
            params.join(", "),
            self.seed
        )
    }
}

/// The generated corpus of an op.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// The cases, smallest families first.
    pub cases: Vec<Case>,
    /// blake3 over every case's shape, parameters and input bytes.
    pub digest: [u8; 32],
}

/// What the generator knows about an op's signature.
pub(crate) struct Gen<'a> {
    op: &'a RegisteredOp,
    /// Plan symbols.
    syms: Vec<String>,
    /// Number of leading dim symbols in `syms`.
    n_dims: usize,
    /// (index into `syms`, dtype) of each integer param, in `syms` order.
    int_params: Vec<(usize, DType)>,
    /// Float params in signature order.
    n_float_params: usize,
    /// Constraint literals.
    literals: Vec<i128>,
    nan: bool,
}

fn literals(e: &Expr, out: &mut Vec<i128>) {
    match e {
        Expr::Lit(v) => out.push(*v as i128),
        Expr::Sym(_) => {}
        Expr::Neg(a) => literals(a, out),
        Expr::Bin(_, a, b) | Expr::Min(a, b) | Expr::Max(a, b) => {
            literals(a, out);
            literals(b, out);
        }
    }
}

impl<'a> Gen<'a> {
    pub(crate) fn new(op: &'a RegisteredOp) -> Gen<'a> {
        let sig = &op.contract.signature;
        let syms = op.plan.syms.clone();
        let n_dims = sig.dim_symbols().len();
        let int_params = sig
            .params()
            .filter(|p| p.dtype.is_int())
            .filter_map(|p| syms.iter().position(|s| *s == p.name).map(|k| (k, p.dtype)))
            .collect();
        let n_float_params = sig.params().filter(|p| !p.dtype.is_int()).count();
        let mut lits = Vec::new();
        for c in &sig.constraints {
            for t in &c.terms {
                literals(t, &mut lits);
            }
        }
        lits.sort_unstable();
        lits.dedup();
        Gen { op, syms, n_dims, int_params, n_float_params, literals: lits, nan: op.contract.nan.is_some() }
    }

    fn env(&self, values: &[i128]) -> BTreeMap<String, i128> {
        self.syms.iter().cloned().zip(values.iter().copied()).collect()
    }

    /// Shapes of the inputs for these symbol values, if every dim is a non-negative integer.
    fn input_shapes(&self, values: &[i128]) -> Option<Vec<Vec<usize>>> {
        let env = self.env(values);
        self.op
            .contract
            .signature
            .inputs()
            .map(|t| t.dims.iter().map(|d| d.eval_map(&env).and_then(|v| usize::try_from(v).ok())).collect::<Option<Vec<usize>>>())
            .collect()
    }

    /// Whether symbol values satisfy every constraint, give non-negative dims and stay within
    /// the size caps. Cheap (no tensors); `Plan::validate` has the last word in [`Gen::build`].
    fn admissible(&self, values: &[i128]) -> bool {
        let env = self.env(values);
        let sig = &self.op.contract.signature;
        for (k, dt) in &self.int_params {
            if !fits(values[*k], *dt) {
                return false;
            }
        }
        if values[..self.n_dims].iter().any(|v| *v < 0 || *v > MAX_DIM) {
            return false;
        }
        if !sig.constraints.iter().all(|c| c.holds(&|s| env.get(s).copied()) == Some(true)) {
            return false;
        }
        let Some(shapes) = self.input_shapes(values) else { return false };
        if shapes.iter().any(|s| numel(s).is_none_or(|n| n > MAX_NUMEL)) {
            return false;
        }
        for o in &sig.outputs {
            let mut n: usize = 1;
            for d in &o.dims {
                match d.eval_map(&env).and_then(|v| usize::try_from(v).ok()) {
                    Some(v) => n = n.saturating_mul(v),
                    None => return false,
                }
            }
            if n > MAX_NUMEL {
                return false;
            }
        }
        true
    }

    /// Candidate boundary values of integer parameter `k`: constraint literals and neighbours,
    /// and 0..=3.
    fn param_candidates(&self, dt: DType) -> Vec<i128> {
        let mut v: Vec<i128> = (0..=3).collect();
        for l in &self.literals {
            v.extend([l - 1, *l, l + 1]);
        }
        v.retain(|x| fits(*x, dt));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Smallest admissible dims for fixed params, by coordinate descent from an admissible
    /// start; dims never go below `floor`.
    fn smallest_dims(&self, params: &[(usize, i128)], floor: i128) -> Option<Vec<i128>> {
        let mut values = vec![0i128; self.syms.len()];
        for (k, v) in params {
            values[*k] = *v;
        }
        let mut start = None;
        for d in [floor.max(1), 2, 3, 4, 8, 16, 32, 64, 128, 256] {
            values[..self.n_dims].iter_mut().for_each(|x| *x = d.max(floor));
            if self.admissible(&values) {
                start = Some(values.clone());
                break;
            }
        }
        let mut values = start?;
        loop {
            let mut changed = false;
            for k in 0..self.n_dims {
                while values[k] > floor {
                    values[k] -= 1;
                    if self.admissible(&values) {
                        changed = true;
                    } else {
                        values[k] += 1;
                        break;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        Some(values)
    }

    fn float_param_values(&self, rng: &mut ChaCha8Rng) -> Vec<f64> {
        const POOL: [f64; 10] = [1.0, -2.5, 0.0, -0.0, 0.1, 3.0, -1.0, 1.0e-3, 7.25, -0.5];
        (0..self.n_float_params).map(|_| POOL[rng.random_range(0..POOL.len())]).collect()
    }

    /// Builds a case's tensors from its shape, pattern and seed; `None` when the plan refuses it.
    pub(crate) fn build(&self, family: &'static str, shape: &Shape, pattern: Pattern, seed: u64) -> Option<Case> {
        let shapes = self.input_shapes(&shape.syms)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut inputs = Vec::with_capacity(shapes.len());
        for (t, s) in self.op.contract.signature.inputs().zip(&shapes) {
            let n = numel(s)?;
            let vals = values(pattern, n, &mut rng, t.dtype);
            inputs.push(Tensor::new(s.clone(), to_data(t.dtype, &vals)).ok()?);
        }
        let mut params = Vec::new();
        let mut fi = 0;
        for p in self.op.contract.signature.params() {
            if p.dtype.is_int() {
                let k = self.syms.iter().position(|s| *s == p.name)?;
                params.push(int_scalar(shape.syms[k], p.dtype)?);
            } else {
                let v = *shape.float_params.get(fi)?;
                fi += 1;
                params.push(match p.dtype {
                    DType::f64 => Scalar::F64(v),
                    DType::f32 | DType::f16 | DType::bf16 => Scalar::F32(v as f32),
                    DType::bool => Scalar::Bool(v != 0.0),
                    _ => return None,
                });
            }
        }
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let bound = self.op.plan.validate(&refs, &params, None).ok()?;
        if bound.out_shapes.iter().any(|s| numel(s).is_none_or(|n| n > MAX_NUMEL)) {
            return None;
        }
        let param_names = self.op.contract.signature.params().map(|p| p.name.clone()).collect();
        Some(Case { index: 0, family, pattern, seed, shape: shape.clone(), sym_names: self.syms.clone(), inputs, params, param_names })
    }

    fn patterns(&self) -> Vec<Pattern> {
        let mut v = Pattern::FINITE_AND_EDGE.to_vec();
        if self.nan {
            v.push(Pattern::Nan);
        }
        v
    }

    /// The whole corpus.
    pub(crate) fn corpus(&self) -> Corpus {
        let mut master = ChaCha8Rng::from_seed(self.op.hash);
        let patterns = self.patterns();
        let mut shapes: Vec<(&'static str, Shape)> = Vec::new();
        let push = |shapes: &mut Vec<(&'static str, Shape)>, family, s: Shape| {
            if !shapes.iter().any(|(_, t)| t.syms == s.syms) {
                shapes.push((family, s));
            }
        };

        // 1. Parameter boundaries x smallest dims.
        let mut combos: Vec<Vec<(usize, i128)>> = vec![Vec::new()];
        for (k, dt) in &self.int_params {
            let cands = self.param_candidates(*dt);
            let mut next = Vec::new();
            for c in &combos {
                for v in &cands {
                    let mut c = c.clone();
                    c.push((*k, *v));
                    next.push(c);
                }
            }
            next.truncate(64);
            combos = next;
        }
        for combo in &combos {
            for (family, floor) in [("smallest", 0), ("smallest non-empty", 1)] {
                if let Some(values) = self.smallest_dims(combo, floor) {
                    let fp = self.float_param_values(&mut master);
                    push(&mut shapes, family, Shape { syms: values, float_params: fp });
                }
            }
        }
        let boundary = shapes.len();

        // 2. Random admissible shapes and parameters.
        let mut randoms = Vec::new();
        let (lo, hi) = match (self.literals.first(), self.literals.last()) {
            (Some(a), Some(b)) => ((*a - 1).max(0), (*b + 1).max(4)),
            _ => (0, 64),
        };
        for _ in 0..2000 {
            if randoms.len() >= RANDOM_CASES {
                break;
            }
            let mut values = vec![0i128; self.syms.len()];
            for v in values[..self.n_dims].iter_mut() {
                // Log-uniform in [1, MAX_DIM].
                let e: f64 = master.random_range(0.0..(MAX_DIM as f64).ln());
                *v = e.exp().round() as i128;
            }
            for (k, dt) in &self.int_params {
                values[*k] = if hi > lo { master.random_range(lo..=hi) } else { lo };
                if !fits(values[*k], *dt) {
                    values[*k] = lo;
                }
            }
            if self.admissible(&values) && !randoms.iter().any(|s: &Shape| s.syms == values) {
                let fp = self.float_param_values(&mut master);
                randoms.push(Shape { syms: values, float_params: fp });
            }
        }
        for s in randoms {
            push(&mut shapes, "random", s);
        }

        let mut cases = Vec::new();
        for (i, (family, shape)) in shapes.iter().enumerate() {
            let pats: Vec<Pattern> = if i < boundary {
                patterns.clone()
            } else {
                vec![patterns[(i - boundary) % patterns.len()], Pattern::Random]
            };
            for p in pats {
                let seed: u64 = master.random();
                if let Some(c) = self.build(family, shape, p, seed) {
                    cases.push(c);
                }
            }
        }
        // Smallest first (stable within equal sizes), so the first failure is the simplest.
        cases.sort_by_key(|c| c.size());
        for (i, c) in cases.iter_mut().enumerate() {
            c.index = i;
        }
        let digest = corpus_digest(&cases);
        Corpus { cases, digest }
    }

    /// Smaller shapes than `shape` to try when shrinking a failing case, nearest first.
    pub(crate) fn shrink_candidates(&self, shape: &Shape) -> Vec<Shape> {
        let mut out = Vec::new();
        for k in 0..self.syms.len() {
            let v = shape.syms[k];
            let mut tries = vec![0, 1, v / 2, v - 2, v - 1];
            tries.retain(|t| *t >= 0 && *t < v);
            tries.sort_unstable();
            tries.dedup();
            for t in tries {
                let mut s = shape.clone();
                s.syms[k] = t;
                if self.admissible(&s.syms) {
                    out.push(s);
                }
            }
        }
        out
    }
}

fn numel(s: &[usize]) -> Option<usize> {
    crate::tensor::checked_numel(s)
}

fn fits(v: i128, dt: DType) -> bool {
    int_scalar(v, dt).is_some()
}

fn int_scalar(v: i128, dt: DType) -> Option<Scalar> {
    Some(match dt {
        DType::u8 => Scalar::U8(u8::try_from(v).ok()?),
        DType::i8 => Scalar::I8(i8::try_from(v).ok()?),
        DType::u16 => Scalar::U16(u16::try_from(v).ok()?),
        DType::i16 => Scalar::I16(i16::try_from(v).ok()?),
        DType::u32 => Scalar::U32(u32::try_from(v).ok()?),
        DType::i32 => Scalar::I32(i32::try_from(v).ok()?),
        DType::u64 => Scalar::U64(u64::try_from(v).ok()?),
        DType::i64 => Scalar::I64(i64::try_from(v).ok()?),
        _ => return None,
    })
}

/// Float limits of a dtype: largest finite, smallest positive normal, smallest and largest
/// subnormal (f32's for non-float dtypes, whose conversion saturates anyway).
#[derive(Clone, Copy)]
struct Limits {
    max: f64,
    min_normal: f64,
    sub_min: f64,
    sub_max: f64,
}

fn limits(dtype: DType) -> Limits {
    match dtype {
        DType::f64 => Limits { max: f64::MAX, min_normal: f64::MIN_POSITIVE, sub_min: 4.9406564584124654e-324, sub_max: f64::MIN_POSITIVE - 4.9406564584124654e-324 },
        DType::f16 => Limits { max: 65504.0, min_normal: 6.103515625e-5, sub_min: 5.960464477539063e-8, sub_max: 6.097555160522461e-5 },
        DType::bf16 => Limits { max: 3.3895313892515355e38, min_normal: f32::MIN_POSITIVE as f64, sub_min: 9.183549615799121e-41, sub_max: 1.1663108012064884e-38 },
        _ => Limits { max: f32::MAX as f64, min_normal: f32::MIN_POSITIVE as f64, sub_min: 1.401298464324817e-45, sub_max: 1.1754942106924411e-38 },
    }
}

fn ordinary(rng: &mut ChaCha8Rng) -> f64 {
    if rng.random_bool(0.2) {
        return rng.random_range(-4i32..=4) as f64;
    }
    let mag: f64 = 10f64.powf(rng.random_range(-3.0..3.0));
    let sign = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
    sign * mag
}

fn edge(rng: &mut ChaCha8Rng, l: Limits) -> f64 {
    let edge: [f64; 16] = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        l.max,
        -l.max,
        l.min_normal,
        -l.min_normal,
        l.sub_min,
        -l.sub_min,
        l.sub_max,
        -l.sub_max,
        1.0,
        -1.0,
        0.5,
        2.0,
    ];
    edge[rng.random_range(0..edge.len())]
}

/// `n` values (as f64, converted to the input's dtype afterwards) following `pattern`.
pub(crate) fn values(pattern: Pattern, n: usize, rng: &mut ChaCha8Rng, dtype: DType) -> Vec<f64> {
    let l = limits(dtype);
    let mut v: Vec<f64> = match pattern {
        Pattern::Random => (0..n).map(|_| ordinary(rng)).collect(),
        Pattern::Edge => (0..n).map(|_| if rng.random_bool(0.6) { edge(rng, l) } else { ordinary(rng) }).collect(),
        Pattern::Constant => {
            let c = if rng.random_bool(0.5) { ordinary(rng) } else { edge(rng, l) };
            vec![c; n]
        }
        Pattern::Sorted | Pattern::ReverseSorted => (0..n).map(|_| if rng.random_bool(0.15) { edge(rng, l) } else { ordinary(rng) }).collect(),
        Pattern::Ties => {
            let pool = [0.0, -0.0, 1.0, -1.0, ordinary(rng), ordinary(rng)];
            (0..n).map(|_| pool[rng.random_range(0..pool.len())]).collect()
        }
        Pattern::SignedZeros => (0..n).map(|_| if rng.random_bool(0.5) { 0.0 } else { -0.0 }).collect(),
        Pattern::Subnormal => (0..n)
            .map(|_| match rng.random_range(0..10) {
                0 => 0.0,
                1 => -0.0,
                2 => ordinary(rng),
                3 => l.sub_min * if rng.random_bool(0.5) { 1.0 } else { -1.0 },
                _ => {
                    // A random multiple of the smallest subnormal below the smallest normal.
                    let steps = (l.min_normal / l.sub_min).floor().min(9.0e15);
                    let m: f64 = rng.random_range(1.0..steps).floor();
                    m * l.sub_min * if rng.random_bool(0.5) { 1.0 } else { -1.0 }
                }
            })
            .collect(),
        Pattern::Extremes => (0..n)
            .map(|_| match rng.random_range(0..6) {
                0 => l.max,
                1 => -l.max,
                2 => l.min_normal,
                3 => -l.min_normal,
                4 => {
                    if rng.random_bool(0.5) {
                        f64::INFINITY
                    } else {
                        f64::NEG_INFINITY
                    }
                }
                _ => ordinary(rng) * l.max * 1e-8,
            })
            .collect(),
        Pattern::Nan => (0..n).map(|_| if rng.random_bool(0.3) { f64::NAN } else { ordinary(rng) }).collect(),
    };
    match pattern {
        Pattern::Sorted => v.sort_by(f64::total_cmp),
        Pattern::ReverseSorted => v.sort_by(|a, b| b.total_cmp(a)),
        _ => {}
    }
    v
}

/// Converts generated values to a dtype (floats round to nearest; integers saturate).
pub(crate) fn to_data(dtype: DType, v: &[f64]) -> Data {
    fn int<T>(v: &[f64], f: impl Fn(f64) -> T) -> Vec<T> {
        v.iter().map(|x| f(if x.is_nan() { 0.0 } else { x.round() })).collect()
    }
    match dtype {
        DType::f32 => Data::F32(v.iter().map(|x| *x as f32).collect()),
        DType::f64 => Data::F64(v.to_vec()),
        DType::f16 => Data::F16(v.iter().map(|x| f16::from_f64(*x)).collect()),
        DType::bf16 => Data::BF16(v.iter().map(|x| bf16::from_f64(*x)).collect()),
        DType::bool => Data::Bool(v.iter().map(|x| *x > 0.0).collect()),
        DType::u8 => Data::U8(int(v, |x| x as u8)),
        DType::i8 => Data::I8(int(v, |x| x as i8)),
        DType::u16 => Data::U16(int(v, |x| x as u16)),
        DType::i16 => Data::I16(int(v, |x| x as i16)),
        DType::u32 => Data::U32(int(v, |x| x as u32)),
        DType::i32 => Data::I32(int(v, |x| x as i32)),
        DType::u64 => Data::U64(int(v, |x| x as u64)),
        DType::i64 => Data::I64(int(v, |x| x as i64)),
    }
}

/// blake3 over every case: family, pattern, seed, symbols, parameters and input bytes.
pub fn corpus_digest(cases: &[Case]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"op-runtime conformance corpus v1\0");
    for c in cases {
        h.update(c.family.as_bytes());
        h.update(c.pattern.name().as_bytes());
        h.update(&c.seed.to_le_bytes());
        for v in &c.shape.syms {
            h.update(&v.to_le_bytes());
        }
        for p in &c.params {
            h.update(p.dtype().name().as_bytes());
            h.update(&p.to_le_bytes());
        }
        for t in &c.inputs {
            h.update(t.dtype().name().as_bytes());
            for d in t.shape() {
                h.update(&(*d as u64).to_le_bytes());
            }
            h.update(&t.data().to_le_bytes());
        }
    }
    *h.finalize().as_bytes()
}
