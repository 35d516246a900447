#![warn(missing_docs)]
// burn 0.22 marks burn-ndarray deprecated (in favour of burn-flex); issue 36 asks for `NdArray`,
// which 0.22 still ships and dispatches to.
#![allow(deprecated)]
//! Registered ops on burn tensors: any op of an op-runtime registry, with its scalar parameters,
//! applied to burn 0.22 tensors on burn's CPU backend (`NdArray`, `f32` and `f64`); under burn's
//! autodiff its backward is the op's declared backward, so burn's gradient equals the tape's.
//!
//! ```
//! use burn_tensor::{Device, Tensor, TensorData};
//! use op_burn::BurnOp;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tanh = BurnOp::new(&op_runtime::registry().lookup("builtin/tanh")?, &[]);
//! let device = Device::ndarray().autodiff();
//! let x = Tensor::<1>::from_data(TensorData::new(vec![-1.0f32, 0.0, 2.0], [3]), &device).require_grad();
//! let y: Tensor<1> = tanh.apply(&[x.clone()])?;      // forward through the registry
//! let grads = y.sum().backward();                     // backward through tanh's VJP
//! let dx = x.grad(&grads).expect("a gradient").into_data().to_vec::<f32>()?;
//! assert!((dx[1] - 1.0).abs() < 1e-6);
//! println!("ran on {}", tanh.last_forward().expect("one call").backend);
//! # Ok(())
//! # }
//! ```
//!
//! - **Tensors.** burn 0.22's `Tensor<D>` dispatches at run time to a backend; the adapter
//!   serves its `NdArray` backend, plain (`Device::ndarray()`) or under autodiff
//!   (`Device::ndarray().autodiff()`), float tensors of dtype `f32` or `f64`. An int, bool or
//!   quantized tensor is [`Error::UnsupportedDType`]; a tensor of another dispatch backend (in a
//!   build whose burn features add one: cubecl's wgpu, CUDA, ...) is [`Error::Device`].
//! - **Forward** ([`BurnOp::apply`]) runs at the call: each input is read (one copy, in logical
//!   order whatever its strides) into a runtime tensor and the op dispatches through its registry
//!   (its `cpu` kernel where it has one, or the backend [`BurnOp::with_options`] names); the
//!   output moves into an `NdArray` tensor without a copy. So every refusal of the contract (a
//!   rank, shape or dtype, a parameter outside its constraint) is [`Error::Dispatch`] at the
//!   call, before burn's graph changes.
//! - **Backward.** Where an input is an autodiff tensor, the call registers a step in burn's
//!   graph (burn-autodiff's `Backward`, compute bound) whose backward runs
//!   [`op_runtime::Tape::pullback`]: the op's VJP op where its backward declares VJP kernels
//!   (dispatched), else its VJP rule, else its composite graph, exactly as the tape's `backward`
//!   does. A plain input beside an autodiff one is a constant. A tracked call of an op declared
//!   `backward = none` is [`Error::Backward`] at the call. [`BurnOp::register_checked`] runs the
//!   project's gradcheck first and refuses a backward that disagrees with central differences.
//! - **Provenance**: [`BurnOp::last_forward`], [`BurnOp::last_backward`], and every call with
//!   [`BurnOp::recording`] and [`BurnOp::take_record`].
//! - **Arity.** `apply` takes ops of 1 to [`MAX_INPUTS`] tensor inputs and one output;
//!   [`BurnOp::call`] runs any op and returns every output, without gradients. A scalar output is
//!   a one-element rank-1 burn tensor.
//! - **wgpu.** burn's wgpu backend (cubecl's runtime, with its own `wgpu` device, queue and
//!   memory pool) is not served: see the guide's limitations chapter
//!   (`docs/guide/limitations.md`).

mod convert;
mod error;
mod op;
mod shared;

pub use error::{Error, MAX_INPUTS};
pub use op::BurnOp;
