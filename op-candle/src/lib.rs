#![warn(missing_docs)]
//! Registered ops as candle custom ops: any op of an op-runtime registry, with its scalar
//! parameters, applied to candle tensors; candle's `backward` flows through it.
//!
//! ```
//! use candle_core::{Device, Tensor, Var};
//! use op_candle::CandleOp;
//! use op_runtime::Scalar;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tanh = CandleOp::new(&op_runtime::registry().lookup("builtin/tanh")?, &[]);
//! let x = Var::from_vec(vec![-1.0f32, 0.0, 2.0], 3, &Device::Cpu)?;
//! let y = tanh.apply(&[x.as_tensor()])?;             // forward through the registry
//! let grads = y.sum_all()?.backward()?;              // backward through tanh's VJP
//! let dx = grads.get(&x).expect("a gradient").to_vec1::<f32>()?;
//! assert!((dx[1] - 1.0).abs() < 1e-6);
//! println!("ran on {}", tanh.last_forward().expect("one call").backend);
//! # let _ = Scalar::U32(0);
//! # Ok(())
//! # }
//! ```
//!
//! - **Arity.** [`CandleOp::apply`] uses candle's `CustomOp1`, `CustomOp2` or `CustomOp3` by the
//!   op's number of tensor inputs. An op with more than three tensor inputs, none, or several
//!   outputs is [`Error::NoCustomOp`] there; [`CandleOp::call`] runs any op through the registry
//!   and returns every output as a candle tensor, without gradients.
//! - **Forward** reads each candle CPU storage through its layout and dispatches through the op's
//!   registry (the op's `cpu` kernel where it has one, by the registry's usual selection, or the
//!   backend [`CandleOp::with_options`] names). A runtime tensor owns its storage, so the inputs
//!   are copied once; the output moves into candle without a copy.
//! - **Backward** runs [`op_runtime::Tape::pullback`]: the op's VJP op where its
//!   backward declares VJP kernels (dispatched), else its VJP rule, else its composite graph,
//!   exactly as the tape's `backward` does, so candle's gradient equals the tape's.
//! - **Provenance**: [`CandleOp::last_forward`], [`CandleOp::last_backward`], and every call with
//!   [`CandleOp::recording`] and [`CandleOp::take_record`].
//! - **Layouts**: a strided input (transposed, broadcast, narrowed across rows) is copied by
//!   candle's `contiguous()` before the call by default ([`Strided::Copy`], recorded in candle's
//!   graph), or refused ([`Strided::Refuse`]); the forward hook itself refuses any layout that is
//!   not row-major contiguous ([`Error::Strided`]) and reads the contiguous range at its offset.
//! - **Dtypes**: `f16`, `bf16`, `f32`, `f64` and the integers both libraries have (`u8`, `u32`,
//!   `i16`, `i32`, `i64`) map one to one; candle's 8-, 6- and 4-bit floats, and op-runtime's
//!   `bool`, `i8`, `u16`, `u64` outputs, are [`Error::UnsupportedDType`]. Nothing is converted:
//!   an op that does not serve a dtype refuses it through dispatch ([`Error::Dispatch`]).
//! - **CUDA**: [`CandleOp::on_cuda`] (op-candle's `cuda` feature compiles op-runtime's CUDA
//!   backend in) runs the op's verified CUDA kernels, forward and VJP, on candle CPU tensors,
//!   copying each call's inputs to the device and its outputs back; where the backend is not
//!   compiled in or cannot run (no driver, no GPU) it is [`Error::NoCuda`].
//! - **candle's own CUDA and Metal tensors** are refused with [`Error::Device`], never copied
//!   implicitly. candle-core 0.11 and op-runtime both use cudarc 0.19, but candle's `cuda`
//!   feature links cudarc with `dynamic-linking` (and a CUDA version read from the installed
//!   toolkit) and op-runtime's `cuda` feature with `dynamic-loading`, and cudarc's build script
//!   refuses both in one build: a binary cannot hold candle's CUDA backend and op-runtime's, so a
//!   candle CUDA tensor has no op-runtime engine to share its device with. Move it with
//!   `to_device(&Device::Cpu)` first, and use `on_cuda` for the op's CUDA kernels.
//!
//! Candle ops and registered ops mix in one graph (the interop chapter of op-runtime's guide,
//! `op_runtime::guide::interop`, describes both adapters):
//!
//! ```
//! use candle_core::{Device, Tensor, Var};
//! use op_candle::CandleOp;
//! use op_runtime::Scalar;
//!
//! let r = op_runtime::registry();
//! let scale = CandleOp::new(&r.lookup("builtin/scale").unwrap(), &[Scalar::F32(3.0)]);
//! let tanh = CandleOp::new(&r.lookup("builtin/tanh").unwrap(), &[]);
//! let x = Var::from_vec(vec![0.1f32, -0.2, 0.3], 3, &Device::Cpu).unwrap();
//! let y = tanh.apply(&[&scale.apply(&[x.as_tensor()]).unwrap()]).unwrap();
//! let loss = (y.sqr().unwrap().sum_all().unwrap() * 0.5).unwrap(); // candle's own ops
//! let grads = loss.backward().unwrap(); // through tanh's and scale's VJPs
//! assert_eq!(grads.get(x.as_tensor()).unwrap().dims(), &[3]);
//! println!("{}", tanh.last_forward().unwrap()); // op, content hash, backend, device
//! print!("{}", tanh.last_backward().unwrap()); // the VJP op's call
//! ```
//!
//! Errors: candle's hooks carry errors as text; [`CandleOp::apply`] and [`CandleOp::call`]
//! return the typed [`Error`], and after a failed `backward` [`CandleOp::take_error`] gives it.

mod adapter;
mod convert;
mod custom;
mod error;
mod shared;

pub use adapter::{CandleOp, Strided};
pub use convert::runtime_dtype;
pub use error::Error;
