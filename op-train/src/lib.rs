#![warn(missing_docs)]
//! Training (floor 2): the tape (recording, memory planning, forward through dispatch, backward
//! through declared VJPs and derived composites) and its optimisers. Imports only `core`. The
//! public names are re-exported here; the modules themselves are the crate's.

pub mod optim;
pub mod tape;

pub use optim::Sgd;
pub use tape::{
    human_bytes, infer, BufferKind, Grads, Inferred, MemoryPlan, Mode, PlanEntry, Pullback, Run, SharedDevice, Tape, TapeError, Var,
};
pub use tape::{vmap, GradFn, Hvp, InAxis, Tangents, TapeFn, TensorFn, Vmap};
