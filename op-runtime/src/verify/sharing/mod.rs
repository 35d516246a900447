//! Sharing: op cards (source, trust, tolerance, receipts) and a content-addressed store of
//! published cards and kernel sources. Nothing here gates local use of an op.
//!
//! ```ignore
//! let store = op_runtime::sharing::Store::open("ops-store");
//! let receipt = op_runtime::conformance::conform(&handle, BackendKind::Reference)?;
//! store.publish(&handle.op(), &[receipt])?;
//! let loaded = store.load("user/example/blur@1")?;
//! println!("{}", loaded.card_for(&device));
//! ```

mod blobs;
mod card;
mod error;
mod load;
mod store;

pub use card::{blob_hash, HeaderEntry, KernelEntry, OpCard, Trust, CARD_FORMAT};
pub use error::SharingError;
pub use load::{LoadedCard, LoadedKernel};
pub use store::{IndexEntry, IndexHeader, IndexKernel, PublishedId, Store, INDEX_FORMAT};
