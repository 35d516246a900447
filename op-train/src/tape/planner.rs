//! The planner: output shapes inferred from an op's static signature (dtypes and shapes only,
//! no tensor is built) and the memory plan of a tape, checked against a budget before anything
//! runs. It never allocates tensor storage and never executes an op.

use op_contract::contract::DType;
use op_core::error::DispatchError;
use op_core::op::RegisteredOp;
use op_core::tensor::{checked_numel, Scalar};
use std::fmt;

/// Output dtypes and shapes of one op application, inferred without data.
#[derive(Clone, Debug, PartialEq)]
pub struct Inferred {
    /// `(dtype, shape)` of each output, in signature order.
    pub outputs: Vec<(DType, Vec<usize>)>,
}

/// The dtype a declared dtype runs at: float dtypes become `float_as` where given.
pub fn run_dtype(declared: DType, float_as: Option<DType>) -> DType {
    if declared.is_float() {
        float_as.unwrap_or(declared)
    } else {
        declared
    }
}

/// Validates a call from dtypes and shapes alone (`Plan::validate`, without tensors) and
/// computes the output dtypes and shapes. Only `static` shape classes plan.
pub fn infer(
    op: &RegisteredOp,
    inputs: &[(DType, &[usize])],
    params: &[Scalar],
    float_as: Option<DType>,
) -> Result<Inferred, DispatchError> {
    let bound = op.plan.validate(inputs, params, float_as)?;
    if bound.is_data_dependent() {
        // The tape plans and differentiates static shapes only.
        return Err(DispatchError::DynamicShape { op: op.id.clone(), class: op.plan.shape_class().unwrap_or("dynamic").to_string() });
    }
    let outputs = op
        .contract
        .signature
        .outputs
        .iter()
        .zip(bound.out_shapes)
        .map(|(o, shape)| (run_dtype(o.dtype, float_as), shape.to_vec()))
        .collect();
    Ok(Inferred { outputs })
}

/// Why a planned buffer exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferKind {
    /// An op's output, kept for the backward pass.
    Forward,
    /// A gradient buffer of the backward pass.
    Gradient,
    /// An intermediate of a composite op's graph, rematerialised for its derived backward.
    Composite,
}

impl fmt::Display for BufferKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BufferKind::Forward => "forward",
            BufferKind::Gradient => "gradient",
            BufferKind::Composite => "composite",
        })
    }
}

/// One planned buffer.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PlanEntry {
    /// The value, e.g. `%3` or `%3.1` (inside a composite's graph).
    pub value: String,
    /// The op that produces it (`name@version`).
    pub op: String,
    /// The output's name in the op's signature.
    pub output: String,
    /// Why it exists.
    pub kind: BufferKind,
    /// Element type.
    pub dtype: DType,
    /// Static shape.
    pub shape: Vec<usize>,
    /// Size in bytes (`usize::MAX` when it overflows).
    pub bytes: usize,
}

impl fmt::Display for PlanEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape = self.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ");
        write!(
            f,
            "{:<6} {:<9} {:<36} `{}` {}[{}]  {}",
            self.value,
            self.kind,
            self.op,
            self.output,
            self.dtype,
            shape,
            human_bytes(self.bytes)
        )
    }
}

/// Bytes of a buffer, saturating at `usize::MAX`.
pub fn buffer_bytes(dtype: DType, shape: &[usize]) -> usize {
    checked_numel(shape).and_then(|n| n.checked_mul(dtype.size())).unwrap_or(usize::MAX)
}

/// `12.0 MiB` style sizes.
pub fn human_bytes(b: usize) -> String {
    if b == usize::MAX {
        return "overflow".to_string();
    }
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The memory plan of a tape: every intermediate's bytes, computed from static shapes before
/// anything runs. Buffers are counted without reuse, so `total_bytes` is an upper bound.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MemoryPlan {
    /// Every planned buffer in recording order.
    pub entries: Vec<PlanEntry>,
    /// Sum of all entries (saturating).
    pub total_bytes: usize,
    /// The budget, if one is set.
    pub budget: Option<usize>,
}

impl MemoryPlan {
    #[doc(hidden)]
    pub fn new(entries: Vec<PlanEntry>, budget: Option<usize>) -> MemoryPlan {
        let total_bytes = entries.iter().fold(0usize, |a, e| a.saturating_add(e.bytes));
        MemoryPlan { entries, total_bytes, budget }
    }

    /// The `k` largest buffers, largest first.
    pub fn largest(&self, k: usize) -> Vec<PlanEntry> {
        let mut v = self.entries.clone();
        v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.value.cmp(&b.value)));
        v.truncate(k);
        v
    }

    /// Whether the plan fits its budget (always, without one).
    pub fn fits(&self) -> bool {
        self.budget.is_none_or(|b| self.total_bytes <= b)
    }
}

impl fmt::Display for MemoryPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let budget = self.budget.map(human_bytes).unwrap_or_else(|| "none".to_string());
        writeln!(f, "memory plan ({} buffers, {} planned, budget {budget})", self.entries.len(), human_bytes(self.total_bytes))?;
        for e in &self.entries {
            writeln!(f, "  {e}")?;
        }
        Ok(())
    }
}
