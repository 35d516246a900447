//! Engine-generated gradcheck inputs: an admissible binding of the signature's dims and
//! parameters, and tensors whose values mix continuous draws with a coarse grid (so ties,
//! zeros and order crossings occur, and the kink handling is exercised). Seeded from the op's
//! content hash: the author picks nothing, and the same content always gets the same case.

use crate::core::op::RegisteredOp;
use crate::core::tensor::{Scalar, Tensor};
use crate::train::tape::planner;
use op_contract::contract::{Arg, DType, Expr};
use std::collections::BTreeMap;

/// SplitMix64: small, deterministic, and good enough for sampling test inputs.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn from_hash(hash: &[u8; 32], salt: u64) -> Rng {
        let mut b = [0u8; 8];
        b.copy_from_slice(&hash[..8]);
        Rng(u64::from_le_bytes(b) ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [lo, hi] (integers).
    pub(crate) fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo + 1).max(1) as u64;
        lo + (self.next_u64() % span) as i64
    }
    /// Uniform in [lo, hi).
    pub(crate) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// Uniform index below `n` (n > 0).
    pub(crate) fn index(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Value distributions for float inputs, tried in order until the forward is finite.
///
/// Ties and zeros are generated on purpose (order crossings and kinks must be met and
/// skipped), but only in pairs: a value occurs at most twice. Where three or more inputs tie,
/// one-sided differences can agree while no derivative exists (the middle of three equal
/// lines), which is exactly what the kink test cannot see.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Values {
    /// Signed: +-[0.1, 2], with 4% repeats of an earlier value and 3% exact zeros (one at most).
    Signed,
    /// Positive (for ops with a restricted domain, e.g. log): [0.25, 2], with 4% repeats.
    Positive,
}

impl Values {
    fn fill(self, n: usize, rng: &mut Rng) -> Vec<f64> {
        let mut out: Vec<f64> = Vec::with_capacity(n);
        let count = |out: &[f64], v: f64| out.iter().filter(|x| **x == v).count();
        for _ in 0..n {
            let r = rng.unit();
            let v = if r < 0.04 && !out.is_empty() {
                let c = out[rng.index(out.len())];
                if count(&out, c) < 2 {
                    Some(c)
                } else {
                    None
                }
            } else if r < 0.07 && self == Values::Signed && count(&out, 0.0) == 0 {
                Some(0.0)
            } else {
                None
            };
            let v = v.unwrap_or_else(|| match self {
                Values::Signed => {
                    let m = rng.uniform(0.1, 2.0);
                    if rng.unit() < 0.5 {
                        -m
                    } else {
                        m
                    }
                }
                Values::Positive => rng.uniform(0.25, 2.0),
            });
            out.push(v);
        }
        out
    }
}

/// An admissible binding of dims and parameters.
#[derive(Clone, Debug)]
pub(crate) struct Binding {
    /// Every dim symbol and integer parameter with its value.
    pub env: BTreeMap<String, i128>,
    /// Parameter values in signature order (floats as f64).
    pub params: Vec<Scalar>,
    /// Shapes of the tensor inputs.
    pub shapes: Vec<Vec<usize>>,
}

fn eval_dim(e: &Expr, env: &BTreeMap<String, i128>) -> Option<usize> {
    e.eval_map(env).and_then(|v| usize::try_from(v).ok())
}

/// An admissible binding in the interior of the parameter space: among up to 16 admissible
/// samples, the first whose integer parameters all lie strictly between the smallest and the
/// largest admissible value seen (degenerate boundary values, e.g. a window of 1 where a median
/// is the identity, are conformance's concern, not gradcheck's).
/// Names in `pin` (dim symbols or integer parameters) take the given value instead of a draw.
pub(crate) fn binding(op: &RegisteredOp, pin: &[(String, i128)], rng: &mut Rng) -> Option<Binding> {
    let ints: Vec<String> = op.contract.signature.params().filter(|p| p.dtype.is_int()).map(|p| p.name.clone()).collect();
    let mut found: Vec<Binding> = Vec::new();
    for _ in 0..16 {
        match sample(op, pin, rng) {
            Some(b) => found.push(b),
            None => break,
        }
        if ints.is_empty() {
            break;
        }
    }
    let interior = |b: &Binding| {
        ints.iter().all(|p| {
            let v = b.env.get(p).copied().unwrap_or(0);
            let lo = found.iter().filter_map(|f| f.env.get(p)).min().copied().unwrap_or(v);
            let hi = found.iter().filter_map(|f| f.env.get(p)).max().copied().unwrap_or(v);
            lo < v && v < hi
        })
    };
    let pick = found.iter().position(interior).unwrap_or(0);
    found.into_iter().nth(pick)
}

/// Samples bindings until one is admissible (checked by the planner's shape-only validation,
/// so nothing large is ever built). Dims start small (2..=24) and widen if nothing fits.
fn sample(op: &RegisteredOp, pin: &[(String, i128)], rng: &mut Rng) -> Option<Binding> {
    let pinned = |name: &str| pin.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let sig = &op.contract.signature;
    let dims = sig.dim_symbols();
    for attempt in 0..4000 {
        let (dlo, dhi, phi) = if attempt < 2000 { (2, 24, 32) } else { (1, 64, 256) };
        let mut env: BTreeMap<String, i128> = BTreeMap::new();
        for d in &dims {
            let drawn = rng.range(dlo, dhi) as i128;
            env.insert(d.clone(), pinned(d).unwrap_or(drawn));
        }
        let mut params = Vec::new();
        let mut ok = true;
        for a in &sig.args {
            let Arg::Param(p) = a else { continue };
            let s = if p.dtype.is_float() {
                let m = rng.uniform(0.5, 2.0);
                Scalar::F64(if rng.unit() < 0.5 { -m } else { m })
            } else if p.dtype == DType::bool {
                Scalar::Bool(rng.unit() < 0.5)
            } else {
                let lo = if matches!(p.dtype, DType::i8 | DType::i16 | DType::i32 | DType::i64) { -8 } else { 0 };
                let drawn = rng.range(lo, phi) as i128;
                match Scalar::from_int(p.dtype, pinned(&p.name).unwrap_or(drawn)) {
                    Some(s) => s,
                    None => {
                        ok = false;
                        break;
                    }
                }
            };
            if let Some(v) = s.as_i128() {
                env.insert(p.name.clone(), v);
            }
            params.push(s);
        }
        if !ok {
            continue;
        }
        let mut shapes = Vec::new();
        for t in sig.inputs() {
            match t.dims.iter().map(|d| eval_dim(d, &env)).collect::<Option<Vec<usize>>>() {
                Some(s) => shapes.push(s),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            continue;
        }
        let typed: Vec<(DType, &[usize])> =
            sig.inputs().zip(&shapes).map(|(t, s)| (planner::run_dtype(t.dtype, Some(DType::f64)), s.as_slice())).collect();
        if planner::infer(op, &typed, &params, Some(DType::f64)).is_ok() {
            return Some(Binding { env, params, shapes });
        }
    }
    None
}

/// Builds the input tensors of a binding: f64 for float inputs, small integers otherwise.
pub(crate) fn tensors(op: &RegisteredOp, b: &Binding, values: Values, rng: &mut Rng) -> Option<Vec<Tensor>> {
    let mut out = Vec::new();
    for (t, shape) in op.contract.signature.inputs().zip(&b.shapes) {
        let n = crate::core::tensor::checked_numel(shape)?;
        let tensor = if t.dtype.is_float() {
            Tensor::from_vec(shape.clone(), values.fill(n, rng))
        } else {
            let ints: Vec<i64> = (0..n).map(|_| rng.range(0, 7)).collect();
            let bytes: Vec<u8> = match t.dtype {
                DType::bool => ints.iter().map(|v| (*v % 2) as u8).collect(),
                d => ints.iter().flat_map(|v| v.to_le_bytes()[..d.size()].to_vec()).collect(),
            };
            Tensor::from_bytes(t.dtype.name(), shape.clone(), &bytes)
        };
        out.push(tensor.ok()?);
    }
    Some(out)
}
