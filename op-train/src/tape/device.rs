//! A tape run on a device (`Tape::set_device`): fed values that live on the device stay there
//! (host feeds are uploaded, counted), parameters are uploaded at each run (the parameter
//! update crossing), every intermediate, cotangent and gradient stays on the device, and
//! backward reads back only the parameters' gradients (`Run::scalar` reads the loss). An op
//! whose backward declares VJP kernels differentiates through its VJP op, dispatched like any
//! call; another op's VJP rule runs on the host, its inputs read back and its gradients
//! uploaded, each transfer counted by the device, so the bytes a step moves tell which ops
//! still round-trip.

use super::{exec, shim_err, Node, Tape, TapeError};
use op_core::device::Placement;
use op_core::op::RegisteredOp;
use op_core::provenance::ProvenanceRecord;
use op_core::registry::OpHandle;
use op_core::tensor::Device;
use op_core::tensor::Tensor;

/// A device a tape runs on: an engine that lives as long as the process (`WgpuEngine::shared()`,
/// `CudaEngine::shared()`, or one leaked on purpose).
pub type SharedDevice = &'static (dyn Device + Send + Sync);

/// `t` where the tape's values live: as is without a device; on the device otherwise (a host
/// tensor uploaded, counted; one on another device refused).
pub fn place(device: Option<SharedDevice>, what: &str, t: &Tensor) -> Result<Tensor, TapeError> {
    match device {
        None => Ok(t.clone()),
        Some(d) => d.upload(t).map_err(|e| TapeError::Device { what: what.to_string(), reason: e.to_string() }),
    }
}

/// `t` on the host (read back, counted, if it lives on a device).
pub fn to_host(what: &str, t: &Tensor) -> Result<Tensor, TapeError> {
    t.to_host().map_err(|e| TapeError::Device { what: what.to_string(), reason: e.to_string() })
}

impl Tape {
    /// Runs the tape on `device` (`None`: on host tensors, the default). Feeds may then live on
    /// the device (host feeds are uploaded at each run, counted); parameters stay host tensors
    /// that each run uploads; backward keeps cotangents and gradients on the device and reads
    /// back only the parameters' gradients. Reference mode (gradcheck's f64) runs on the host
    /// only: a device there is a typed error.
    pub fn set_device(&mut self, device: Option<SharedDevice>) -> Result<(), TapeError> {
        if device.is_some() && self.mode != super::Mode::Dispatch {
            return Err(TapeError::Device { what: "the tape".into(), reason: "reference mode runs in f64 on the host only".into() });
        }
        self.device = device;
        Ok(())
    }

    /// The device the tape runs on, if any.
    pub fn device(&self) -> Option<Placement> {
        self.device.map(|d| Placement::Device(d.id()))
    }

    /// Whether a fed tensor may be fed: a host tensor always (uploaded where the tape runs on a
    /// device), a device tensor only on the tape's device.
    pub fn feedable(&self, t: &Tensor) -> bool {
        match (t.device_storage(), &self.device) {
            (None, _) => true,
            (Some(s), Some(d)) => s.device() == d.id(),
            (Some(_), None) => false,
        }
    }

    /// `acc += g` where either lives on a device: `builtin/add` dispatched on them (the sum
    /// stays on the device).
    pub fn accumulate_on_device(&self, op: &str, acc: &mut Tensor, g: &Tensor) -> Result<(), TapeError> {
        let add: OpHandle = self.registry.lookup("builtin/add")?;
        let what = format!("the gradient accumulated for `{op}`");
        let (a, b) = (place(self.device, &what, acc)?, place(self.device, &what, g)?);
        let out = add.call_with(&[&a, &b], &[], self.options)?;
        *acc = out
            .outputs
            .into_iter()
            .next()
            .ok_or_else(|| TapeError::Shim { op: op.to_string(), message: "`builtin/add` returned nothing".into() })?;
        Ok(())
    }

    /// Whether the backend the VJP op `h`'s call would run on supports it (has a kernel serving
    /// its instance): the one of the device the values live on, else the one the tape's options
    /// force; without either, default selection (the reference runs any rule). Otherwise the rule runs on the host (the
    /// transfers it needs counted), never a refused call.
    fn runs_here(&self, h: &OpHandle, values: &[&Tensor], params: &[op_core::tensor::Scalar]) -> bool {
        let on = values.iter().find_map(|t| t.device_storage()).map(|s| s.device().backend).or(self.options.backend);
        let Some(kind) = on else { return true };
        let op = h.op();
        let inst = match op.member_for(values, params) {
            Ok(Some(m)) => m.clone(),
            Ok(None) => op,
            Err(_) => return false,
        };
        // The backend's own test, the one dispatch applies.
        self.registry.backend(kind).is_some_and(|b| b.supports(&inst).is_ok())
    }

    /// `acc += g`: on the host for host tensors, through `builtin/add` where either lives on a
    /// device.
    pub fn accumulate(&self, op: &str, acc: &mut Tensor, g: &Tensor) -> Result<(), TapeError> {
        match acc.is_host() && g.is_host() {
            true => super::accumulate(op, acc, g),
            false => self.accumulate_on_device(op, acc, g),
        }
    }

    /// One gradient per differentiable input of node `n`: through the op's VJP op where its
    /// backward declares VJP kernels (dispatched: on the device where the values live, its
    /// provenance recorded); else through the VJP rule, on the host (values on a device are
    /// read back and the gradients uploaded, each transfer counted).
    pub fn vjp(
        &self,
        n: &Node,
        op: &RegisteredOp,
        ins: &[&Tensor],
        cots: &[&Tensor],
        provenance: &mut ProvenanceRecord,
    ) -> Result<Vec<Tensor>, TapeError> {
        // A broadcasting op's VJP (its rule or its VJP op) runs on the operands expanded to the
        // cotangent's (the broadcast) shape; the gradients are summed back to each operand's.
        if let (true, Some(to)) = (op.plan.broadcasts(), cots.first().map(|c| c.shape().to_vec())) {
            if let Some(expanded) = op_core::broadcast::expand_inputs(op, ins, &to)? {
                let refs: Vec<&Tensor> = expanded.iter().collect();
                let gs = self.vjp(n, op, &refs, cots, provenance)?;
                let host: Vec<Tensor> = gs.iter().map(|g| to_host(&op.id, g)).collect::<Result<_, _>>()?;
                return exec::reduce_grads(op, ins, host).map_err(shim_err(op));
            }
        }
        if self.mode == super::Mode::Dispatch {
            let all: Vec<&Tensor> = ins.iter().chain(cots).copied().collect();
            if let Some(h) = n.handle.vjp_op().filter(|h| self.runs_here(h, &all, &n.params)) {
                let mut out = h.call_with(&all, &n.params, self.options)?;
                self.attach_receipt(&mut out.provenance);
                provenance.push(out.provenance);
                return Ok(out.outputs);
            }
        }
        if ins.iter().chain(cots).all(|t| t.is_host()) {
            return exec::vjp(op, ins, &n.params, cots, self.mode).map_err(shim_err(op));
        }
        let what = format!("the VJP rule of `{}` (it runs on the host: declare VJP kernels to keep it on the device)", op.id);
        let hins = ins.iter().map(|t| to_host(&what, t)).collect::<Result<Vec<_>, _>>()?;
        let hcots = cots.iter().map(|t| to_host(&what, t)).collect::<Result<Vec<_>, _>>()?;
        let (ri, rc): (Vec<&Tensor>, Vec<&Tensor>) = (hins.iter().collect(), hcots.iter().collect());
        let gs = exec::vjp(op, &ri, &n.params, &rc, self.mode).map_err(shim_err(op))?;
        gs.iter().map(|g| place(self.device, &what, g)).collect()
    }
}
