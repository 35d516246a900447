#![warn(missing_docs)]
//! Training (floor 2): the tape (recording, memory planning, forward through dispatch, backward
//! through declared VJPs and derived composites) and its optimisers. Imports only `core`. The
//! public names are re-exported here; the modules themselves are the crate's.
//!
//! A crate of op-runtime (users depend on the facade, `op-runtime`); cargo enforces the floors.
//! Items marked `#[doc(hidden)]` are shared with the floors above and are not part of the API.

// Unit tests run on the built-ins: linking op-builtins installs them into every default registry.
#[cfg(test)]
use op_builtins as _;

pub mod optim;
pub mod tape;

pub use optim::Sgd;
pub use tape::{
    human_bytes, infer, BufferKind, Grads, Inferred, MemoryPlan, Mode, PlanEntry, Pullback, Run, SharedDevice, Tape, TapeError, Var,
};
pub use tape::{vmap, GradFn, Hvp, InAxis, Tangents, TapeFn, TensorFn, Vmap};
