#![warn(missing_docs)]
//! Registered ops on ndarray arrays: tensors from and to arrays, and a call form that takes and
//! returns arrays.
//!
//! ```
//! use ndarray::{array, Array1};
//! use op_ndarray::CallNd;
//! use op_runtime::Scalar;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let scale = op_runtime::registry().lookup("builtin/scale")?;
//! let x: Array1<f32> = array![1.0, -2.0, 4.0];
//! let y = scale.call_nd(&[&x.view()], &[Scalar::F32(0.5)])?.into_array::<f32>()?;
//! assert_eq!(y.as_slice(), Some(&[0.5f32, -1.0, 2.0][..]));
//!
//! // An owned standard-layout array moves into a tensor and back without a copy.
//! let a = array![[1.0f64, 2.0], [3.0, 4.0]];
//! let ptr = a.as_ptr();
//! let t = op_ndarray::into_tensor(a)?;
//! let back = op_ndarray::into_array::<f64>(t)?;
//! assert_eq!(back.as_ptr(), ptr);
//! # Ok(())
//! # }
//! ```
//!
//! What copies and what does not (a runtime `Tensor` owns a `Vec`; it cannot borrow):
//!
//! | conversion | copy |
//! | --- | --- |
//! | [`into_tensor`]: owned array in standard layout -> tensor | none (its vector moves) |
//! | [`into_tensor`]: owned array in another layout (transposed) | refused: [`Error::NotStandard`], the array handed back |
//! | [`copy_to_tensor`]: any array or view, any layout -> tensor | one, in logical order (explicit) |
//! | [`into_array`]: host tensor -> owned array | none (its vector moves) |
//! | [`view_of`]: `&Tensor` -> array view | none (borrowed) |
//! | [`CallNd::call_nd`]: inputs | one per input (as `copy_to_tensor`) |
//! | [`CallNd::call_nd`]: outputs ([`NdOutcome::into_arrays`], [`NdOutcome::view`]) | none |
//!
//! An op on a matrix and a transposed view (copied in logical order), and the zero-copy round
//! trip checked by pointer equality (the interop chapter of op-runtime's guide,
//! `op_runtime::guide::interop`, describes both adapters):
//!
//! ```
//! use ndarray::{array, Array2};
//! use op_ndarray::CallNd;
//!
//! let mm = op_runtime::registry().lookup("builtin/matmul").unwrap();
//! let a: Array2<f32> = array![[1.0, 2.0], [3.0, 4.0]];
//! let b: Array2<f32> = array![[1.0, 0.0], [1.0, 1.0]];
//! let out = mm.call_nd(&[&a.view(), &b.t()], &[]).unwrap(); // b.t(): copied in logical order
//! println!("ran on {}", out.provenance.backend);
//! assert_eq!(out.into_array::<f32>().unwrap(), array![[1.0f32, 3.0], [3.0, 7.0]].into_dyn());
//!
//! let ptr = a.as_ptr();
//! let t = op_ndarray::into_tensor(a).unwrap(); // no copy
//! let back = op_ndarray::into_array::<f32>(t).unwrap(); // no copy
//! assert_eq!(back.as_ptr(), ptr);
//! assert!(op_ndarray::into_tensor(back.reversed_axes()).is_err()); // transposed: refused, handed back
//! ```
//!
//! Element types are every dtype of op-runtime ([`NdElement`]); a tensor of another dtype than
//! the one asked for is [`Error::DType`], a device tensor [`Error::Device`]: nothing is
//! converted or moved between devices implicitly.

mod call;
mod convert;
mod error;

pub use call::{CallNd, NdInput, NdOutcome};
pub use convert::{copy_to_tensor, into_array, into_tensor, view_of, NdElement};
pub use error::{Error, Refused};
