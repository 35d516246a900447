//! Sharing: op cards (source, trust per declared kernel, tolerance, receipts) and a
//! content-addressed store of published cards, kernel sources and receipts. Nothing here gates
//! local use of an op.
//!
//! ```
//! use op_runtime::trust::{SigningKey, TrustList};
//! use op_runtime::sharing::{LocalDevices, Store};
//! use op_runtime::{op, BackendKind, Real};
//!
//! /// `x + x` (published ops need a licence and a visibility other than private).
//! #[op(name = "user/doc/double", version = 1, signature(x: f32[n]) -> f32[n],
//!      category = elementwise, tolerance = ulp(0), backward = none, license = "MIT", visibility = workspace)]
//! pub fn double<T: Real>(x: &[T]) -> Vec<T> {
//!     x.iter().map(|v| *v + *v).collect()
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let key_path = dir.path().join("receipts.key");
//! # SigningKey::create(&key_path)?;
//! let store = Store::open(dir.path().join("ops-store"));
//! let key = SigningKey::load(&key_path)?;
//! let handle = op_runtime::register(&double::DECL)?;
//! let receipt = op_runtime::conform(&handle, BackendKind::Reference)?.signed(&key)?;
//! store.publish(&handle.op(), &[receipt])?;
//! // elsewhere, with the publisher's key on the trust list:
//! let mut trust = TrustList::new();
//! trust.trust(key.public_key(), "the publisher");
//! let loaded = store.load("user/doc/double@1")?;
//! println!("{}", loaded.card_for(&LocalDevices::of(op_runtime::registry()), &trust));
//! # Ok(())
//! # }
//! ```

mod bar;
mod blobs;
mod card;
mod error;
mod load;
mod repair;
mod show;
mod store;

pub use bar::public_bar;
pub use card::{blob_hash, CpuEntry, HeaderEntry, KernelEntry, KernelTrust, LocalDevices, OpCard, Trust, CARD_FORMAT};
pub use error::{Missing, SharingError};
pub use load::{LoadedCard, LoadedKernel};
pub use repair::{RepairReport, UnreadableBlob};
pub use store::{IndexEntry, IndexHeader, IndexKernel, PublishedId, Store, INDEX_FORMAT};
