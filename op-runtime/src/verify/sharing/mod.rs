//! Sharing: op cards (source, trust per declared kernel, tolerance, receipts) and a
//! content-addressed store of published cards, kernel sources and receipts. Nothing here gates
//! local use of an op.
//!
//! ```ignore
//! let store = op_runtime::verify::sharing::Store::open("ops-store");
//! let key = op_runtime::core::trust::SigningKey::load(Path::new("/home/me/.config/op/receipts.key"))?;
//! let receipt = op_runtime::conform(&handle, BackendKind::Wgpu)?.signed(&key)?;
//! store.publish(&handle.op(), &[receipt])?;
//! // elsewhere:
//! let trust = op_runtime::core::trust::TrustList::load(Path::new("/home/you/.config/op/trusted-keys"))?;
//! let loaded = store.load("user/example/blur@1")?;
//! println!("{}", loaded.card_for(&LocalDevices::of(op_runtime::registry()), &trust));
//! ```

mod blobs;
mod card;
mod error;
mod load;
mod store;

pub use card::{blob_hash, HeaderEntry, KernelEntry, KernelTrust, LocalDevices, OpCard, Trust, CARD_FORMAT};
pub use error::SharingError;
pub use load::{LoadedCard, LoadedKernel};
pub use store::{IndexEntry, IndexHeader, IndexKernel, PublishedId, RepairReport, Store, INDEX_FORMAT};
