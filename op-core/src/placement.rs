//! Where a tensor lives: [`crate::device`] owns it; this path is kept for code written against
//! it.

pub use crate::device::{DeviceId, DeviceStorage, Placement};
