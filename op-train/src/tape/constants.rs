//! Constants on a tape: tensors a graph introduces (a one-hot weight, a mask, an index table),
//! of any dtype, that no gradient flows to. Each is pinned by content hash
//! (`provenance::ConstantEntry`) when it is made, and every run records the constants of the
//! tape and of the composite graphs it holds, so a provenance record pins the data a graph
//! uses as well as its ops. Owns only the bookkeeping; running and planning stay in the tape.

use super::{Kind, Tape, TapeError, Var};
use op_core::provenance::ConstantEntry;
use op_core::tensor::Tensor;

impl Tape {
    /// A constant: a host tensor of any dtype held by the tape, fed to every run, never
    /// differentiated. On a tape that runs in f64 (gradcheck's), a float constant is converted to
    /// f64 like every float value there. A device tensor is refused (the tape takes host tensors).
    pub fn constant(&mut self, name: &str, value: Tensor) -> Result<Var, TapeError> {
        if !value.is_host() {
            return Err(TapeError::Placement { name: name.to_string(), placement: value.placement().to_string() });
        }
        let value = match self.mode.float_as() {
            Some(f) if value.dtype().is_float() && value.dtype() != f => {
                value.to_dtype(f).map_err(|e| TapeError::Shim { op: name.to_string(), message: e.to_string() })?
            }
            _ => value,
        };
        let entry = ConstantEntry::of(name, &value)
            .ok_or_else(|| TapeError::Placement { name: name.to_string(), placement: value.placement().to_string() })?;
        let (dtype, shape) = (value.dtype(), value.shape().to_vec());
        Ok(self.push_var(name.to_string(), dtype, shape, Kind::Const(value, entry)))
    }

    /// The constants of this tape and of every composite graph it holds, in recording order.
    pub fn constant_entries(&self, out: &mut Vec<ConstantEntry>) {
        for v in &self.vars {
            if let Kind::Const(_, e) = &v.kind {
                out.push(e.clone());
            }
        }
        for n in &self.nodes {
            if let Some(sub) = &n.sub {
                sub.constant_entries(out);
            }
        }
    }
}
