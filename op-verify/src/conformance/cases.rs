//! The case generator: every conformance case is derived from the op's signature and seeded
//! from its content hash; the author picks nothing. Owns shapes, parameter values and input
//! data; it must not run kernels or compare results (see `compare` and the parent module).
//! Admissibility, boundary values, random dims and magnitudes come from the sampling module
//! shared with gradcheck (`op_contract::sample`); everything is drawn from its SplitMix64 `Rng`.
//!
//! Families, in corpus order (smallest first, so the first failure is the simplest one):
//! 1. `smallest`: for each boundary value of the integer parameters (every constraint literal
//!    and its neighbours that is admissible, e.g. `w = 1, 3, 31` for the median), the smallest
//!    admissible dims (coordinate descent from an admissible start: the median gets `n = w`,
//!    i.e. exactly one output), once with dims allowed to reach 0 and once with dims >= 1;
//!    each shape with every value pattern. Then `empty dims`: every pattern of empty and
//!    non-empty dims the constraints admit (each subset of the dims at 0, the others at their
//!    smallest and at 2 or more: `[1, 0]`, `[2, 0]`, `[0, 1]`, `[0, 2]`, `[0, 0]` for
//!    `x: f32[rows, cols]`), with every pattern where an input and an output hold elements.
//! 2. `random`: random admissible shapes (dims log-uniform up to [`MAX_DIM`], one draw in four
//!    with its dims rounded down to powers of two, distinct values for distinct symbols unless
//!    the constraints tie them, tensors capped at [`MAX_NUMEL`] elements) with random
//!    admissible parameters (integers around the constraints' literals, and on half the draws
//!    from 0 up past the largest), each with one pattern.
//! 3. `large`: at most [`LARGE_SHAPES`] shapes far beyond one workgroup, so that a kernel that
//!    is right only on small inputs (a reduction that covers one workgroup's share, a
//!    dispatch, index or loop that breaks past a few thousand elements) is rejected. Each is
//!    grown from a family-1 shape with every dim >= 1 (shape A from the one with the largest
//!    integer parameters, shape B from one the seeded generator picks) by doubling one dim at
//!    a time (`d -> 2d + 1`, or `2d` under a divisibility constraint), then filling each dim up to its limit and making it odd (never
//!    a multiple of a power-of-two workgroup size: a rank-1 input gets `n = 131_071`).
//!    Limits: every tensor (inputs and outputs) at most [`LARGE_NUMEL`] elements, and the
//!    product of all dims and integer parameters at most [`LARGE_WORK`] (a proxy for the
//!    reference's cost, which runs unoptimised in debug test builds: the median with
//!    `w = 31` gets `n = 67_649`). A maximises the outputs' order of magnitude, growing the
//!    dims in turn, then the inputs (`matmul` gets `513 x 15 x 255`: 2044 workgroups of 64);
//!    B maximises the inputs (a long reduction: `matmul` gets `k = 131_071`). A runs with
//!    pattern `random`, B with `positive` (no cancellation, so that the `accum` bound, of the
//!    order `k * log2(len) * eps * S` (see `compare`), is tight against the result itself: a
//!    lost share of the terms cannot hide in it, as it can among mixed signs) and, for `accum`
//!    ops, `biased` (one value f32 cannot represent, 0.1 per input: a sequential f32 sum of it
//!    drifts far from the exact one, so a bound that trusted the f32 reference's own error
//!    would hide a kernel that drops terms there). One shape that is both A and B runs with
//!    all of them. Large cases use only these finite patterns (the edge-value patterns are
//!    covered by the small families, where a failure is also easier to read). A failing large
//!    case shrinks within the large limits (halving a dim is among the tries).
//!
//! Value patterns ([`Pattern`]): random mixed magnitudes, edge values (+0/-0, +-inf,
//! subnormals, largest and smallest finite), constant, sorted, reverse-sorted, ties and
//! duplicates, signed zeros, subnormals, extremes, NaN; non-negative random values and the
//! biased constant (large family only). Every float op gets them all, NaN included, unless a
//! declared `domain(...)` narrows an input: its values are then kept inside (a value outside
//! is replaced by its negation when that is inside, else by a fresh value inside), and NaN
//! stays only where the op declares a NaN policy ([`Contract::admits_nan`]).
//! Admissibility is decided by the op's own plan (`Plan::validate`): a case it refuses is
//! dropped, never run.
//!
//! [`Contract::admits_nan`]: op_contract::contract::Contract::admits_nan

use op_contract::contract::{DType, Domain, Tolerance};
use op_contract::sample::{in_domain, Caps, Draw, Magnitudes, Rng, Sizes, Space};
use op_core::error::DispatchError;
use op_core::op::RegisteredOp;
use op_core::tensor::{bf16, f16, Data, Scalar, Tensor};
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
/// The value of the `biased` pattern for input `k` is `BIASED * (k + 1)`: not representable
/// in binary, so every add of a long sequential f32 sum of it rounds the same way.
pub const BIASED: f64 = 0.1;
/// Mixed into the content hash to seed conformance (gradcheck uses another salt).
const SALT: u64 = 0x636f_6e66_6f72_6d00;

const SMALL: Caps = Caps { max_dim: MAX_DIM, max_numel: MAX_NUMEL, max_work: None };
const LARGE: Caps = Caps { max_dim: LARGE_NUMEL as i128, max_numel: LARGE_NUMEL, max_work: Some(LARGE_WORK) };

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
    /// Ordinary values with NaNs, at least one per non-empty input (for every input whose
    /// domain admits NaN).
    Nan,
    /// Non-negative ordinary values (0 .. 1e3, a few small integers): sums do not cancel.
    /// Used by the `large` family.
    Positive,
    /// Every element of input `k` equal to `BIASED` * (k + 1)`: biases a sequential f32 sum.
    /// Used by the `large` family of `accum` ops.
    Biased,
}

impl Pattern {
    /// Every pattern of the small families (NaN is added where an input admits it).
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
            Pattern::Biased => "biased sum",
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
    /// A hand-made case of `op`: `inputs` and `params` as a call passes them, its symbols bound
    /// from them as dispatch binds them (the call's typed error where they do not fit the
    /// signature). Index 0, family `hand-made`, pattern `Random`, seed 0: set others by struct
    /// update, `Case { pattern: Pattern::Extremes, ..Case::of(op, inputs, params)? }`.
    pub fn of(op: &RegisteredOp, inputs: Vec<Tensor>, params: Vec<Scalar>) -> Result<Case, DispatchError> {
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let bound = op.plan.validate(&refs, &params, None)?;
        let mut syms = bound.values.to_vec();
        // A data-dependent output's free symbol stays 0, as the generator leaves it (`validate`
        // gives it the output's bound).
        for f in &bound.free {
            syms[f.slot] = 0;
        }
        let sig = &op.contract.signature;
        let float_params = sig.params().zip(&params).filter(|(p, _)| !p.dtype.is_int()).filter_map(|(_, v)| v.as_f64()).collect();
        Ok(Case {
            index: 0,
            family: "hand-made",
            pattern: Pattern::Random,
            seed: 0,
            shape: Shape { syms, float_params },
            sym_names: op.symbols().to_vec(),
            inputs,
            params,
            param_names: sig.params().map(|p| p.name.clone()).collect(),
        })
    }

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

/// What the values of one tensor input may be.
#[derive(Clone, Debug)]
struct InputValues {
    dtype: DType,
    domain: Option<Domain>,
    nan: bool,
}

/// What the generator knows about an op's signature.
pub struct Gen<'a> {
    op: &'a RegisteredOp,
    space: Space<'a>,
    n_float_params: usize,
    inputs: Vec<InputValues>,
}

impl<'a> Gen<'a> {
    #[doc(hidden)]
    pub fn new(op: &'a RegisteredOp) -> Gen<'a> {
        let c = &op.contract;
        let sig = &c.signature;
        let inputs = sig
            .inputs()
            .map(|t| InputValues {
                dtype: t.dtype,
                domain: t.dtype.is_float().then(|| c.domain_of(&t.name).cloned()).flatten(),
                nan: t.dtype.is_float() && c.admits_nan(&t.name),
            })
            .collect();
        Gen { op, space: Space::new(sig), n_float_params: sig.params().filter(|p| !p.dtype.is_int()).count(), inputs }
    }

    /// The admissibility oracle (dims, parameters, size caps).
    #[cfg(test)]
    pub fn space(&self) -> &Space<'a> {
        &self.space
    }

    fn admissible(&self, values: &[i128]) -> bool {
        self.space.admissible(values, SMALL)
    }

    /// Float parameter values: drawn from a fixed pool plus the literals of the float
    /// constraints (their boundaries, e.g. `lo == hi` through a shared literal) until the float
    /// constraints hold ([`Space::admitted_params`]); `None` (no case of this shape) when no
    /// draw does: an op is not conformed on parameters it refuses.
    fn float_param_values(&self, rng: &mut Rng) -> Option<Vec<f64>> {
        const POOL: [f64; 12] = [1.0, -2.5, 0.0, -0.0, 0.1, 3.0, -1.0, 1.0e-3, 7.25, -0.5, 12.5, -40.0];
        let sig = &self.op.contract.signature;
        let names: Vec<&str> = sig.params().filter(|p| !p.dtype.is_int()).map(|p| p.name.as_str()).collect();
        let literals = sig.float_constraints.iter().flat_map(|c| &c.terms).filter_map(|t| match t {
            op_contract::contract::FloatTerm::Lit(l) => Some(l.0),
            _ => None,
        });
        let pool: Vec<f64> = POOL.iter().copied().chain(literals).collect();
        let draw = |rng: &mut Rng| Some((0..self.n_float_params).map(|_| pool[rng.index(pool.len())]).collect::<Vec<f64>>());
        self.space.admitted_params(rng, draw, |values, n| names.iter().position(|m| *m == n).map(|i| values[i]))
    }

    /// Builds a case's tensors from its shape, pattern and seed; `None` when the plan refuses it.
    pub fn build(&self, family: &'static str, shape: &Shape, pattern: Pattern, seed: u64) -> Option<Case> {
        let shapes = self.space.input_shapes(&shape.syms)?;
        let mut rng = Rng::new(seed);
        let mut inputs = Vec::with_capacity(shapes.len());
        for (k, (iv, s)) in self.inputs.iter().zip(&shapes).enumerate() {
            let n = op_core::tensor::checked_numel(s)?;
            let mut vals = values(pattern, n, &mut rng, iv.dtype);
            if pattern == Pattern::Biased {
                vals.iter_mut().for_each(|v| *v = BIASED * (k + 1) as f64);
            }
            if let Some(d) = &iv.domain {
                vals.iter_mut().filter(|v| !(v.is_nan() && iv.nan)).for_each(|v| *v = in_domain(*v, d, Magnitudes::ORDINARY, &mut rng));
            }
            inputs.push(Tensor::new(s.clone(), to_data(iv.dtype, &vals)).ok()?);
        }
        let params = self.params(shape)?;
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let bound = self.op.plan.validate(&refs, &params, None).ok()?;
        if bound.out_shapes.iter().any(|s| op_core::tensor::checked_numel(s).is_none_or(|n| n > LARGE_NUMEL)) {
            return None;
        }
        let param_names = self.op.contract.signature.params().map(|p| p.name.clone()).collect();
        let sym_names = self.space.syms().to_vec();
        Some(Case { index: 0, family, pattern, seed, shape: shape.clone(), sym_names, inputs, params, param_names })
    }

    /// The parameters of a shape, in signature order.
    fn params(&self, shape: &Shape) -> Option<Vec<Scalar>> {
        let mut params = Vec::new();
        let mut fi = 0;
        for p in self.op.contract.signature.params() {
            if p.dtype.is_int() {
                params.push(Scalar::from_int(p.dtype, shape.syms[self.space.slot(&p.name)?])?);
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
        Some(params)
    }

    fn patterns(&self) -> Vec<Pattern> {
        let mut v = Pattern::FINITE_AND_EDGE.to_vec();
        if self.inputs.iter().any(|i| i.nan) {
            v.push(Pattern::Nan);
        }
        v
    }

    /// The whole corpus: the three families, smallest case first.
    pub fn corpus(&self) -> Corpus {
        let mut master = Rng::from_hash(&self.op.hash, SALT);
        let mut shapes: Vec<(&'static str, Shape)> = Vec::new();
        let push = |shapes: &mut Vec<(&'static str, Shape)>, family, s: Shape| {
            if !shapes.iter().any(|(_, t)| t.syms == s.syms) {
                shapes.push((family, s));
            }
        };
        for (family, s) in self.boundary_shapes(&mut master) {
            push(&mut shapes, family, s);
        }
        let boundary = shapes.len();
        for s in self.empty_shapes(&mut master) {
            push(&mut shapes, "empty dims", s);
        }
        let edges = shapes.len();
        for s in self.random_shapes(&mut master) {
            push(&mut shapes, "random", s);
        }
        let mut cases = self.small_cases(&shapes, (boundary, edges), &mut master);
        // The large family is drawn after everything above, so the small families do not
        // depend on it.
        let non_empty: Vec<&Shape> =
            shapes[..boundary].iter().map(|(_, s)| s).filter(|s| s.syms[..self.space.n_dims()].iter().all(|d| *d >= 1)).collect();
        for (shape, pats) in self.large_shapes(&non_empty, &mut master) {
            for p in pats {
                cases.extend(self.build("large", &shape, p, master.next_u64()));
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

    /// Family 1: parameter boundaries x smallest dims (with dims reaching 0, then >= 1).
    fn boundary_shapes(&self, rng: &mut Rng) -> Vec<(&'static str, Shape)> {
        let mut out = Vec::new();
        for combo in self.space.boundary_combos(64) {
            for (family, floor) in [("smallest", 0), ("smallest non-empty", 1)] {
                if let Some(values) = self.space.smallest(&combo, floor, SMALL) {
                    if let Some(float_params) = self.float_param_values(rng) {
                        out.push((family, Shape { syms: values, float_params }));
                    }
                }
            }
        }
        out
    }

    /// Family 1b: every pattern of empty and non-empty dims the constraints admit (an empty
    /// inner dim beside non-empty outer ones, `[2, 0]`, is where a reference that reduces a row
    /// finds nothing to reduce), the non-empty dims at their smallest and at 2 or more.
    fn empty_shapes(&self, rng: &mut Rng) -> Vec<Shape> {
        let combos = self.space.boundary_combos(64);
        self.space
            .empty_patterns(&combos, SMALL)
            .into_iter()
            .filter_map(|syms| Some(Shape { syms, float_params: self.float_param_values(rng)? }))
            .collect()
    }

    /// The patterns of an `empty dims` shape: every one where an input and an output both hold
    /// elements (the values still matter), one (`random`) where every input or every output is
    /// empty.
    fn empty_shape_patterns(&self, shape: &Shape, all: &[Pattern]) -> Vec<Pattern> {
        match self.space.sizes(&shape.syms) {
            Some(s) if s.inputs.iter().any(|n| *n > 0) && s.outputs.iter().any(|n| *n > 0) => all.to_vec(),
            _ => vec![Pattern::Random],
        }
    }

    /// Family 2: up to [`RANDOM_CASES`] random admissible shapes, distinct symbols with distinct
    /// values first (tied ones only where too few distinct ones are admissible).
    fn random_shapes(&self, rng: &mut Rng) -> Vec<Shape> {
        // Parameters around the literals (from just below the smallest, at least 0, to past
        // the largest) on even draws, and from 0 (or below a negative smallest literal) on odd
        // ones: a constraint with one literal (`k <= 16`) bounds the range on one side only,
        // and its interior (`4..=14`) must be drawn too, not only the literal's neighbours
        // (the boundary family has 0..=3 and the literals), while `k >= 1000` keeps its draws.
        let lits = self.space.literals();
        let (lo, wide, hi) = match (lits.first(), lits.last()) {
            (Some(a), Some(b)) => ((*a - 1).max(0), (*a - 1).min(0), (*b + 1).max(4)),
            _ => (0, 0, 64),
        };
        let (mut distinct, mut tied): (Vec<Shape>, Vec<Shape>) = (Vec::new(), Vec::new());
        for k in 0..4000 {
            if distinct.len() >= RANDOM_CASES || (k == 2000 && distinct.len() + tied.len() >= RANDOM_CASES) {
                break;
            }
            // Dims up to MAX_DIM first; where those 2000 draws leave the family short (several
            // dims under the numel cap, parameters confined jointly from 0 up, a permutation's
            // `p0 < 4, p0 != p1, ..`), 2000 more with dims up to 16 and parameters from 0.
            let from = if k % 2 == 1 { wide } else { lo };
            let how = if k < 2000 { Draw { dims: (1, MAX_DIM), params: (from, hi) } } else { Draw { dims: (1, 16), params: (wide, hi) } };
            let mut values = self.space.draw(rng, how, &[]);
            if k % 4 == 3 {
                aligned(&mut values[..self.space.n_dims()]);
            }
            if !self.admissible(&values) || distinct.iter().chain(&tied).any(|s| s.syms == values) {
                continue;
            }
            let Some(float_params) = self.float_param_values(rng) else { continue };
            let s = Shape { syms: values, float_params };
            if self.space.distinct(&s.syms) {
                distinct.push(s);
            } else {
                tied.push(s);
            }
        }
        let fill = RANDOM_CASES.saturating_sub(distinct.len());
        distinct.extend(tied.into_iter().take(fill));
        distinct
    }

    /// The cases of the small families: every pattern for each boundary shape (`shapes` up to
    /// `boundary`), the patterns that matter for each `empty dims` shape (up to `edges`), one
    /// pattern (in turn) and `random` for each random shape.
    fn small_cases(&self, shapes: &[(&'static str, Shape)], (boundary, edges): (usize, usize), rng: &mut Rng) -> Vec<Case> {
        let patterns = self.patterns();
        let mut cases = Vec::new();
        for (i, (family, shape)) in shapes.iter().enumerate() {
            let pats: Vec<Pattern> = if i < boundary {
                patterns.clone()
            } else if i < edges {
                self.empty_shape_patterns(shape, &patterns)
            } else {
                vec![patterns[(i - edges) % patterns.len()], Pattern::Random]
            };
            for p in pats {
                let seed = rng.next_u64();
                cases.extend(self.build(family, shape, p, seed));
            }
        }
        cases
    }

    /// The `large` shapes (see the module doc) with their patterns: A (largest output, pattern
    /// `random`) grown from the `smallest non-empty` base with the largest integer parameters,
    /// B (largest inputs, pattern `positive`, and `biased` for `accum` ops) from a base picked
    /// by `rng`; one shape with every pattern when they coincide.
    fn large_shapes(&self, bases: &[&Shape], rng: &mut Rng) -> Vec<(Shape, Vec<Pattern>)> {
        if bases.is_empty() {
            return Vec::new();
        }
        let n = self.space.n_dims();
        let a_base = bases.iter().max_by(|x, y| x.syms[n..].cmp(&y.syms[n..])).copied();
        let b_base = bases[rng.index(bases.len())];
        // A: the outputs' order of magnitude, then the inputs. B: the inputs, then the outputs.
        let log2 = |v: usize| v.max(1).ilog2() as usize;
        let score_a = |s: &Sizes| (log2(s.outputs.iter().sum()), s.inputs.iter().sum::<usize>());
        let score_b = |s: &Sizes| (s.inputs.iter().sum::<usize>(), s.outputs.iter().sum::<usize>());
        let mut b_patterns = vec![Pattern::Positive];
        if matches!(self.op.contract.tolerance, Tolerance::Accum(_)) {
            b_patterns.push(Pattern::Biased);
        }
        let mut out: Vec<(Shape, Vec<Pattern>)> = Vec::new();
        let grown = [(a_base.and_then(|b| self.grow(b, &score_a)), vec![Pattern::Random]), (self.grow(b_base, &score_b), b_patterns)];
        for (shape, patterns) in grown {
            let Some(shape) = shape else { continue };
            if let Some((_, pats)) = out.iter_mut().find(|(s, _)| s.syms == shape.syms) {
                pats.extend(patterns);
            } else if out.len() < LARGE_SHAPES {
                out.push((shape, patterns));
            }
        }
        out
    }

    /// Grows `base` within the large caps: doubles (`d -> 2d + 1`, or `2d` where only that is
    /// admissible, as under `n % c == 0`) the dim whose doubling
    /// improves `score` most, while any does; then fills each dim up to the largest value that
    /// stays admissible without lowering the score, and makes it odd where admissible. `None`
    /// when nothing exceeds the small caps.
    fn grow(&self, base: &Shape, score: &dyn Fn(&Sizes) -> (usize, usize)) -> Option<Shape> {
        let adm = |v: &[i128]| self.space.admissible(v, LARGE);
        let score_of = |v: &[i128]| self.space.sizes(v).map(|s| score(&s));
        let mut cur = base.syms.clone();
        if !adm(&cur) {
            return None;
        }
        let mut best = score_of(&cur)?;
        loop {
            // Among the doublings that improve the score: the best first component, then the
            // smallest dim (balanced growth: `matmul`'s `m` and `n` take turns), then the best
            // second component.
            let mut next: Option<(usize, (usize, i128, usize), i128)> = None;
            for k in 0..self.space.n_dims() {
                // `2d + 1`, else `2d` (a divisibility constraint, `n % c == 0`, admits only the
                // even doubling).
                let mut c = cur.clone();
                c[k] = c[k] * 2 + 1;
                if !adm(&c) {
                    c[k] -= 1;
                    if c[k] == cur[k] || !adm(&c) {
                        continue;
                    }
                }
                let Some(s) = score_of(&c) else { continue };
                let key = (s.0, -cur[k], s.1);
                if s > best && next.is_none_or(|(_, t, _)| key > t) {
                    next = Some((k, key, c[k]));
                }
            }
            let Some((k, (s0, _, s1), grown)) = next else { break };
            cur[k] = grown;
            best = (s0, s1);
        }
        for k in 0..self.space.n_dims() {
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
        let sizes = self.space.sizes(&cur)?;
        if sizes.inputs.iter().chain(&sizes.outputs).all(|n| *n <= MAX_NUMEL) {
            return None;
        }
        Some(Shape { syms: cur, float_params: base.float_params.clone() })
    }

    /// Smaller shapes than `shape` to try when shrinking a failing case, nearest first. A
    /// `large` shape shrinks within the large caps (halving), a small one within the small caps.
    pub fn shrink_candidates(&self, shape: &Shape) -> Vec<Shape> {
        let caps = if self.admissible(&shape.syms) { SMALL } else { LARGE };
        self.space
            .shrink_candidates(&shape.syms, caps)
            .into_iter()
            .map(|syms| Shape { syms, float_params: shape.float_params.clone() })
            .collect()
    }
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

/// Every dim of at least 8 rounded down to a power of two: one random draw in four is
/// aligned, so that a kernel whose blocked loop breaks where `n` is a whole number of blocks
/// (its last block empty, or taken as partial) meets such an `n` (the other families' lengths
/// are odd or small: the large case's `131_071` is never a multiple of a block).
fn aligned(dims: &mut [i128]) {
    for d in dims.iter_mut().filter(|d| **d >= 8) {
        *d = 1 << d.ilog2();
    }
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

/// An ordinary value: a small integer in -4..=4 one time in five (exact values, ties), else a
/// magnitude log-uniform over 1e-3..1e3 with a random sign.
fn ordinary(rng: &mut Rng) -> f64 {
    if rng.chance(0.2) {
        return rng.int_in(-4, 4) as f64;
    }
    Magnitudes::ORDINARY.value(rng, None)
}

fn edge(rng: &mut Rng, l: Limits) -> f64 {
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
    edge[rng.index(edge.len())]
}

fn signed(rng: &mut Rng, v: f64) -> f64 {
    rng.sign() * v
}

fn subnormal(rng: &mut Rng, l: Limits) -> f64 {
    match rng.index(10) {
        0 => 0.0,
        1 => -0.0,
        2 => ordinary(rng),
        3 => signed(rng, l.sub_min),
        _ => {
            // A random multiple of the smallest subnormal below the smallest normal.
            let steps = (l.min_normal / l.sub_min).floor().min(9.0e15);
            let m = rng.uniform(1.0, steps).floor();
            signed(rng, m * l.sub_min)
        }
    }
}

fn extreme(rng: &mut Rng, l: Limits) -> f64 {
    match rng.index(6) {
        0 => l.max,
        1 => -l.max,
        2 => l.min_normal,
        3 => -l.min_normal,
        4 => signed(rng, f64::INFINITY),
        _ => ordinary(rng) * l.max * 1e-8,
    }
}

/// `n` values (as f64, converted to the input's dtype afterwards) following `pattern` (before
/// any domain is applied; `biased` is set by the caller).
pub fn values(pattern: Pattern, n: usize, rng: &mut Rng, dtype: DType) -> Vec<f64> {
    let l = limits(dtype);
    let mut v: Vec<f64> = match pattern {
        Pattern::Random | Pattern::Biased => (0..n).map(|_| ordinary(rng)).collect(),
        Pattern::Edge => (0..n).map(|_| if rng.chance(0.6) { edge(rng, l) } else { ordinary(rng) }).collect(),
        Pattern::Constant => {
            let c = if rng.chance(0.5) { ordinary(rng) } else { edge(rng, l) };
            vec![c; n]
        }
        Pattern::Sorted | Pattern::ReverseSorted => (0..n).map(|_| if rng.chance(0.15) { edge(rng, l) } else { ordinary(rng) }).collect(),
        Pattern::Ties => {
            let pool = [0.0, -0.0, 1.0, -1.0, ordinary(rng), ordinary(rng)];
            (0..n).map(|_| pool[rng.index(pool.len())]).collect()
        }
        Pattern::SignedZeros => (0..n).map(|_| if rng.chance(0.5) { 0.0 } else { -0.0 }).collect(),
        Pattern::Subnormal => (0..n).map(|_| subnormal(rng, l)).collect(),
        Pattern::Extremes => (0..n).map(|_| extreme(rng, l)).collect(),
        Pattern::Nan => {
            let mut v: Vec<f64> = (0..n).map(|_| if rng.chance(0.3) { nan(rng) } else { ordinary(rng) }).collect();
            // At least one NaN in every non-empty input: a NaN case without one tests nothing
            // (a one-element input is then always the NaN itself).
            if n > 0 && !v.iter().any(|x| x.is_nan()) {
                let at = rng.index(n);
                v[at] = nan(rng);
            }
            v
        }
        Pattern::Positive => (0..n).map(|_| ordinary(rng).abs()).collect(),
    };
    match pattern {
        Pattern::Sorted => v.sort_by(f64::total_cmp),
        Pattern::ReverseSorted => v.sort_by(|a, b| b.total_cmp(a)),
        _ => {}
    }
    v
}

/// A NaN of either sign (quiet, with the default payload, or one with payload bits set: a
/// kernel must return the reference's NaN, bit for bit where the class is `exact`).
fn nan(rng: &mut Rng) -> f64 {
    let payload = if rng.chance(0.5) { 0 } else { 1u64 << 40 };
    let q = f64::from_bits(f64::NAN.to_bits() | payload);
    if rng.chance(0.5) {
        q
    } else {
        -q
    }
}

/// Converts generated values to a dtype (floats round to nearest; integers saturate).
pub fn to_data(dtype: DType, v: &[f64]) -> Data {
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
    h.update(b"op-runtime conformance corpus v2\0");
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
    use op_core::registry::Registry;

    fn gen_corpus(reg: &Registry, name: &str) -> Corpus {
        Gen::new(&reg.lookup(name).expect("built-in").op()).corpus()
    }

    /// `Case::of` binds what the generator drew: the first 8 corpus cases of every built-in,
    /// rebuilt from their inputs and parameters alone, have the same symbols and float
    /// parameters; inputs that do not fit the signature are the call's typed error.
    #[test]
    fn a_hand_made_case_binds_its_symbols_as_a_call_does() {
        let reg = Registry::with_builtins();
        for op in reg.ops() {
            for c in gen_corpus(&reg, &op.id.to_string()).cases.iter().take(8) {
                let made = Case::of(&op, c.inputs.clone(), c.params.clone()).unwrap_or_else(|e| panic!("{}: {c}: {e}", op.id));
                assert_eq!(made.shape.syms, c.shape.syms, "{}: {c}", op.id);
                // The drawn values, as the parameters' dtypes hold them (f32: rounded).
                let (made_f, drawn) = (&made.shape.float_params, &c.shape.float_params);
                assert_eq!(made_f.len(), drawn.len(), "{}: {c}", op.id);
                assert!(made_f.iter().zip(drawn).all(|(m, d)| (m - d).abs() <= d.abs() * f32::EPSILON as f64), "{}: {c}", op.id);
                assert_eq!((&made.sym_names, &made.param_names), (&c.sym_names, &c.param_names), "{}", op.id);
            }
        }
        let mm = reg.lookup("builtin/matmul").expect("built-in").op();
        let t = |r: usize, c: usize| Tensor::from_vec([r, c], vec![1.0f32; r * c]).expect("a matrix");
        let c = Case::of(&mm, vec![t(2, 3), t(3, 5)], vec![]).expect("fits");
        assert_eq!((c.sym("m"), c.sym("k"), c.sym("n")), (Some(2), Some(3), Some(5)));
        assert!(matches!(Case::of(&mm, vec![t(2, 3), t(4, 5)], vec![]), Err(DispatchError::DimMismatch { .. })));
        assert!(matches!(Case::of(&mm, vec![t(2, 3)], vec![]), Err(DispatchError::InputCount { .. })));
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
                assert!(gen.space().admissible(&c.shape.syms, LARGE) && !gen.admissible(&c.shape.syms), "{}: {c}", op.id);
                // Float inputs (masks and indices are drawn from their own domains).
                for t in c.inputs.iter().filter(|t| t.dtype().is_float()) {
                    let v = t.data().to_f64_vec().expect("floats");
                    assert!(v.iter().all(|x| x.is_finite()), "{}: non-finite values in {c}", op.id);
                    assert!(c.pattern != Pattern::Positive || v.iter().all(|x| *x >= 0.0), "{}: {c}", op.id);
                }
                // Every dim is odd where it can be (a length that is a sum of dims, concat's
                // `n + m`, may still be even): an even dim beyond 16 has no admissible odd
                // neighbour below it.
                for k in 0..gen.space().n_dims() {
                    let d = c.shape.syms[k];
                    let mut odd = c.shape.syms.clone();
                    odd[k] -= 1;
                    assert!(d <= 16 || d % 2 == 1 || !gen.space().admissible(&odd, LARGE), "{}: dim {k} = {d} is even in {c}", op.id);
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
            assert!(gen.space().admissible(&s.syms, LARGE), "{:?}", s.syms);
            assert!(s.syms.iter().zip(&big.shape.syms).all(|(a, b)| a <= b) && s.syms != big.shape.syms, "{:?}", s.syms);
        }
        // Halving is among them, so a large failure shrinks to one still beyond the small caps.
        assert!(cands.iter().any(|s| !gen.admissible(&s.syms)));
        // A small shape shrinks within the small caps.
        let small = corpus.cases.iter().rev().find(|c| c.family == "random").expect("a random case");
        assert!(gen.shrink_candidates(&small.shape).iter().all(|s| gen.admissible(&s.syms)));
    }
}
