//! The launch plan and marshalling shared by the GPU backends. At `prepare` a kernel's binding
//! descriptor is resolved once into a [`LaunchPlan`] (each slot's role: which input, which
//! output, which dims and params fill the uniform block; the launch geometry compiled); each
//! call then marshals through the same code on wgpu and CUDA ([`LaunchPlan::marshal`]), with
//! every size checked, and turns the bytes read back into tensors
//! ([`LaunchPlan::outputs`]). It knows no device API.

use op_contract::contract::{Access, Binding, DType, KernelLang};
use op_core::backend::{BackendError, ExecRequest};
use op_core::kind::BackendKind;
use op_core::op::RegisteredOp;
use op_core::plan::IExpr;
use op_core::tensor::{checked_numel, Data, Scalar, Tensor};
use std::borrow::Cow;

/// Index of the op's kernel in `lang`, if a GPU backend can run the op at all (GPU launches need
/// static output sizes); `Unsupported` with the reason otherwise.
pub fn gpu_kernel(op: &RegisteredOp, lang: KernelLang) -> Result<usize, BackendError> {
    if let Some(class) = op.plan.shape_class() {
        return Err(BackendError::Unsupported(format!("`output = {class}` ops run on host backends only").into()));
    }
    let name = match lang {
        KernelLang::Wgsl => "WGSL",
        KernelLang::Cuda => "CUDA",
    };
    let kind = BackendKind::for_kernel(lang);
    if kind.runs_kernel(op.contract.kernels.iter().map(|k| k.lang)).is_none() {
        return Err(BackendError::Unsupported(format!("the op declares no {name} kernel").into()));
    }
    // Of an op with dtype variables, the kernel serving this instance's binding.
    (0..op.contract.kernels.len()).find(|&i| op.contract.kernels[i].lang == lang && op.contract.kernel_serves(i)).ok_or_else(|| {
        BackendError::Unsupported(
            format!("the op's {name} kernels do not serve `{}` (no silent conversion: run another backend)", op.binding_text()).into(),
        )
    })
}

/// One value of a uniform block (WGSL) or one scalar kernel parameter (CUDA).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FieldValue {
    /// A dim, or a `u32` parameter.
    U32(u32),
    /// An `i32` parameter.
    I32(i32),
    /// An `f32` parameter.
    F32(f32),
}

#[cfg(feature = "wgpu")]
impl FieldValue {
    /// The 4 little-endian bytes of the value (a WGSL uniform block's field).
    pub fn to_le_bytes(self) -> [u8; 4] {
        match self {
            FieldValue::U32(v) => v.to_le_bytes(),
            FieldValue::I32(v) => v.to_le_bytes(),
            FieldValue::F32(v) => v.to_le_bytes(),
        }
    }
}

/// Where a uniform field's value comes from, resolved at prepare.
#[derive(Clone, Debug)]
enum Field {
    /// Parameter `index` (of the signature's parameters), with its name.
    Param(usize, String),
    /// Dim symbol slot `index` (of the plan's symbols), with its name.
    Dim(usize, String),
}

/// What one binding slot carries.
#[derive(Clone, Debug)]
enum Role {
    /// Tensor input `i` (read-only storage).
    Input(usize),
    /// Output `o` (read-write storage); `true` when it accumulates (starts at zero everywhere,
    /// conformance included).
    Output(usize, bool),
    /// A uniform block / scalar parameters, in field order.
    Uniform(Vec<Field>),
}

/// One marshalled slot of a call, in binding order.
#[derive(Debug)]
pub enum Arg<'a> {
    /// An input's bytes (borrowed where the host layout is the device layout).
    Input(Cow<'a, [u8]>),
    /// Output `index`: `data` bytes, with `guard` canary bytes on each side in guarded runs.
    Output {
        /// The output's index in the signature.
        index: usize,
        /// Bytes of the output's data.
        data: u64,
        /// Bytes of each guard band (0 for plain calls).
        guard: u64,
        /// Whether the output accumulates: its data starts at zero even in guarded runs (only
        /// the guard bands hold canaries).
        accumulate: bool,
    },
    /// The uniform fields' values, in order.
    Scalars(Vec<FieldValue>),
}

/// A kernel's binding descriptor resolved against the op's signature, and its launch geometry.
#[derive(Debug)]
pub struct LaunchPlan {
    /// The kernel's index among the op's declared kernels.
    pub kernel: usize,
    roles: Vec<Role>,
    /// Invocations along x, y and z (y and z: 1 for a 1-D launch, z: 1 for a 2-D one).
    threads: [IExpr; 3],
    /// Output dtypes, in signature order.
    out_dtypes: Vec<DType>,
}

impl LaunchPlan {
    /// Resolves the op's `lang` kernel: every binding must name a tensor of the signature or
    /// fields that are dims or parameters of a kernel-passable type; every output must be bound.
    pub fn new(op: &RegisteredOp, lang: KernelLang) -> Result<LaunchPlan, BackendError> {
        let kernel = gpu_kernel(op, lang)?;
        let decl = &op.contract.kernels[kernel];
        let sig = &op.contract.signature;
        let bad = |m: String| BackendError::Marshal(m.into());
        let mut roles = Vec::with_capacity(decl.bindings.len());
        for b in &decl.bindings {
            roles.push(match b {
                Binding::Buffer { name, access, .. } => {
                    match (sig.inputs().position(|t| &t.name == name), sig.outputs.iter().position(|t| &t.name == name)) {
                        (Some(i), _) => Role::Input(i),
                        (None, Some(o)) => Role::Output(o, *access == Access::Accumulate),
                        (None, None) => return Err(bad(format!("binding `{name}` names no tensor of the signature"))),
                    }
                }
                Binding::Uniform { fields } => Role::Uniform(fields.iter().map(|f| resolve_field(op, f)).collect::<Result<_, _>>()?),
            });
        }
        for (o, out) in sig.outputs.iter().enumerate() {
            if !roles.iter().any(|r| matches!(r, Role::Output(k, _) if *k == o)) {
                return Err(bad(format!("output `{}` is not bound by the kernel", out.name)));
            }
        }
        if decl.threads_yz.len() > 2 {
            return Err(bad(format!("launch geometry `threads` has {} extents; at most 3", decl.threads_yz.len() + 1)));
        }
        let one = op_contract::contract::Expr::Lit(1);
        let extent = |d: usize| {
            let e = if d == 0 { &decl.threads } else { decl.threads_yz.get(d - 1).unwrap_or(&one) };
            op.plan.compile(e).ok_or_else(|| bad("launch geometry `threads` uses an unbound symbol".into()))
        };
        let threads = [extent(0)?, extent(1)?, extent(2)?];
        Ok(LaunchPlan { kernel, roles, threads, out_dtypes: sig.outputs.iter().map(|o| o.dtype).collect() })
    }

    /// The slots' kinds in binding order: `Some(true)` read-write storage, `Some(false)`
    /// read-only storage, `None` uniform (a WGSL bind group's layout).
    #[cfg(feature = "wgpu")]
    pub fn slot_writable(&self) -> impl Iterator<Item = Option<bool>> + '_ {
        self.roles.iter().map(|r| match r {
            Role::Input(_) => Some(false),
            Role::Output(..) => Some(true),
            Role::Uniform(_) => None,
        })
    }

    /// Each slot's tensor input index (`None` for outputs and uniforms), in binding order.
    pub fn slot_inputs(&self) -> impl Iterator<Item = Option<usize>> + '_ {
        self.roles.iter().map(|r| match r {
            Role::Input(i) => Some(*i),
            Role::Output(..) | Role::Uniform(_) => None,
        })
    }

    /// Marshals a validated call: every slot's bytes or size, and the invocations along x, y
    /// and z.
    pub fn marshal<'a>(&self, req: &ExecRequest<'a>) -> Result<(Vec<Arg<'a>>, [u64; 3]), BackendError> {
        let mut args = Vec::with_capacity(self.roles.len());
        for role in &self.roles {
            args.push(match role {
                Role::Input(i) => {
                    let t = req.inputs.get(*i).ok_or_else(|| BackendError::Marshal(format!("tensor input {i} was not passed").into()))?;
                    Arg::Input(input_bytes(t))
                }
                Role::Output(o, acc) => self.output_arg(req, *o, *acc)?,
                Role::Uniform(fields) => {
                    Arg::Scalars(fields.iter().map(|f| field_value(f, &req.bound.values, req.params)).collect::<Result<_, _>>()?)
                }
            });
        }
        let mut threads = [0u64; 3];
        for (d, e) in self.threads.iter().enumerate() {
            let v =
                e.eval(&req.bound.values).ok_or_else(|| BackendError::Launch("launch geometry `threads` cannot be evaluated".into()))?;
            threads[d] =
                u64::try_from(v).map_err(|_| BackendError::Launch(format!("launch geometry `threads` = {v} is negative").into()))?;
        }
        Ok((args, threads))
    }

    fn output_arg(&self, req: &ExecRequest<'_>, o: usize, accumulate: bool) -> Result<Arg<'static>, BackendError> {
        let dtype = self.out_dtypes[o];
        let shape = req.bound.out_shapes.get(o).ok_or_else(|| BackendError::Marshal(format!("output {o} has no shape").into()))?;
        let too_large =
            |what: &str| BackendError::TooLarge(format!("output {o}: its {what} for shape {shape:?} of `{dtype}` overflow 64 bits").into());
        let numel = checked_numel(shape).ok_or_else(|| too_large("elements"))?;
        let data = (numel as u64).checked_mul(dtype.size() as u64).ok_or_else(|| too_large("bytes"))?;
        let guard = (req.guard as u64).checked_mul(dtype.size() as u64).ok_or_else(|| too_large("guard bytes"))?;
        data.checked_add(guard.checked_mul(2).ok_or_else(|| too_large("guard bytes"))?).ok_or_else(|| too_large("guarded bytes"))?;
        Ok(Arg::Output { index: o, data, guard, accumulate })
    }

    /// The outputs from the bytes read back for each output slot, as `(output index, bytes)`:
    /// exactly the data for plain calls, `guard` canaries + data + `guard` canaries in guarded
    /// runs (returned flat, the layout conformance reads).
    pub fn outputs(&self, req: &ExecRequest<'_>, reads: Vec<(usize, Vec<u8>)>) -> Result<Vec<Tensor>, BackendError> {
        let mut outs: Vec<Option<Tensor>> = vec![None; self.out_dtypes.len()];
        for (o, bytes) in reads {
            let dtype = *self.out_dtypes.get(o).ok_or_else(|| BackendError::Kernel(format!("read back an unknown output {o}").into()))?;
            let data = Data::from_le_bytes(dtype, &bytes).map_err(|e| BackendError::Kernel(format!("output {o}: {e}").into()))?;
            let shape = if req.guard > 0 { vec![data.len()] } else { req.bound.out_shapes[o].to_vec() };
            outs[o] = Some(Tensor::new(shape, data).map_err(|e| BackendError::Kernel(format!("output {o}: {e}").into()))?);
        }
        outs.into_iter()
            .enumerate()
            .map(|(o, t)| t.ok_or_else(|| BackendError::Kernel(format!("output {o} was not read back").into())))
            .collect()
    }
}

/// Resolves a descriptor field name: a parameter of a kernel-passable type, else a dim symbol.
fn resolve_field(op: &RegisteredOp, field: &str) -> Result<Field, BackendError> {
    if let Some((pi, p)) = op.contract.signature.params().enumerate().find(|(_, p)| p.name == field) {
        return match p.dtype {
            DType::u32 | DType::i32 | DType::f32 => Ok(Field::Param(pi, field.to_string())),
            other => Err(BackendError::Marshal(
                format!("parameter `{field}` of type `{other}` cannot be passed to a kernel (u32, i32 or f32 only)").into(),
            )),
        };
    }
    op.plan
        .syms
        .iter()
        .position(|s| s == field)
        .map(|k| Field::Dim(k, field.to_string()))
        .ok_or_else(|| BackendError::Marshal(format!("field `{field}` is not a dim or parameter").into()))
}

/// A field's value on a validated call.
fn field_value(f: &Field, values: &[i128], params: &[Scalar]) -> Result<FieldValue, BackendError> {
    match f {
        Field::Param(pi, name) => match params.get(*pi).copied() {
            Some(Scalar::U32(v)) => Ok(FieldValue::U32(v)),
            Some(Scalar::I32(v)) => Ok(FieldValue::I32(v)),
            Some(Scalar::F32(v)) => Ok(FieldValue::F32(v)),
            Some(other) => {
                Err(BackendError::Marshal(format!("parameter `{name}` is `{}`; a kernel takes u32, i32 or f32", other.dtype()).into()))
            }
            None => Err(BackendError::Marshal(format!("parameter `{name}` was not passed").into())),
        },
        Field::Dim(k, name) => {
            let v = values.get(*k).copied().ok_or_else(|| BackendError::Marshal(format!("dim `{name}` has no value").into()))?;
            u32::try_from(v)
                .map(FieldValue::U32)
                .map_err(|_| BackendError::Marshal(format!("dim `{name}` = {v} does not fit a u32 kernel field").into()))
        }
    }
}

/// An input's bytes: borrowed where the host is little-endian and the storage is 32-bit (the
/// common case: no copy of large inputs), else encoded. Empty for a device tensor (whose buffer
/// the backend binds itself).
fn input_bytes(t: &Tensor) -> Cow<'_, [u8]> {
    #[cfg(target_endian = "little")]
    match t.data() {
        Data::F32(v) => return Cow::Borrowed(bytemuck::cast_slice(v)),
        Data::U32(v) => return Cow::Borrowed(bytemuck::cast_slice(v)),
        Data::I32(v) => return Cow::Borrowed(bytemuck::cast_slice(v)),
        _ => {}
    }
    Cow::Owned(t.data().to_le_bytes())
}
