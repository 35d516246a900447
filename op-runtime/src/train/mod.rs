//! Floor 2, training: the tape (recording, memory planning, forward through dispatch, backward
//! through declared VJPs and derived composites) and its optimisers. Imports only `core`.

pub mod optim;
pub mod tape;
