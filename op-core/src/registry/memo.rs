//! What dispatch memoises per slot: its backend choice ([`Choice`]) and its last validated call
//! ([`Memo`]), so repeated calls of one shape skip lookup and validation. Which instance runs,
//! its validation (`Plan::validate`: dtypes, shapes, constraints, output shapes and sizes) and
//! the allocation check are pure functions of the handle's pinned instance, the input dtypes and
//! shapes and the parameter values; the backend choice is one of the strict setting and the
//! settings generation. A call equal to the memo in all of them (parameters bit for bit) gets
//! exactly what re-validating would give; any difference re-validates. Only calls that passed
//! are memoised; this module owns no rule of its own.

use crate::backend::Prepared;
use crate::device::DeviceProfile;
use crate::kind::BackendKind;
use crate::op::RegisteredOp;
use crate::plan::Bound;
use crate::tensor::{DType, Scalar, Shape, Tensor};
use smallvec::SmallVec;
use std::sync::{Arc, RwLock};

/// A slot's memoised choice: for calls with the same strict setting (per-call or effective
/// setting; `None` for default selection), in the same generation of settings, of the same
/// content, dispatch reuses the backend, its prepared kernel, device and allocation limit
/// without looking anything up. Any setting change or replacement bumps the generation.
pub struct Choice {
    /// The strict setting it was made for.
    pub strict: Option<BackendKind>,
    /// The settings generation it was made in.
    pub generation: u64,
    /// The instance it was made for (`RegisteredOp::member`).
    pub member: usize,
    /// The chosen backend.
    pub kind: BackendKind,
    /// Its prepared kernel for the instance.
    pub prepared: Arc<dyn Prepared>,
    /// The device it executes on.
    pub device: Arc<DeviceProfile>,
    /// Its allocation limit for one call's outputs.
    pub limit: Option<u64>,
    /// Why the chosen kernel is one conformance rejected in this process (reached only by an
    /// explicit choice), for the call's provenance.
    pub rejected: Option<Arc<str>>,
    /// The rejected kernels default selection passed over to get here, and why.
    pub passed_over: Option<Arc<str>>,
}

/// What a validated call depends on: the memo's key.
pub struct CallKey {
    /// The settings generation the choice was made in.
    pub generation: u64,
    /// The strict setting (per-call, placement or effective setting; `None` for default order).
    pub strict: Option<BackendKind>,
    /// The instance the handle is pinned to, if any.
    pub pinned: Option<usize>,
}

/// One memoised call: its key, inputs and parameters, and everything dispatch derived from them.
pub struct Memo {
    key: CallKey,
    inputs: SmallVec<[(DType, Shape); 3]>,
    params: SmallVec<[Scalar; 2]>,
    /// The instance that ran.
    pub op: Arc<RegisteredOp>,
    /// Its validated call.
    pub bound: Bound,
    /// The backend it ran on, with its prepared kernel.
    pub choice: Arc<Choice>,
}

impl Memo {
    /// A memo of a call that passed validation and the allocation check.
    pub fn new(key: CallKey, inputs: &[&Tensor], params: &[Scalar], op: Arc<RegisteredOp>, bound: Bound, choice: Arc<Choice>) -> Memo {
        let inputs = inputs.iter().map(|t| (t.dtype(), Shape::from_slice(t.shape()))).collect();
        Memo { key, inputs, params: SmallVec::from_slice(params), op, bound, choice }
    }

    /// Whether a call with this key, these inputs and these parameters is the memoised one.
    fn matches(&self, key: &CallKey, inputs: &[&Tensor], params: &[Scalar]) -> bool {
        self.key.generation == key.generation
            && self.key.strict == key.strict
            && self.key.pinned == key.pinned
            && self.inputs.len() == inputs.len()
            && self.inputs.iter().zip(inputs).all(|((d, s), t)| *d == t.dtype() && same_dims(s, t.shape()))
            && self.params.len() == params.len()
            && self.params.iter().zip(params).all(|(a, b)| same_bits(a, b))
    }
}

/// Shapes equal, compared inline (a handful of dims; no call to `memcmp`).
fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Parameters equal in dtype and bit pattern (so `-0.0` and `0.0` differ and a NaN matches
/// only the same NaN: validation reads nothing else of them).
fn same_bits(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => x.to_bits() == y.to_bits(),
        (Scalar::F64(x), Scalar::F64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// A slot's memo cell: one memoised call, replaced by the next call that misses.
#[derive(Default)]
pub struct MemoCell(RwLock<Option<Arc<Memo>>>);

impl MemoCell {
    /// The memo if this call is the memoised one.
    pub fn get(&self, key: &CallKey, inputs: &[&Tensor], params: &[Scalar]) -> Option<Arc<Memo>> {
        let memo = self.0.read().unwrap_or_else(|p| p.into_inner());
        memo.as_ref().filter(|m| m.matches(key, inputs, params)).cloned()
    }

    /// Memoises a call (replacing the previous one).
    pub fn set(&self, memo: Arc<Memo>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = Some(memo);
    }

    /// Forgets the memoised call (its instance and prepared kernel go with it).
    pub fn clear(&self) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_match_only_in_dtype_and_bit_pattern() {
        assert!(same_bits(&Scalar::F32(1.5), &Scalar::F32(1.5)));
        assert!(!same_bits(&Scalar::F32(0.0), &Scalar::F32(-0.0)), "-0.0 is another call");
        assert!(!same_bits(&Scalar::F64(0.0), &Scalar::F64(-0.0)));
        assert!(same_bits(&Scalar::F32(f32::NAN), &Scalar::F32(f32::NAN)), "the same NaN validates alike");
        assert!(!same_bits(&Scalar::F32(f32::NAN), &Scalar::F32(-f32::NAN)));
        assert!(!same_bits(&Scalar::U32(3), &Scalar::I32(3)), "another dtype is another call");
        assert!(!same_bits(&Scalar::F32(1.0), &Scalar::F64(1.0)));
        assert!(same_bits(&Scalar::U32(3), &Scalar::U32(3)) && !same_bits(&Scalar::U32(3), &Scalar::U32(5)));
        assert!(same_dims(&[2, 3], &[2, 3]) && !same_dims(&[2, 3], &[3, 2]) && !same_dims(&[6], &[6, 1]));
    }
}
