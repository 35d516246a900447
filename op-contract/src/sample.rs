//! Sampling of admissible inputs: one seeded generator ([`Rng`], SplitMix64) and one
//! admissibility oracle over a [`Signature`] ([`Space`]), with the samplers built on them:
//! smallest dims, parameter boundaries, random dims (log-uniform, distinct for distinct symbols
//! unless the constraints tie them) and values across magnitudes that honour a declared
//! [`Domain`]. Conformance and gradcheck draw everything from here (the checker's search can
//! too: it depends on nothing but the contract). It owns sampling only: it never builds tensors
//! or runs anything.

use crate::contract::{DType, Domain, Expr, ShapeClass, Signature};
use std::collections::BTreeMap;

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast in unoptimised builds, deterministic on
/// every platform, and good enough for sampling test inputs. Not for cryptography.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng(u64);

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator seeded from a content hash (all 32 bytes) and a salt, so that the same
    /// content and salt always give the same stream, and a different salt another one.
    pub fn from_hash(hash: &[u8; 32], salt: u64) -> Rng {
        let mut s = salt.wrapping_mul(GOLDEN);
        for w in hash.chunks_exact(8) {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            s = mix(s ^ u64::from_le_bytes(b));
        }
        Rng(s)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix(self.0)
    }

    /// An independent generator seeded from this one (for a sub-stream whose length varies,
    /// so that what is drawn after it does not depend on it).
    pub fn split(&mut self) -> Rng {
        Rng(self.next_u64())
    }

    /// Uniform in `[0, 1)`, 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform below `n` (0 when `n` is 0), without modulo bias worth mentioning (multiply-shift).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform index below `n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// Uniform in `[lo, hi]` (integers; `lo` when `hi < lo`).
    pub fn int_in(&mut self, lo: i128, hi: i128) -> i128 {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo).min(u64::MAX as i128 - 1) as u64 + 1;
        lo + self.below(span) as i128
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// `1.0` or `-1.0`, equally likely.
    pub fn sign(&mut self) -> f64 {
        if self.next_u64() >> 63 == 0 {
            1.0
        } else {
            -1.0
        }
    }

    /// Log-uniform in `[lo, hi)` (`0 < lo <= hi`): every decade equally likely.
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (self.uniform(lo.ln(), hi.ln())).exp().clamp(lo, hi)
    }
}

/// The magnitudes values are drawn across: log-uniform over `[lo, hi)`, both signs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Magnitudes {
    /// Smallest magnitude.
    pub lo: f64,
    /// Largest magnitude.
    pub hi: f64,
}

impl Magnitudes {
    /// `1e-3 .. 1e3`: six decades around 1, where f32 and f64 arithmetic are both ordinary.
    pub const ORDINARY: Magnitudes = Magnitudes { lo: 1e-3, hi: 1e3 };

    /// One value: a log-uniform magnitude with a random sign, inside `domain` when one is
    /// given (see [`in_domain`]).
    pub fn value(self, rng: &mut Rng, domain: Option<&Domain>) -> f64 {
        let v = rng.sign() * rng.log_uniform(self.lo, self.hi);
        match domain {
            Some(d) => in_domain(v, d, self, rng),
            None => v,
        }
    }
}

/// `v` if the domain contains it, else `-v` if that is inside (so `-inf` becomes `+inf` and a
/// negative subnormal a positive one for `x > 0`), else a fresh value inside the domain:
/// log-uniform over the domain's part of `mags` where the domain lies on one side of zero,
/// uniform where it straddles it. A domain that admits nothing (which the checker refuses)
/// gets its lower bound.
pub fn in_domain(v: f64, d: &Domain, mags: Magnitudes, rng: &mut Rng) -> f64 {
    if d.contains(v) {
        return v;
    }
    if d.contains(-v) {
        return -v;
    }
    let lo = d.lo.map_or(-mags.hi, |b| b.value.max(-mags.hi));
    let hi = d.hi.map_or(mags.hi, |b| b.value.min(mags.hi));
    for _ in 0..16 {
        let c = if lo >= 0.0 && hi > 0.0 {
            rng.log_uniform(lo.max(mags.lo.min(hi / 2.0)).max(f64::MIN_POSITIVE), hi)
        } else if hi <= 0.0 && lo < 0.0 {
            -rng.log_uniform((-hi).max(mags.lo.min(-lo / 2.0)).max(f64::MIN_POSITIVE), -lo)
        } else {
            rng.uniform(lo, hi)
        };
        if d.contains(c) {
            return c;
        }
    }
    // A narrow interval next to an exclusive bound: its midpoint, or the bound itself.
    let mid = lo / 2.0 + hi / 2.0;
    if d.contains(mid) {
        mid
    } else {
        d.lo.or(d.hi).map_or(0.0, |b| b.value)
    }
}

/// The range of an integer dtype, `None` for float and bool.
pub fn int_range(dt: DType) -> Option<(i128, i128)> {
    Some(match dt {
        DType::u8 => (0, u8::MAX as i128),
        DType::i8 => (i8::MIN as i128, i8::MAX as i128),
        DType::u16 => (0, u16::MAX as i128),
        DType::i16 => (i16::MIN as i128, i16::MAX as i128),
        DType::u32 => (0, u32::MAX as i128),
        DType::i32 => (i32::MIN as i128, i32::MAX as i128),
        DType::u64 => (0, u64::MAX as i128),
        DType::i64 => (i64::MIN as i128, i64::MAX as i128),
        _ => return None,
    })
}

/// Whether `v` is a value of the integer dtype `dt`.
pub fn fits(v: i128, dt: DType) -> bool {
    int_range(dt).is_some_and(|(lo, hi)| lo <= v && v <= hi)
}

/// Size limits of a sampling family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Largest value of any dim symbol.
    pub max_dim: i128,
    /// Largest number of elements of any input or output tensor.
    pub max_numel: usize,
    /// Largest product of all symbols (dims and integer parameters, each at least 1): a proxy
    /// for a reference's work, when bounded.
    pub max_work: Option<u128>,
}

/// Element counts of a binding: every input, then every output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Elements of each tensor input.
    pub inputs: Vec<usize>,
    /// Elements of each output.
    pub outputs: Vec<usize>,
}

/// How random bindings are drawn: dims log-uniform in `dims` (inclusive), integer parameters
/// uniform in `params` (inclusive; clipped to their dtype).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    /// Range of every dim symbol.
    pub dims: (i128, i128),
    /// Range of every integer parameter.
    pub params: (i128, i128),
}

/// Draws of float parameters tried before a sampler gives up on a binding
/// ([`Space::admitted_params`]).
pub const FLOAT_REDRAWS: usize = 64;

/// The admissibility oracle of a signature: which values of its symbols (dims bound by inputs,
/// integer parameters, and for data-dependent outputs their free symbols, in that order: the
/// runtime plan's slot order) satisfy every constraint, give non-negative dims and stay within
/// size caps. Cheap: it evaluates expressions and builds nothing.
#[derive(Clone, Debug)]
pub struct Space<'a> {
    sig: &'a Signature,
    syms: Vec<String>,
    n_dims: usize,
    int_params: Vec<(usize, DType)>,
    literals: Vec<i128>,
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

impl<'a> Space<'a> {
    /// The oracle of `sig`.
    pub fn new(sig: &'a Signature) -> Space<'a> {
        let mut syms = sig.dim_symbols();
        let n_dims = syms.len();
        let mut int_params = Vec::new();
        for p in sig.params().filter(|p| p.dtype.is_int()) {
            int_params.push((syms.len(), p.dtype));
            syms.push(p.name.clone());
        }
        if sig.shape_class != ShapeClass::Static {
            for d in sig.outputs.iter().flat_map(|o| &o.dims) {
                let mut used = Vec::new();
                d.symbols(&mut used);
                for u in used {
                    if !syms.iter().any(|s| s == u) {
                        syms.push(u.to_string());
                    }
                }
            }
        }
        let mut lits = Vec::new();
        for t in sig.constraints.iter().flat_map(|c| &c.terms) {
            literals(t, &mut lits);
        }
        lits.sort_unstable();
        lits.dedup();
        Space { sig, syms, n_dims, int_params, literals: lits }
    }

    /// The symbols, in slot order: dims, integer parameters, free output symbols.
    pub fn syms(&self) -> &[String] {
        &self.syms
    }

    /// How many leading symbols are dims bound by inputs.
    pub fn n_dims(&self) -> usize {
        self.n_dims
    }

    /// `(slot, dtype)` of each integer parameter.
    pub fn int_params(&self) -> &[(usize, DType)] {
        &self.int_params
    }

    /// Every integer literal of the constraints, sorted.
    pub fn literals(&self) -> &[i128] {
        &self.literals
    }

    /// Parameters drawn by `draw` until the signature's float constraints hold for them
    /// (`value` reads a parameter's value by name from a draw), at most [`FLOAT_REDRAWS`]
    /// draws; `None` when `draw` does or when none of those draws holds. The one rule of every
    /// sampler of float parameters: none hands back parameters the op refuses.
    pub fn admitted_params<T>(
        &self,
        rng: &mut Rng,
        mut draw: impl FnMut(&mut Rng) -> Option<T>,
        value: impl Fn(&T, &str) -> Option<f64>,
    ) -> Option<T> {
        for _ in 0..FLOAT_REDRAWS {
            let drawn = draw(rng)?;
            if self.sig.violated_float_constraint(&|n| value(&drawn, n)).is_none() {
                return Some(drawn);
            }
        }
        None
    }

    /// The slot of a symbol.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.syms.iter().position(|s| s == name)
    }

    /// Symbol values by name.
    pub fn env(&self, values: &[i128]) -> BTreeMap<String, i128> {
        self.syms.iter().cloned().zip(values.iter().copied()).collect()
    }

    /// Shapes of the inputs for these values, if every dim is a non-negative integer.
    pub fn input_shapes(&self, values: &[i128]) -> Option<Vec<Vec<usize>>> {
        let env = self.env(values);
        let dim = |d: &Expr| d.eval_map(&env).and_then(|v| usize::try_from(v).ok());
        self.sig.inputs().map(|t| t.dims.iter().map(dim).collect::<Option<Vec<usize>>>()).collect()
    }

    /// Element counts of every input and output, if every dim is a non-negative integer and
    /// no count overflows.
    pub fn sizes(&self, values: &[i128]) -> Option<Sizes> {
        let env = self.env(values);
        let numel = |dims: &[Expr]| {
            dims.iter().try_fold(1usize, |n, d| d.eval_map(&env).and_then(|v| usize::try_from(v).ok()).and_then(|v| n.checked_mul(v)))
        };
        let inputs = self.sig.inputs().map(|t| numel(&t.dims)).collect::<Option<Vec<usize>>>()?;
        let outputs = self.sig.outputs.iter().map(|o| numel(&o.dims)).collect::<Option<Vec<usize>>>()?;
        Some(Sizes { inputs, outputs })
    }

    /// Whether symbol values are admissible: integer parameters fit their dtype, dims lie in
    /// `0..=caps.max_dim`, the work stays under `caps.max_work`, every constraint holds and
    /// every tensor has at most `caps.max_numel` elements.
    pub fn admissible(&self, values: &[i128], caps: Caps) -> bool {
        if values.len() != self.syms.len() || !self.int_params.iter().all(|(k, dt)| fits(values[*k], *dt)) {
            return false;
        }
        if values[..self.n_dims].iter().any(|v| *v < 0 || *v > caps.max_dim) {
            return false;
        }
        if let Some(max) = caps.max_work {
            if values.iter().try_fold(1u128, |w, v| w.checked_mul(v.unsigned_abs().max(1))).is_none_or(|w| w > max) {
                return false;
            }
        }
        let env = self.env(values);
        if !self.sig.constraints.iter().all(|c| c.holds(&|s| env.get(s).copied()) == Some(true)) {
            return false;
        }
        self.sizes(values).is_some_and(|s| s.inputs.iter().chain(&s.outputs).all(|n| *n <= caps.max_numel))
    }

    /// Whether distinct symbols (dims and integer parameters) have distinct values.
    pub fn distinct(&self, values: &[i128]) -> bool {
        let bound = &values[..(self.n_dims + self.int_params.len()).min(values.len())];
        bound.iter().enumerate().all(|(i, v)| !bound[..i].contains(v))
    }

    /// Boundary candidates of an integer parameter of dtype `dt`: 0..=3 and every constraint
    /// literal with its neighbours, those the dtype holds, sorted.
    pub fn boundary_values(&self, dt: DType) -> Vec<i128> {
        let mut v: Vec<i128> = (0..=3).collect();
        for l in &self.literals {
            v.extend([l - 1, *l, l + 1]);
        }
        v.retain(|x| fits(*x, dt));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Every combination of boundary values of the integer parameters, at most `limit` of
    /// them (in order: the first parameter varies slowest).
    pub fn boundary_combos(&self, limit: usize) -> Vec<Vec<(usize, i128)>> {
        let mut combos: Vec<Vec<(usize, i128)>> = vec![Vec::new()];
        for (k, dt) in &self.int_params {
            let cands = self.boundary_values(*dt);
            let mut next = Vec::new();
            for c in &combos {
                for v in &cands {
                    let mut c = c.clone();
                    c.push((*k, *v));
                    next.push(c);
                }
            }
            next.truncate(limit);
            combos = next;
        }
        combos
    }

    /// The smallest admissible dims for the given parameter values (by coordinate descent from
    /// the first admissible start among a few sizes); dims never go below `floor`.
    pub fn smallest(&self, params: &[(usize, i128)], floor: i128, caps: Caps) -> Option<Vec<i128>> {
        let mut values = vec![0i128; self.syms.len()];
        for (k, v) in params {
            values[*k] = *v;
        }
        let n = self.n_dims;
        let start = [floor.max(1), 2, 3, 4, 8, 16, 32, 64, 128, 256].into_iter().find(|d| {
            values[..n].iter_mut().for_each(|x| *x = (*d).max(floor));
            self.admissible(&values, caps)
        })?;
        values[..n].iter_mut().for_each(|x| *x = start.max(floor));
        loop {
            let mut changed = false;
            for k in 0..n {
                while values[k] > floor {
                    values[k] -= 1;
                    if self.admissible(&values, caps) {
                        changed = true;
                    } else {
                        values[k] += 1;
                        break;
                    }
                }
            }
            if !changed {
                return Some(values);
            }
        }
    }

    /// The smallest admissible dims for the given parameter values with the dims of `empty`
    /// (a bit per dim, in slot order) at 0 and every other dim at least `floor` (at least 1):
    /// one binding per pattern of empty and non-empty dims, found like [`Space::smallest`].
    pub fn smallest_with_empty(&self, params: &[(usize, i128)], empty: u64, floor: i128, caps: Caps) -> Option<Vec<i128>> {
        let n = self.n_dims;
        let floor = floor.max(1);
        let is_empty = |k: usize| k < 64 && empty >> k & 1 == 1;
        let mut values = vec![0i128; self.syms.len()];
        for (k, v) in params {
            values[*k] = *v;
        }
        let start = [floor, 2, 3, 4, 8, 16, 32, 64, 128, 256].into_iter().filter(|d| *d >= floor).find(|d| {
            (0..n).for_each(|k| values[k] = if is_empty(k) { 0 } else { *d });
            self.admissible(&values, caps)
        })?;
        (0..n).for_each(|k| values[k] = if is_empty(k) { 0 } else { start });
        loop {
            let mut changed = false;
            for k in (0..n).filter(|k| !is_empty(*k)) {
                while values[k] > floor {
                    values[k] -= 1;
                    if self.admissible(&values, caps) {
                        changed = true;
                    } else {
                        values[k] += 1;
                        break;
                    }
                }
            }
            if !changed {
                return Some(values);
            }
        }
    }

    /// Every pattern of empty and non-empty dims the constraints admit: for each non-empty
    /// subset of the dims held at 0 (all of them included; none is the smallest non-empty
    /// binding, which [`Space::smallest`] gives), the first parameter combination of `combos`
    /// that admits it, with the other dims at 2 or more (`floor` 2, so that a non-empty dim is
    /// not only ever 1) and at their smallest (`floor` 1), in that order. At most 2^12 subsets
    /// are tried.
    pub fn empty_patterns(&self, combos: &[Vec<(usize, i128)>], caps: Caps) -> Vec<Vec<i128>> {
        let n = self.n_dims.min(12);
        let mut out: Vec<Vec<i128>> = Vec::new();
        for empty in 1u64..(1u64 << n) {
            for floor in [2, 1] {
                let found = combos.iter().find_map(|c| self.smallest_with_empty(c, empty, floor, caps));
                if let Some(v) = found.filter(|v| !out.contains(v)) {
                    out.push(v);
                }
            }
        }
        out
    }

    /// One random draw of every dim and integer parameter (admissible or not); symbols in
    /// `pin` (slot, value) take the given value, free output symbols stay 0.
    pub fn draw(&self, rng: &mut Rng, how: Draw, pin: &[(usize, i128)]) -> Vec<i128> {
        let mut values = vec![0i128; self.syms.len()];
        let (lo, hi) = (how.dims.0.max(0), how.dims.1.max(how.dims.0.max(0)));
        for v in values[..self.n_dims].iter_mut() {
            *v = if lo >= 1 { rng.log_uniform(lo as f64, hi as f64 + 1.0).floor() as i128 } else { rng.int_in(lo, hi) };
            *v = (*v).clamp(lo, hi);
        }
        for (k, dt) in &self.int_params {
            let (tlo, thi) = int_range(*dt).unwrap_or((0, 0));
            values[*k] = rng.int_in(how.params.0.max(tlo), how.params.1.min(thi));
        }
        for (k, v) in pin {
            if let Some(x) = values.get_mut(*k) {
                *x = *v;
            }
        }
        values
    }

    /// An admissible binding: up to `tries` draws, the first admissible one whose distinct
    /// symbols have distinct values ([`Space::distinct`]); where the constraints admit no
    /// distinct binding among those draws (they tie symbols, e.g. `m == n`), the first
    /// admissible one. Symbols in `pin` keep their value. `None` when no draw is admissible.
    pub fn sample(&self, rng: &mut Rng, how: Draw, caps: Caps, tries: usize, pin: &[(usize, i128)]) -> Option<Vec<i128>> {
        let mut fallback = None;
        for _ in 0..tries {
            let v = self.draw(rng, how, pin);
            if !self.admissible(&v, caps) {
                continue;
            }
            if self.distinct(&v) {
                return Some(v);
            }
            fallback.get_or_insert(v);
        }
        fallback
    }

    /// Smaller bindings than `values` to try when shrinking, nearest first per symbol: each
    /// symbol lowered to 0, 1, half, minus 2 or minus 1, where admissible under `caps`.
    pub fn shrink_candidates(&self, values: &[i128], caps: Caps) -> Vec<Vec<i128>> {
        let mut out = Vec::new();
        for k in 0..values.len() {
            let v = values[k];
            let mut tries = vec![0, 1, v / 2, v - 2, v - 1];
            tries.retain(|t| *t >= 0 && *t < v);
            tries.sort_unstable();
            tries.dedup();
            for t in tries {
                let mut s = values.to_vec();
                s[k] = t;
                if self.admissible(&s, caps) {
                    out.push(s);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Arg, CmpOp, Constraint, DomainBound, ParamSig, TensorSig};

    fn sym(s: &str) -> Expr {
        Expr::Sym(s.into())
    }

    fn t(name: &str, dims: Vec<Expr>) -> Arg {
        Arg::Tensor(TensorSig { name: name.into(), dtype: DType::f32, dims, var: None })
    }

    fn sig(args: Vec<Arg>, constraints: Vec<Constraint>, out: Vec<Expr>) -> Signature {
        Signature {
            args,
            constraints,
            outputs: vec![TensorSig { name: "out".into(), dtype: DType::f32, dims: out, var: None }],
            shape_class: ShapeClass::Static,
            float_constraints: Vec::new(),
            dtype_vars: Vec::new(),
        }
    }

    fn matmul() -> Signature {
        sig(vec![t("a", vec![sym("m"), sym("k")]), t("b", vec![sym("k"), sym("n")])], vec![], vec![sym("m"), sym("n")])
    }

    /// The median's: `x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n`.
    fn median() -> Signature {
        let c = |terms: Vec<Expr>, ops: Vec<CmpOp>| Constraint { terms, ops };
        let lit = Expr::Lit;
        sig(
            vec![t("x", vec![sym("n")]), Arg::Param(ParamSig { name: "w".into(), dtype: DType::u32, var: None })],
            vec![
                c(vec![Expr::Bin(crate::contract::BinOp::Rem, Box::new(sym("w")), Box::new(lit(2))), lit(1)], vec![CmpOp::Eq]),
                c(vec![lit(1), sym("w"), lit(31)], vec![CmpOp::Le, CmpOp::Le]),
                c(vec![sym("w"), sym("n")], vec![CmpOp::Le]),
            ],
            vec![Expr::Bin(
                crate::contract::BinOp::Add,
                Box::new(Expr::Bin(crate::contract::BinOp::Sub, Box::new(sym("n")), Box::new(sym("w")))),
                Box::new(lit(1)),
            )],
        )
    }

    const CAPS: Caps = Caps { max_dim: 512, max_numel: 4096, max_work: None };

    /// `x: f32[n], lo: f32, hi: f32 where lo <= hi`.
    fn clip() -> Signature {
        let p = |n: &str| Arg::Param(ParamSig { name: n.into(), dtype: DType::f32, var: None });
        let mut s = sig(vec![t("x", vec![sym("n")]), p("lo"), p("hi")], vec![], vec![sym("n")]);
        let term = |n: &str| crate::contract::FloatTerm::Param(n.into());
        s.float_constraints = vec![crate::contract::FloatConstraint { terms: vec![term("lo"), term("hi")], ops: vec![CmpOp::Le] }];
        s
    }

    #[test]
    fn float_parameters_are_redrawn_until_admitted_and_never_handed_back_refused() {
        let s = clip();
        let space = Space::new(&s);
        let value = |v: &(f64, f64), n: &str| match n {
            "lo" => Some(v.0),
            "hi" => Some(v.1),
            _ => None,
        };
        let mut rng = Rng::new(7);
        for _ in 0..1000 {
            let draw = |rng: &mut Rng| Some((rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0)));
            let (lo, hi) = space.admitted_params(&mut rng, draw, value).expect("half of all draws hold");
            assert!(lo <= hi, "handed back lo = {lo} > hi = {hi}");
        }
        // A draw that never holds: no parameters, after exactly FLOAT_REDRAWS draws.
        let mut draws = 0;
        let never = |_: &mut Rng| {
            draws += 1;
            Some((1.0, 0.0))
        };
        assert_eq!(space.admitted_params(&mut rng, never, value), None);
        assert_eq!(draws, FLOAT_REDRAWS);
        // A draw that gives up is passed on.
        assert_eq!(space.admitted_params(&mut rng, |_| None::<(f64, f64)>, value), None);
    }

    #[test]
    fn the_generator_is_deterministic_and_salted() {
        let h = [7u8; 32];
        let a: Vec<u64> = (0..4).scan(Rng::from_hash(&h, 0), |r, _| Some(r.next_u64())).collect();
        let b: Vec<u64> = (0..4).scan(Rng::from_hash(&h, 0), |r, _| Some(r.next_u64())).collect();
        let c: Vec<u64> = (0..4).scan(Rng::from_hash(&h, 1), |r, _| Some(r.next_u64())).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut h2 = h;
        h2[31] ^= 1;
        assert_ne!(Rng::from_hash(&h2, 0).next_u64(), a[0], "every byte of the hash seeds it");
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            assert!((-3..=5).contains(&r.int_in(-3, 5)));
            let m = r.log_uniform(1e-3, 1e3);
            assert!((1e-3..=1e3).contains(&m));
        }
    }

    #[test]
    fn magnitudes_cover_every_decade_and_both_signs() {
        let mut r = Rng::new(3);
        let v: Vec<f64> = (0..4000).map(|_| Magnitudes::ORDINARY.value(&mut r, None)).collect();
        for decade in -3..3 {
            let (lo, hi) = (10f64.powi(decade), 10f64.powi(decade + 1));
            let n = v.iter().filter(|x| (lo..hi).contains(&x.abs())).count();
            assert!(n > 400, "decade 1e{decade}: {n} of 4000");
        }
        assert!(v.iter().filter(|x| **x < 0.0).count() > 1600);
        assert!(v.iter().filter(|x| x.abs() > 10.0).count() > 1200, "a third above 10 in magnitude");
    }

    #[test]
    fn values_honour_a_domain() {
        let b = |value: f64, inclusive: bool| Some(DomainBound { value, inclusive });
        let positive = Domain { input: "x".into(), lo: b(0.0, false), hi: None };
        let unit = Domain { input: "x".into(), lo: b(-1.0, true), hi: b(1.0, true) };
        let narrow = Domain { input: "x".into(), lo: b(2.0, false), hi: b(2.0 + 1e-9, false) };
        let mut r = Rng::new(5);
        for d in [&positive, &unit, &narrow] {
            for _ in 0..500 {
                let v = Magnitudes::ORDINARY.value(&mut r, Some(d));
                assert!(d.contains(v), "{v} outside {d}");
            }
        }
        // Edge values are kept where the domain admits them, mirrored where their negation is
        // inside, and replaced otherwise.
        let m = Magnitudes::ORDINARY;
        assert_eq!(in_domain(f64::INFINITY, &positive, m, &mut r), f64::INFINITY);
        assert_eq!(in_domain(f64::NEG_INFINITY, &positive, m, &mut r), f64::INFINITY);
        assert_eq!(in_domain(-1e-45, &positive, m, &mut r), 1e-45);
        for v in [0.0, -0.0, f64::NAN] {
            assert!(positive.contains(in_domain(v, &positive, m, &mut r)));
        }
        assert!(!positive.contains(f64::NAN) && !unit.contains(f64::NAN));
        assert_eq!(positive.to_string(), "x > 0.0");
        assert_eq!(unit.to_string(), "-1.0 <= x <= 1.0");
    }

    #[test]
    fn the_oracle_decides_admissibility_from_the_constraints() {
        let med = median();
        let s = Space::new(&med);
        assert_eq!(s.syms(), ["n".to_string(), "w".to_string()]);
        assert!(s.admissible(&[5, 3], CAPS));
        assert!(!s.admissible(&[5, 4], CAPS), "w even");
        assert!(!s.admissible(&[2, 3], CAPS), "w > n");
        assert!(!s.admissible(&[40, 33], CAPS), "w > 31");
        assert!(!s.admissible(&[5000, 3], CAPS), "over max_numel");
        assert_eq!(s.smallest(&[(1, 31)], 0, CAPS), Some(vec![31, 31]), "n = w: one output");
        assert_eq!(s.boundary_values(DType::u32), vec![0, 1, 2, 3, 30, 31, 32]);
        let shrunk = s.shrink_candidates(&[40, 5], CAPS);
        assert!(shrunk.contains(&vec![20, 5]) && shrunk.contains(&vec![40, 3]) && shrunk.iter().all(|v| s.admissible(v, CAPS)));
    }

    /// A row-wise op over `x: f32[rows, cols]`: every pattern of empty dims, the inner one
    /// empty beside a non-empty outer one included (`[1, 0]` and `[2, 0]`), unless a constraint
    /// refuses it (`cols >= 1`).
    #[test]
    fn every_pattern_of_empty_and_non_empty_dims_is_sampled() {
        let rows = sig(vec![t("x", vec![sym("rows"), sym("cols")])], vec![], vec![sym("rows"), sym("cols")]);
        let s = Space::new(&rows);
        let got = s.empty_patterns(&s.boundary_combos(64), CAPS);
        for want in [[0, 1], [0, 2], [1, 0], [2, 0], [0, 0]] {
            assert!(got.contains(&want.to_vec()), "{want:?} missing from {got:?}");
        }
        assert!(got.iter().all(|v| s.admissible(v, CAPS) && v.contains(&0)), "{got:?}");
        let mut refusing = rows.clone();
        refusing.constraints.push(Constraint { terms: vec![Expr::Lit(1), sym("cols")], ops: vec![CmpOp::Le] });
        let s = Space::new(&refusing);
        assert_eq!(s.empty_patterns(&s.boundary_combos(64), CAPS), vec![vec![0, 2], vec![0, 1]], "cols >= 1 admits only empty rows");
        // The median (`w <= n`, `w >= 1`) admits no empty dim at all.
        let med = median();
        let s = Space::new(&med);
        assert!(s.empty_patterns(&s.boundary_combos(64), CAPS).is_empty());
        // matmul: all seven patterns of its three dims, each with the others at 1 and at 2.
        let mm = matmul();
        let s = Space::new(&mm);
        let got = s.empty_patterns(&s.boundary_combos(64), CAPS);
        assert!(got.contains(&vec![2, 0, 2]) && got.contains(&vec![1, 1, 0]) && got.contains(&vec![0, 0, 0]), "{got:?}");
        assert_eq!(got.len(), 13, "6 patterns at two floors and the all-empty one: {got:?}");
    }

    #[test]
    fn sampled_dims_are_distinct_unless_the_constraints_tie_them() {
        let mm = matmul();
        let s = Space::new(&mm);
        let how = Draw { dims: (2, 24), params: (0, 32) };
        for seed in 0..64 {
            let v = s.sample(&mut Rng::new(seed), how, CAPS, 200, &[]).expect("admissible");
            assert!(v[0] != v[1] && v[1] != v[2] && v[0] != v[2], "seed {seed}: {v:?}");
        }
        // `k == n` ties two symbols: the sampler falls back to an admissible tied binding.
        let mut tied = matmul();
        tied.constraints.push(Constraint { terms: vec![sym("k"), sym("n")], ops: vec![CmpOp::Eq] });
        let s = Space::new(&tied);
        let v = s.sample(&mut Rng::new(1), how, CAPS, 200, &[]).expect("admissible");
        assert_eq!(v[1], v[2]);
        // The median: distinct n and w, w odd and at most n.
        let med = median();
        let s = Space::new(&med);
        for seed in 0..32 {
            let v = s.sample(&mut Rng::new(seed), how, CAPS, 400, &[]).expect("admissible");
            assert!(s.admissible(&v, CAPS) && v[0] != v[1], "{v:?}");
        }
    }
}
