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
//! 2. `random`: random admissible shapes (dims log-uniform up to [`MAX_DIM`], tensors capped
//!    at [`MAX_NUMEL`] elements) with random admissible parameters, each with one pattern.
//! 3. `large`: at most [`LARGE_SHAPES`] shapes far beyond one workgroup, so that a kernel that
//!    is right only on small inputs (a reduction that covers one workgroup's share, a
//!    dispatch, index or loop that breaks past a few thousand elements) is rejected. Each is
//!    grown from a family-1 shape with every dim >= 1 (shape A from the one with the largest
//!    integer parameters, shape B from one the seeded generator picks) by doubling one dim at
//!    a time (`d -> 2d + 1`), then filling each dim up to its limit and making it odd (never
//!    a multiple of a power-of-two workgroup size: a rank-1 input gets `n = 131_071`).
//!    Limits: every tensor (inputs and outputs) at most [`LARGE_NUMEL`] elements, and the
//!    product of all dims and integer parameters at most [`LARGE_WORK`] (a proxy for the
//!    reference's cost, which runs unoptimised in debug test builds: the median with
//!    `w = 31` gets `n = 67_649`). A maximises the outputs' order of magnitude, growing the
//!    dims in turn, then the inputs (`matmul` gets `513 x 15 x 255`: 2044 workgroups of 64);
//!    B maximises the inputs (a long reduction: `matmul` gets `k = 131_071`). A runs with
//!    pattern `random`, B with `positive` (no cancellation, so that the `accum` bound, of the
//!    order `k * sqrt(len) * eps * S` (see `compare`), is tight against the result itself: a
//!    lost share of the terms cannot hide in it, as it can among mixed signs); one shape that
//!    is both A and B runs with both. Large cases use only these finite patterns (the edge-value
//!    patterns are covered by the small families, where a failure is also easier to read).
//!    Their inputs come from a SplitMix64 stream seeded from the case's seed. A failing large
//!    case shrinks within the large limits (halving a dim is among the tries).
//!
//! Value patterns ([`Pattern`]): random mixed magnitudes, edge values (+0/-0, +-inf,
//! subnormals, largest and smallest finite), constant, sorted, reverse-sorted, ties and
//! duplicates, signed zeros, subnormals, extremes; NaN only when the contract declares `nan`;
//! non-negative random values (large family only).
//! Admissibility is decided by the op's own plan (`Plan::validate`): a case it refuses is
//! dropped, never run.

use crate::core::op::RegisteredOp;
use crate::core::tensor::{bf16, f16, Data, Scalar, Tensor};
use op_contract::contract::{DType, Expr};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::fmt;

/// Largest number of elements of any input or output tensor in a small (`smallest`, `random`)
/// case.
pub const MAX_NUMEL: usize = 4096;
/// Largest dim value the generator tries in the small families.
pub const MAX_DIM: i128 = 512;
/// Random-shape cases per corpus.
pub const RANDOM_CASES: usize = 40;
/// Largest number of elements of any input or output tensor in a `large` case (2^17; a rank-1
/// input gets 131_071 elements: 512 workgroups of 256, 2048 of 64).
pub const LARGE_NUMEL: usize = 1 << 17;
/// Largest product of all symbols (dims and integer parameters, each at least 1) of a `large`
/// case: bounds the reference's work, e.g. `m * k * n` for `matmul`, `n * m` for `conv1d`,
/// `n * w` for the windowed median.
pub const LARGE_WORK: u128 = 1 << 21;
/// Most `large` shapes per corpus.
pub const LARGE_SHAPES: usize = 2;

/// Size limits of a family.
#[derive(Clone, Copy, Debug)]
struct Caps {
    max_dim: i128,
    max_numel: usize,
    max_work: Option<u128>,
}

const SMALL: Caps = Caps { max_dim: MAX_DIM, max_numel: MAX_NUMEL, max_work: None };
const LARGE: Caps = Caps { max_dim: LARGE_NUMEL as i128, max_numel: LARGE_NUMEL, max_work: Some(LARGE_WORK) };

/// Element counts of a shape: every input, then every output.
struct Sizes {
    inputs: Vec<usize>,
    outputs: Vec<usize>,
}

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
    /// Non-negative ordinary values (0 .. 1e3, a few small integers): sums do not cancel.
    /// Used by the `large` family.
    Positive,
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
            Pattern::Positive => "positive random",
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
    /// Family (`smallest`, `smallest non-empty`, `random`, `large`, `shrunk`).
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

    /// Element counts of every input and output for these symbol values, if every dim is a
    /// non-negative integer.
    fn sizes(&self, values: &[i128]) -> Option<Sizes> {
        let env = self.env(values);
        let inputs = self.input_shapes(values)?.iter().map(|s| numel(s)).collect::<Option<Vec<usize>>>()?;
        let outputs = self
            .op
            .contract
            .signature
            .outputs
            .iter()
            .map(|o| {
                o.dims.iter().try_fold(1usize, |n, d| d.eval_map(&env).and_then(|v| usize::try_from(v).ok()).and_then(|v| n.checked_mul(v)))
            })
            .collect::<Option<Vec<usize>>>()?;
        Some(Sizes { inputs, outputs })
    }

    /// Whether symbol values satisfy every constraint, give non-negative dims and stay within
    /// the small families' size caps. Cheap (no tensors); `Plan::validate` has the last word
    /// in [`Gen::build`].
    fn admissible(&self, values: &[i128]) -> bool {
        self.admissible_within(values, SMALL)
    }

    /// [`Gen::admissible`] under the given caps.
    fn admissible_within(&self, values: &[i128], caps: Caps) -> bool {
        let env = self.env(values);
        let sig = &self.op.contract.signature;
        for (k, dt) in &self.int_params {
            if !fits(values[*k], *dt) {
                return false;
            }
        }
        let dims = &values[..self.n_dims];
        if dims.iter().any(|v| *v < 0 || *v > caps.max_dim) {
            return false;
        }
        if let Some(max) = caps.max_work {
            // Dims and integer parameters (a window, a kernel size) alike, each at least 1.
            if values.iter().try_fold(1u128, |w, v| w.checked_mul((*v).max(1) as u128)).is_none_or(|w| w > max) {
                return false;
            }
        }
        if !sig.constraints.iter().all(|c| c.holds(&|s| env.get(s).copied()) == Some(true)) {
            return false;
        }
        let Some(sizes) = self.sizes(values) else { return false };
        sizes.inputs.iter().chain(&sizes.outputs).all(|n| *n <= caps.max_numel)
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
                params.push(Scalar::from_int(p.dtype, shape.syms[k])?);
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
        if bound.out_shapes.iter().any(|s| numel(s).is_none_or(|n| n > LARGE_NUMEL)) {
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
            let pats: Vec<Pattern> =
                if i < boundary { patterns.clone() } else { vec![patterns[(i - boundary) % patterns.len()], Pattern::Random] };
            for p in pats {
                let seed: u64 = master.random();
                if let Some(c) = self.build(family, shape, p, seed) {
                    cases.push(c);
                }
            }
        }
        // 3. Large shapes (drawn after everything above, so the small families do not depend
        // on them), each with its finite patterns.
        let non_empty: Vec<&Shape> =
            shapes[..boundary].iter().map(|(_, s)| s).filter(|s| s.syms[..self.n_dims].iter().all(|d| *d >= 1)).collect();
        for (shape, pats) in self.large_shapes(&non_empty, &mut master) {
            for p in pats {
                let seed: u64 = master.random();
                if let Some(c) = self.build("large", &shape, p, seed) {
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

    /// The `large` shapes (see the module doc) with their patterns: A (largest output, pattern
    /// `random`) grown from the `smallest non-empty` base with the largest integer parameters,
    /// B (largest inputs, pattern `positive`) from a base picked by `rng`; one shape with both
    /// patterns when they coincide.
    fn large_shapes(&self, bases: &[&Shape], rng: &mut ChaCha8Rng) -> Vec<(Shape, Vec<Pattern>)> {
        if bases.is_empty() {
            return Vec::new();
        }
        let n = self.n_dims;
        let a_base = bases.iter().max_by(|x, y| x.syms[n..].cmp(&y.syms[n..])).copied();
        let b_base = bases[rng.random_range(0..bases.len())];
        // A: the outputs' order of magnitude, then the inputs. B: the inputs, then the outputs.
        let log2 = |v: usize| v.max(1).ilog2() as usize;
        let score_a = |s: &Sizes| (log2(s.outputs.iter().sum()), s.inputs.iter().sum::<usize>());
        let score_b = |s: &Sizes| (s.inputs.iter().sum::<usize>(), s.outputs.iter().sum::<usize>());
        let mut out: Vec<(Shape, Vec<Pattern>)> = Vec::new();
        let grown = [(a_base.and_then(|b| self.grow(b, &score_a)), Pattern::Random), (self.grow(b_base, &score_b), Pattern::Positive)];
        for (shape, pattern) in grown {
            let Some(shape) = shape else { continue };
            if let Some((_, pats)) = out.iter_mut().find(|(s, _)| s.syms == shape.syms) {
                pats.push(pattern);
            } else if out.len() < LARGE_SHAPES {
                out.push((shape, vec![pattern]));
            }
        }
        out
    }

    /// Grows `base` within the large caps: doubles (`d -> 2d + 1`) the dim whose doubling
    /// improves `score` most, while any does; then fills each dim up to the largest value that
    /// stays admissible without lowering the score, and makes it odd where admissible. `None`
    /// when nothing exceeds the small caps.
    fn grow(&self, base: &Shape, score: &dyn Fn(&Sizes) -> (usize, usize)) -> Option<Shape> {
        let adm = |v: &[i128]| self.admissible_within(v, LARGE);
        let score_of = |v: &[i128]| self.sizes(v).map(|s| score(&s));
        let mut cur = base.syms.clone();
        if !adm(&cur) {
            return None;
        }
        let mut best = score_of(&cur)?;
        loop {
            // Among the doublings that improve the score: the best first component, then the
            // smallest dim (balanced growth: `matmul`'s `m` and `n` take turns), then the best
            // second component.
            let mut next: Option<(usize, (usize, i128, usize))> = None;
            for k in 0..self.n_dims {
                let mut c = cur.clone();
                c[k] = c[k] * 2 + 1;
                if !adm(&c) {
                    continue;
                }
                let Some(s) = score_of(&c) else { continue };
                let key = (s.0, -cur[k], s.1);
                if s > best && next.is_none_or(|(_, t)| key > t) {
                    next = Some((k, key));
                }
            }
            let Some((k, (s0, _, s1))) = next else { break };
            cur[k] = cur[k] * 2 + 1;
            best = (s0, s1);
        }
        for k in 0..self.n_dims {
            // Largest admissible value in [cur, 2 cur + 1] that keeps the score (bisection).
            let (mut lo, mut hi) = (cur[k], cur[k] * 2 + 2);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                let mut c = cur.clone();
                c[k] = mid;
                if adm(&c) && score_of(&c).is_some_and(|s| s >= best) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            cur[k] = lo;
            best = score_of(&cur)?;
            if cur[k] % 2 == 0 && cur[k] > 0 {
                let mut c = cur.clone();
                c[k] -= 1;
                if adm(&c) {
                    cur = c;
                    best = score_of(&cur)?;
                }
            }
        }
        let sizes = self.sizes(&cur)?;
        if sizes.inputs.iter().chain(&sizes.outputs).all(|n| *n <= MAX_NUMEL) {
            return None;
        }
        Some(Shape { syms: cur, float_params: base.float_params.clone() })
    }

    /// Smaller shapes than `shape` to try when shrinking a failing case, nearest first. A
    /// `large` shape shrinks within the large caps (halving), a small one within the small caps.
    pub(crate) fn shrink_candidates(&self, shape: &Shape) -> Vec<Shape> {
        let caps = if self.admissible(&shape.syms) { SMALL } else { LARGE };
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
                if self.admissible_within(&s.syms, caps) {
                    out.push(s);
                }
            }
        }
        out
    }
}

fn numel(s: &[usize]) -> Option<usize> {
    crate::core::tensor::checked_numel(s)
}

fn fits(v: i128, dt: DType) -> bool {
    Scalar::from_int(dt, v).is_some()
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
        DType::f64 => Limits {
            max: f64::MAX,
            min_normal: f64::MIN_POSITIVE,
            sub_min: f64::from_bits(1),
            sub_max: f64::from_bits(f64::MIN_POSITIVE.to_bits() - 1),
        },
        DType::f16 => Limits { max: 65504.0, min_normal: 6.103515625e-5, sub_min: 5.960464477539063e-8, sub_max: 6.097555160522461e-5 },
        DType::bf16 => Limits {
            max: 3.3895313892515355e38,
            min_normal: f32::MIN_POSITIVE as f64,
            sub_min: 9.183549615799121e-41,
            sub_max: 1.1663108012064884e-38,
        },
        _ => Limits {
            max: f32::MAX as f64,
            min_normal: f32::MIN_POSITIVE as f64,
            sub_min: 1.401298464324817e-45,
            sub_max: 1.1754942106924411e-38,
        },
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

/// SplitMix64, the per-element generator of tensors beyond [`MAX_NUMEL`] (seeded from the
/// case's ChaCha stream): ChaCha costs ~250 ns a draw in an unoptimised test build, which
/// would make a `large` case's inputs cost more than running it.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// What [`ordinary`] draws, from one 64-bit draw: a small integer in -4..=4 one time in
    /// five, else a sign times 10^u, u uniform in [-3, 3).
    fn ordinary(&mut self) -> f64 {
        let z = self.next();
        if z.is_multiple_of(5) {
            return ((z >> 8) % 9) as f64 - 4.0;
        }
        let u = (z >> 11) as f64 / (1u64 << 53) as f64;
        let sign = if z & 2 == 0 { 1.0 } else { -1.0 };
        sign * 10f64.powf(6.0 * u - 3.0)
    }
}

/// `n` values (as f64, converted to the input's dtype afterwards) following `pattern`.
pub(crate) fn values(pattern: Pattern, n: usize, rng: &mut ChaCha8Rng, dtype: DType) -> Vec<f64> {
    if n > MAX_NUMEL && matches!(pattern, Pattern::Random | Pattern::Positive) {
        let mut fast = SplitMix(rng.random());
        let abs = pattern == Pattern::Positive;
        return (0..n).map(|_| fast.ordinary()).map(|v| if abs { v.abs() } else { v }).collect();
    }
    let l = limits(dtype);
    let mut v: Vec<f64> = match pattern {
        Pattern::Random => (0..n).map(|_| ordinary(rng)).collect(),
        Pattern::Edge => (0..n).map(|_| if rng.random_bool(0.6) { edge(rng, l) } else { ordinary(rng) }).collect(),
        Pattern::Constant => {
            let c = if rng.random_bool(0.5) { ordinary(rng) } else { edge(rng, l) };
            vec![c; n]
        }
        Pattern::Sorted | Pattern::ReverseSorted => {
            (0..n).map(|_| if rng.random_bool(0.15) { edge(rng, l) } else { ordinary(rng) }).collect()
        }
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
        Pattern::Positive => (0..n).map(|_| ordinary(rng).abs()).collect(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::registry::Registry;

    fn gen_corpus(reg: &Registry, name: &str) -> Corpus {
        Gen::new(&reg.lookup(name).expect("built-in").op()).corpus()
    }

    #[test]
    fn every_builtin_gets_large_cases_far_beyond_one_workgroup_within_the_caps() {
        let reg = Registry::with_builtins();
        for op in reg.ops() {
            let gen = Gen::new(&op);
            let corpus = gen.corpus();
            let large: Vec<&Case> = corpus.cases.iter().filter(|c| c.family == "large").collect();
            assert!((1..=2 * LARGE_SHAPES).contains(&large.len()), "{}: {} large cases", op.id, large.len());
            assert!(
                large.iter().any(|c| c.pattern == Pattern::Positive) && large.iter().any(|c| c.pattern == Pattern::Random),
                "{}",
                op.id
            );
            for c in &large {
                let numels: Vec<usize> = c.inputs.iter().map(Tensor::numel).collect();
                assert!(numels.iter().any(|n| *n > 16 * 256), "{}: {c} is not large", op.id);
                assert!(numels.iter().all(|n| *n <= LARGE_NUMEL), "{}: {c}", op.id);
                assert!(gen.admissible_within(&c.shape.syms, LARGE) && !gen.admissible(&c.shape.syms), "{}: {c}", op.id);
                for t in &c.inputs {
                    let v = t.data().to_f64_vec().expect("floats");
                    assert!(v.iter().all(|x| x.is_finite()), "{}: non-finite values in {c}", op.id);
                    assert!(c.pattern != Pattern::Positive || v.iter().all(|x| *x >= 0.0), "{}: {c}", op.id);
                    if let [n] = t.shape() {
                        assert!(*n <= 16 || n % 2 == 1, "{}: rank-1 length {n} is even in {c}", op.id);
                    }
                }
            }
            // The small families keep their caps, and come first.
            let first_large = corpus.cases.iter().position(|c| c.family == "large").expect("large");
            assert!(corpus.cases[..first_large].iter().all(|c| c.inputs.iter().all(|t| t.numel() <= MAX_NUMEL)), "{}", op.id);
            assert!(corpus.cases[first_large..].iter().all(|c| c.family == "large"), "{}", op.id);
        }
        let sum = gen_corpus(&reg, "builtin/sum");
        assert!(sum.cases.iter().filter(|c| c.family == "large").all(|c| c.sym("n") == Some(131_071)));
        // matmul: a large output (many workgroups, every dim > 1) and a long reduction.
        let mm = gen_corpus(&reg, "builtin/matmul");
        let dims = |c: &Case| [c.sym("m").unwrap(), c.sym("k").unwrap(), c.sym("n").unwrap()];
        let large: Vec<[i128; 3]> = mm.cases.iter().filter(|c| c.family == "large").map(dims).collect();
        assert!(large.iter().any(|[m, k, n]| m * n > 64 * 1000 && *k > 1), "{large:?}");
        assert!(large.iter().any(|[_, k, _]| *k > 65_535), "{large:?}");
        let conv = gen_corpus(&reg, "builtin/conv1d");
        assert!(conv
            .cases
            .iter()
            .any(|c| c.family == "large" && c.sym("n").unwrap() - c.sym("m").unwrap() >= 64 * 1000 && c.sym("m").unwrap() > 1));
    }

    #[test]
    fn large_shapes_shrink_within_the_large_caps() {
        let reg = Registry::with_builtins();
        let op = reg.lookup("builtin/matmul").expect("built-in").op();
        let gen = Gen::new(&op);
        let corpus = gen.corpus();
        let big = corpus.cases.iter().find(|c| c.family == "large").expect("a large case");
        let cands = gen.shrink_candidates(&big.shape);
        assert!(!cands.is_empty());
        for s in &cands {
            assert!(gen.admissible_within(&s.syms, LARGE), "{:?}", s.syms);
            assert!(s.syms.iter().zip(&big.shape.syms).all(|(a, b)| a <= b) && s.syms != big.shape.syms, "{:?}", s.syms);
        }
        // Halving is among them, so a large failure shrinks to one still beyond the small caps.
        assert!(cands.iter().any(|s| !gen.admissible(&s.syms)));
        // A small shape shrinks within the small caps.
        let small = corpus.cases.iter().rev().find(|c| c.family == "random").expect("a random case");
        assert!(gen.shrink_candidates(&small.shape).iter().all(|s| gen.admissible(&s.syms)));
    }
}
