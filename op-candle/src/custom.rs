//! candle's hooks for a registered op: `cpu_fwd` reads candle CPU storage through its layout and
//! dispatches through the registry; `bwd` hands candle's tensors and cotangent to the tape's
//! pullback (the op's VJP op, VJP rule or composite graph); `cuda_fwd` and `metal_fwd` refuse.
//! A hook's typed error is kept in the op's log, candle carrying its text.

use crate::convert::{self, Site};
use crate::error::Error;
use crate::shared::Shared;
use candle_core::{CpuStorage, CudaStorage, CustomOp1, CustomOp2, CustomOp3, Layout, MetalStorage, Shape};
use op_runtime::{Tape, Tensor};
use std::sync::Arc;

/// The hooks of one [`crate::CandleOp`], shared with it.
pub(crate) struct Custom(pub(crate) Arc<Shared>);

/// The gradients of up to three inputs, as candle's `bwd` returns them.
type Grads = Vec<Option<candle_core::Tensor>>;

impl Custom {
    /// `f`'s result, or its error kept typed in the log and handed to candle as text.
    fn guard<T>(&self, f: impl FnOnce() -> Result<T, Error>) -> candle_core::Result<T> {
        f().map_err(|e| {
            let text = e.to_string();
            self.0.log().error = Some(e);
            candle_core::Error::Msg(text)
        })
    }

    fn input_name(&self, k: usize) -> String {
        match self.0.handle.op().contract().signature.inputs().nth(k) {
            Some(s) => format!("input `{}`", s.name),
            None => format!("input {k}"),
        }
    }

    /// The forward on candle CPU storages: each read through its layout (a strided one is
    /// `Error::Strided`, never read as contiguous), then one dispatch through the registry.
    fn forward(&self, args: &[(&CpuStorage, &Layout)]) -> candle_core::Result<(CpuStorage, Shape)> {
        self.guard(|| {
            let op = self.0.name;
            let mut tensors = Vec::with_capacity(args.len());
            for (k, (s, l)) in args.iter().enumerate() {
                tensors.push(convert::tensor_from_cpu(&Site { op, what: &self.input_name(k) }, s, l)?);
            }
            let refs: Vec<&Tensor> = tensors.iter().collect();
            let outs = self.0.dispatch(&refs)?;
            let given = outs.len();
            let out = outs.into_iter().next().filter(|_| given == 1).ok_or(Error::NoCustomOp {
                op: op.to_string(),
                inputs: args.len(),
                outputs: given,
            })?;
            convert::cpu_from_tensor(&Site { op, what: "output 0" }, out)
        })
    }

    /// The backward: candle's arguments and the output's cotangent to the tape's pullback; one
    /// gradient per argument (`None` for a non-float one).
    fn backward(&self, args: &[&candle_core::Tensor], grad_res: &candle_core::Tensor) -> candle_core::Result<Grads> {
        self.guard(|| {
            let (op, s) = (self.0.name, &self.0);
            let mut inputs = Vec::with_capacity(args.len());
            for (k, t) in args.iter().enumerate() {
                inputs.push(convert::tensor_from_candle(&Site { op, what: &self.input_name(k) }, t)?);
            }
            let cot = convert::tensor_from_candle(&Site { op, what: "the cotangent of output 0" }, grad_res)?;
            let mut tape = Tape::with_registry(s.handle.registry());
            tape.set_call_options(s.options);
            let pb = tape.pullback(&s.handle, inputs, &s.params, vec![cot])?;
            {
                let mut log = s.log();
                if let Some(all) = log.all.as_mut() {
                    all.entries.extend(pb.provenance.entries.iter().cloned());
                }
                log.backward = Some(pb.provenance);
            }
            let mut grads = Vec::with_capacity(pb.grads.len());
            for (k, g) in pb.grads.into_iter().enumerate() {
                let what = format!("the gradient of {}", self.input_name(k));
                grads.push(g.map(|g| convert::candle_from_tensor(&Site { op, what: &what }, g)).transpose()?);
            }
            Ok(grads)
        })
    }

    /// The refusal of a tensor on a GPU device (see the crate docs on CUDA).
    fn on_gpu<T>(&self, device: &str) -> candle_core::Result<T> {
        self.guard(|| Err(Error::Device { op: self.0.name.to_string(), what: "an input".into(), device: device.into() }))
    }
}

/// The `k`-th gradient of a pullback, or `None` where it has fewer.
fn nth(g: &mut Grads, k: usize) -> Option<candle_core::Tensor> {
    g.get_mut(k).and_then(Option::take)
}

impl CustomOp1 for Custom {
    fn name(&self) -> &'static str {
        self.0.name
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        self.forward(&[(s, l)])
    }
    fn cuda_fwd(&self, _: &CudaStorage, _: &Layout) -> candle_core::Result<(CudaStorage, Shape)> {
        self.on_gpu("a candle CUDA device")
    }
    fn metal_fwd(&self, _: &MetalStorage, _: &Layout) -> candle_core::Result<(MetalStorage, Shape)> {
        self.on_gpu("a candle Metal device")
    }
    fn bwd(
        &self,
        arg: &candle_core::Tensor,
        _res: &candle_core::Tensor,
        grad_res: &candle_core::Tensor,
    ) -> candle_core::Result<Option<candle_core::Tensor>> {
        let mut g = self.backward(&[arg], grad_res)?;
        Ok(nth(&mut g, 0))
    }
}

impl CustomOp2 for Custom {
    fn name(&self) -> &'static str {
        self.0.name
    }
    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        self.forward(&[(s1, l1), (s2, l2)])
    }
    fn cuda_fwd(&self, _: &CudaStorage, _: &Layout, _: &CudaStorage, _: &Layout) -> candle_core::Result<(CudaStorage, Shape)> {
        self.on_gpu("a candle CUDA device")
    }
    fn metal_fwd(&self, _: &MetalStorage, _: &Layout, _: &MetalStorage, _: &Layout) -> candle_core::Result<(MetalStorage, Shape)> {
        self.on_gpu("a candle Metal device")
    }
    fn bwd(
        &self,
        a: &candle_core::Tensor,
        b: &candle_core::Tensor,
        _res: &candle_core::Tensor,
        grad_res: &candle_core::Tensor,
    ) -> candle_core::Result<(Option<candle_core::Tensor>, Option<candle_core::Tensor>)> {
        let mut g = self.backward(&[a, b], grad_res)?;
        Ok((nth(&mut g, 0), nth(&mut g, 1)))
    }
}

impl CustomOp3 for Custom {
    fn name(&self) -> &'static str {
        self.0.name
    }
    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        self.forward(&[(s1, l1), (s2, l2), (s3, l3)])
    }
    fn cuda_fwd(
        &self,
        _: &CudaStorage,
        _: &Layout,
        _: &CudaStorage,
        _: &Layout,
        _: &CudaStorage,
        _: &Layout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        self.on_gpu("a candle CUDA device")
    }
    fn metal_fwd(
        &self,
        _: &MetalStorage,
        _: &Layout,
        _: &MetalStorage,
        _: &Layout,
        _: &MetalStorage,
        _: &Layout,
    ) -> candle_core::Result<(MetalStorage, Shape)> {
        self.on_gpu("a candle Metal device")
    }
    #[allow(clippy::type_complexity)]
    fn bwd(
        &self,
        a: &candle_core::Tensor,
        b: &candle_core::Tensor,
        c: &candle_core::Tensor,
        _res: &candle_core::Tensor,
        grad_res: &candle_core::Tensor,
    ) -> candle_core::Result<(Option<candle_core::Tensor>, Option<candle_core::Tensor>, Option<candle_core::Tensor>)> {
        let mut g = self.backward(&[a, b, c], grad_res)?;
        Ok((nth(&mut g, 0), nth(&mut g, 1), nth(&mut g, 2)))
    }
}
