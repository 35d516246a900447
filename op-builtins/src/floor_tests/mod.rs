//! Unit tests of the floors below that need a built-in op to work on: a lower crate cannot name
//! this one, so they run here, against the lower crates' public items.

mod core_dispatch;
mod core_registry;
mod core_shim;
mod train_planner;
mod verify_errors;
mod verify_gradcheck;
mod verify_scale;
