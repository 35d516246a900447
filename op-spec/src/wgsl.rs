//! The compile-time check of a WGSL kernel against its `kernel(...)` binding descriptor and the
//! op's signature (naga parse and validation, entry point and its 1-D workgroup, its launch
//! convention (`wgsl_launch`), every binding: slot, address space, access, runtime-sized element
//! type, name); it reads no files.

use crate::contract::{Access, DType};
use crate::ctxt::Ctxt;
use crate::model::{SBinding, SKernel, SSignature, SpanRange, Spanned};
pub use crate::wgsl_launch::Launch;
use naga::common::wgsl::{TryToWgsl as _, TypeContext as _};
use naga::valid::{Capabilities, FunctionInfo, ModuleInfo, ValidationFlags, Validator};
use naga::{AddressSpace, ArraySize, GlobalVariable, Module, ResourceBinding, Scalar, ShaderStage, StorageAccess, TypeInner};
use std::panic::catch_unwind;
use syn::Ident;

/// WebGPU's default limits on a compute workgroup (what every device meets), as `wgpu::Limits`
/// names them: invocations in all, then the size along x, y and z. A kernel that needs more
/// declares it with `limits(name = count, ...)` in `kernel(...)`.
pub const DEFAULT_LIMITS: [(&str, u32); 4] = [
    ("max_compute_invocations_per_workgroup", 256),
    ("max_compute_workgroup_size_x", 256),
    ("max_compute_workgroup_size_y", 256),
    ("max_compute_workgroup_size_z", 64),
];

/// What the expansion needs from a checked WGSL kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// The compute entry point's name.
    pub entry: String,
    /// `@workgroup_size(x, y, z)`.
    pub workgroup_size: [u32; 3],
    /// How the entry indexes its invocations (see `wgsl_launch`); CUDA kernels are flat.
    pub launch: Launch,
}

/// Checks `source` (the WGSL file's text) against `kernel`'s descriptor and `sig`. Every
/// mismatch is reported into `cx` (all of them, not just the first), each at the smallest
/// descriptor token and naming the WGSL binding; returns the entry point and workgroup size
/// when the module parsed and the entry point was found.
pub fn check_wgsl(cx: &Ctxt, kernel: &SKernel, sig: &SSignature, source: &str) -> Option<KernelInfo> {
    let (module, info) = match parse_and_validate(source) {
        Ok(parsed) => parsed,
        Err(msg) => {
            cx.error(syn::Error::new(kernel.path.span(), format!("the WGSL kernel `{}` {msg}", kernel.path.value())));
            return None;
        }
    };
    let entry = check_entry(cx, kernel, &module);
    for (slot, binding) in kernel.bindings.iter().enumerate() {
        let global = global_at(&module, 0, slot);
        match binding {
            SBinding::Buffer { name, access, global: alias } => {
                check_buffer(cx, &module, sig, slot, global, name, access);
                check_global_name(cx, slot, global, name, access, alias.as_ref());
            }
            SBinding::Uniform { span, fields } => check_uniform(cx, &module, sig, slot, global, *span, fields),
        }
    }
    let index = entry?;
    let ep = module.entry_points.get(index)?;
    check_unbound(cx, kernel, &module, &ep.name, info.get_entry_point(index));
    check_written(cx, kernel, &module, &ep.name, info.get_entry_point(index));
    if !check_workgroup_dims(cx, kernel, ep) || !check_workgroup_limits(cx, kernel, ep) {
        return None;
    }
    if ep.workgroup_size_overrides.is_some() {
        let msg = format!(
            "the workgroup size of WGSL entry `{}` depends on `override` constants; the launch geometry needs literal sizes: write `@workgroup_size(64)` (or `const` expressions)",
            ep.name
        );
        cx.error(syn::Error::new(kernel.path.span(), msg));
        return None;
    }
    let launch = crate::wgsl_launch::check_launch(cx, kernel, &module, info.get_entry_point(index), ep)?;
    Some(KernelInfo { entry: ep.name.clone(), workgroup_size: ep.workgroup_size, launch })
}

/// Rule: a workgroup has no more dimensions than the launch: `@workgroup_size(8, 8)` needs a
/// 2-D launch, `threads = (x, y)` (the grid's y extent comes from `threads`), a z size a 3-D one.
fn check_workgroup_dims(cx: &Ctxt, kernel: &SKernel, ep: &naga::EntryPoint) -> bool {
    let dims = 1 + kernel.threads_yz.len();
    let [x, y, z] = ep.workgroup_size;
    let needs = if z != 1 {
        3
    } else if y != 1 {
        2
    } else {
        1
    };
    if needs <= dims {
        return true;
    }
    let launch = match dims {
        1 => "1-D (`threads = n`)".to_string(),
        _ => "2-D (`threads = (x, y)`)".to_string(),
    };
    let fix = match (dims, needs) {
        (1, 2) => format!(
            "launch it over a 2-D grid, `threads = (x, y)`, or write `@workgroup_size({})` and index with `global_invocation_id.x`",
            x.saturating_mul(y)
        ),
        (1, _) => format!(
            "launch it over a 3-D grid, `threads = (x, y, z)`, or write `@workgroup_size({})` and index with `global_invocation_id.x`",
            x.saturating_mul(y).saturating_mul(z)
        ),
        _ => format!("give `threads` a z extent, `threads = (x, y, z)`, or write `@workgroup_size({x}, {})`", y.saturating_mul(z)),
    };
    let msg = format!("WGSL entry `{}` has `@workgroup_size({x}, {y}, {z})`, but its launch is {launch}: {fix}", ep.name);
    cx.error(syn::Error::new(kernel.path.span(), msg));
    false
}

/// Rule: a workgroup stays within WebGPU's default limits (256 invocations; 256, 256 and 64
/// along x, y and z), which every device meets, unless the kernel declares that it needs more
/// with `limits(...)` (it then runs only where the device allows it; the runtime checks).
fn check_workgroup_limits(cx: &Ctxt, kernel: &SKernel, ep: &naga::EntryPoint) -> bool {
    let [x, y, z] = ep.workgroup_size;
    let total = u64::from(x) * u64::from(y) * u64::from(z);
    let needs = [total, u64::from(x), u64::from(y), u64::from(z)];
    let over: Vec<(&str, u32, u64)> = DEFAULT_LIMITS
        .iter()
        .zip(needs)
        .filter_map(|((name, default), need)| {
            let allowed = kernel.limits.iter().find(|l| l.name == name).map_or(*default, |l| l.value.value);
            (need > u64::from(allowed)).then_some((*name, allowed, need))
        })
        .collect();
    if over.is_empty() {
        return true;
    }
    let what: Vec<String> = over
        .iter()
        .map(|(name, allowed, need)| {
            let of = DEFAULT_LIMITS
                .iter()
                .position(|(n, _)| n == name)
                .map_or("", |i| ["invocations in all", "along x", "along y", "along z"][i]);
            let whose = if DEFAULT_LIMITS.iter().any(|(n, d)| n == name && d == allowed) { "WebGPU's default" } else { "declared" };
            format!("{need} {of}, above `{name}` = {allowed} ({whose})")
        })
        .collect();
    let declare: Vec<String> = over.iter().map(|(name, _, need)| format!("{name} = {need}")).collect();
    let msg = format!(
        "WGSL entry `{}` has `@workgroup_size({x}, {y}, {z})`: {}; devices are only required to meet WebGPU's defaults, so shrink the workgroup (at most 256 invocations: 256, 256 and 64 along x, y and z), or, if the kernel needs more, declare it in `kernel(...)` with `limits({})` (it then runs only on devices that allow it)",
        ep.name,
        what.join("; "),
        declare.join(", ")
    );
    cx.error(syn::Error::new(kernel.path.span(), msg));
    false
}

/// Rule: every buffer the descriptor binds `read_write` or `accumulate` (an output, which the
/// kernel must fill) is written by the entry point (directly or through the functions it
/// calls). A module that passes storage pointers to functions is not judged (the store may go
/// through the pointer), so no correct kernel is refused.
fn check_written(cx: &Ctxt, kernel: &SKernel, module: &Module, entry: &str, uses: &FunctionInfo) {
    let passes_storage_pointers = module.functions.iter().any(|(_, f)| {
        f.arguments.iter().any(|a| matches!(module.types[a.ty].inner, TypeInner::Pointer { space: AddressSpace::Storage { .. }, .. }))
    });
    if passes_storage_pointers {
        return;
    }
    for (slot, b) in kernel.bindings.iter().enumerate() {
        let SBinding::Buffer { name, access, .. } = b else { continue };
        if !access.value.writes() {
            continue;
        }
        let Ok(slot_u32) = u32::try_from(slot) else { continue };
        let found = module.global_variables.iter().find(|(_, v)| v.binding.is_some_and(|rb| rb.group == 0 && rb.binding == slot_u32));
        let Some((handle, var)) = found else { continue };
        // (A global that is not read-write storage is the access rule's to report.)
        let writable = matches!(var.space, AddressSpace::Storage { access } if access.contains(StorageAccess::STORE));
        if !writable || uses[handle].contains(naga::valid::GlobalUse::WRITE) {
            continue;
        }
        let rb = var.binding.unwrap_or(ResourceBinding { group: 0, binding: slot_u32 });
        let msg = format!(
            "`{name}` is bound `{}` but WGSL entry `{entry}` never writes {}: every element of an output is the kernel's to write (the buffer would keep whatever it held); store to it in `{entry}`, or check that the descriptor binds the right slot",
            access.value.keyword(),
            describe(var, rb)
        );
        cx.error(syn::Error::new(name.span(), msg));
    }
}

/// Rule: the source parses and validates (all validation flags, all capabilities: what the
/// device lacks is wgpu's to refuse at pipeline creation). The error text completes "the WGSL
/// kernel `path` ...". naga runs under `catch_unwind` so that no input can panic the macro.
fn parse_and_validate(source: &str) -> Result<(Module, ModuleInfo), String> {
    catch_unwind(|| {
        let module = naga::front::wgsl::parse_str(source).map_err(|e| parse_message(&e, source))?;
        let mut validator = Validator::new(ValidationFlags::all(), Capabilities::all());
        let info = validator.validate(&module).map_err(|e| validation_message(&e, source))?;
        Ok((module, info))
    })
    .unwrap_or_else(|_| Err("crashed the WGSL front end (naga); please report it".to_string()))
}

fn parse_message(e: &naga::front::wgsl::ParseError, source: &str) -> String {
    let at = e.labels().next().and_then(|(span, _)| span.to_range()).and_then(|r| line_col(source, r.start));
    let notes: String = e.notes().map(|n| format!("; {n}")).collect();
    format!("does not parse: {}{}{notes}; fix the WGSL source", at.unwrap_or_default(), e.message())
}

fn validation_message(e: &naga::WithSpan<naga::valid::ValidationError>, source: &str) -> String {
    let at = e.spans().next().and_then(|(span, _)| span.to_range()).and_then(|r| line_col(source, r.start));
    let mut msg = e.as_inner().to_string();
    let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(e.as_inner());
    while let Some(c) = cause {
        msg.push_str(&format!(": {c}"));
        cause = c.source();
    }
    format!("does not validate: {}{msg}; fix the WGSL source", at.unwrap_or_default())
}

/// `"line:column: "` (1-based, column in characters) of a byte offset, if it lies in `source`.
fn line_col(source: &str, offset: usize) -> Option<String> {
    let before = source.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    let line = before.matches('\n').count() + 1;
    let column = before.get(line_start..)?.chars().count() + 1;
    Some(format!("{line}:{column}: "))
}

/// Rule: `entry = "..."` names a compute entry point; without it the module has exactly one.
/// Returns the index of the chosen entry point in `module.entry_points`.
fn check_entry(cx: &Ctxt, kernel: &SKernel, module: &Module) -> Option<usize> {
    let computes: Vec<usize> = (0..module.entry_points.len()).filter(|&i| module.entry_points[i].stage == ShaderStage::Compute).collect();
    let listed = computes.iter().map(|&i| format!("`{}`", module.entry_points[i].name)).collect::<Vec<_>>().join(", ");
    let path = kernel.path.value();
    if let Some(lit) = &kernel.entry {
        let want = lit.value();
        if let Some(&i) = computes.iter().find(|&&i| module.entry_points[i].name == want) {
            return Some(i);
        }
        let other = module
            .entry_points
            .iter()
            .find(|ep| ep.name == want)
            .map(|ep| format!(" (`{want}` is a {} entry point)", stage_name(ep.stage)));
        let found = if computes.is_empty() { "none".to_string() } else { listed };
        let msg = format!(
            "the WGSL kernel `{path}` has no compute entry point `{want}`{}; compute entry points found: {found}; name one of them, or mark the function `@compute @workgroup_size(...)`",
            other.unwrap_or_default()
        );
        cx.error(syn::Error::new(lit.span(), msg));
        return None;
    }
    match computes.as_slice() {
        [i] => Some(*i),
        [] => {
            let msg = format!(
                "the WGSL kernel `{path}` has no compute entry point; declare one with `@compute @workgroup_size(64) fn main(...)`"
            );
            cx.error(syn::Error::new(kernel.path.span(), msg));
            None
        }
        [first, ..] => {
            let first = &module.entry_points[*first].name;
            let msg =
                format!("the WGSL kernel `{path}` has several compute entry points ({listed}); choose one with `entry = \"{first}\"`");
            cx.error(syn::Error::new(kernel.path.span(), msg));
            None
        }
    }
}

fn stage_name(stage: ShaderStage) -> String {
    format!("{stage:?}").to_lowercase()
}

/// The resource global at `@group(group) @binding(binding)`, if declared.
fn global_at(module: &Module, group: u32, binding: usize) -> Option<(&GlobalVariable, ResourceBinding)> {
    let binding = u32::try_from(binding).ok()?;
    module.global_variables.iter().find_map(|(_, var)| match var.binding {
        Some(rb) if rb.group == group && rb.binding == binding => Some((var, rb)),
        _ => None,
    })
}

/// `@group(g) @binding(b) var<space, access> name`, as the WGSL declares it.
fn describe(var: &GlobalVariable, rb: ResourceBinding) -> String {
    let name = var.name.as_deref().unwrap_or("<unnamed>");
    let space = match space_name(var.space) {
        Some(s) => format!("<{s}>"),
        None => String::new(),
    };
    format!("`@group({}) @binding({}) var{space} {name}`", rb.group, rb.binding)
}

/// The address space as WGSL spells it inside `var<...>` (`None` for textures and samplers).
fn space_name(space: AddressSpace) -> Option<String> {
    match space {
        AddressSpace::Storage { access } => Some(format!("storage, {}", access_name(access))),
        AddressSpace::Handle => None,
        other => naga::common::wgsl::address_space_str(other).0.map(str::to_string),
    }
}

fn access_name(access: StorageAccess) -> &'static str {
    if access.contains(StorageAccess::STORE) {
        "read_write"
    } else {
        "read"
    }
}

/// The element scalar a WGSL storage buffer uses for `dtype`, if it can hold it.
fn storage_scalar(dtype: DType) -> Option<Scalar> {
    match dtype {
        DType::f32 => Some(Scalar::F32),
        DType::f16 => Some(Scalar::F16),
        DType::u32 => Some(Scalar::U32),
        DType::i32 => Some(Scalar::I32),
        _ => None,
    }
}

/// The scalar a WGSL uniform member uses for a parameter of `dtype`, if it can hold it.
fn uniform_scalar(dtype: DType) -> Option<Scalar> {
    match dtype {
        DType::f32 => Some(Scalar::F32),
        DType::u32 => Some(Scalar::U32),
        DType::i32 => Some(Scalar::I32),
        _ => None,
    }
}

/// The dtype of the signature's tensor (input or output) named `name`.
fn tensor_dtype<'a>(sig: &'a SSignature, name: &Ident) -> Option<&'a Spanned<DType>> {
    sig.inputs().chain(&sig.outputs).find(|t| t.name == *name).map(|t| &t.dtype)
}

/// The dtype of the signature's parameter named `name`.
fn param_dtype<'a>(sig: &'a SSignature, name: &Ident) -> Option<&'a Spanned<DType>> {
    sig.param(&name.to_string()).map(|p| &p.dtype)
}

/// Rule: the WGSL global at a buffer's slot carries the tensor's name (or the name given with
/// `as`): slots bind by position, so two inputs listed in the other order would otherwise
/// compile and silently compute the wrong thing (`a - b` as `b - a`).
fn check_global_name(
    cx: &Ctxt,
    slot: usize,
    global: Option<(&GlobalVariable, ResourceBinding)>,
    name: &Ident,
    access: &Spanned<Access>,
    alias: Option<&Ident>,
) {
    let Some((var, rb)) = global else { return };
    let Some(wgsl_name) = var.name.as_deref() else { return };
    let want = alias.map_or_else(|| name.to_string(), Ident::to_string);
    if !matches!(var.space, AddressSpace::Storage { .. }) || wgsl_name == want {
        return;
    }
    let acc = access.value.keyword();
    let (at, hint) = match alias {
        Some(a) => (a.span(), format!("change `as {a}` to `as {wgsl_name}`")),
        None => (name.span(), format!("reorder `bindings(...)` to match the kernel, rename the global to `{name}`, or write `{name}: {acc} as {wgsl_name}` if the kernel names it differently on purpose")),
    };
    let msg = format!(
        "`{name}` is descriptor slot {slot}, but WGSL {} is named `{wgsl_name}`: slots bind by position, so a kernel whose buffers are listed in another order would silently read the wrong tensor; {hint}",
        describe(var, rb)
    );
    cx.error(syn::Error::new(at, msg));
}

/// Rule: descriptor slot `slot` binding tensor `name` is a WGSL storage array at
/// `@group(0) @binding(slot)` with the same access (`accumulate` is `read_write`) and the
/// tensor's element type (its dtype must be one WGSL storage can hold); an accumulating `u32`
/// or `i32` output may be `array<atomic<u32>>` / `array<atomic<i32>>` (kernels add into it
/// from many invocations).
fn check_buffer(
    cx: &Ctxt,
    module: &Module,
    sig: &SSignature,
    slot: usize,
    global: Option<(&GlobalVariable, ResourceBinding)>,
    name: &Ident,
    access: &Spanned<Access>,
) {
    // A name that is no tensor of the signature is the binding-coverage rule's to report.
    let Some(dtype) = tensor_dtype(sig, name).map(|d| d.value) else { return };
    let scalar = storage_scalar(dtype);
    if dtype == DType::bf16 {
        let msg = format!("`{name}` has dtype `bf16`, which WGSL has no type for (WGSL storage holds f32, f16, u32 and i32 only; `enable f16` adds IEEE half, not bfloat16), so no WGSL kernel can read or write it; declare the WGSL kernel's op on `f32` or `f16`, or give this op a CUDA kernel (`__nv_bfloat16`) instead");
        cx.error(syn::Error::new(name.span(), msg));
    } else if scalar.is_none() {
        let msg = format!("`{name}` has dtype `{}`, which a WGSL storage buffer cannot hold (f32, f16, u32 and i32 only); change the dtype or give this op a CUDA kernel instead", dtype.name());
        cx.error(syn::Error::new(name.span(), msg));
    }
    let (want, want_access) = match access.value {
        Access::Read => ("read", StorageAccess::LOAD),
        Access::ReadWrite | Access::Accumulate => ("read_write", StorageAccess::LOAD | StorageAccess::STORE),
    };
    let elem = dtype.name();
    let Some((var, rb)) = global else {
        let msg = format!(
            "`{name}` is descriptor slot {slot} but WGSL has no `@group(0) @binding({slot})`; declare `@group(0) @binding({slot}) var<storage, {want}> {name}: array<{elem}>;` (slots bind in list order)"
        );
        cx.error(syn::Error::new(name.span(), msg));
        return;
    };
    let AddressSpace::Storage { access: wgsl_access } = var.space else {
        let space = space_name(var.space).unwrap_or_else(|| "handle (texture or sampler)".into());
        let msg = format!(
            "`{name}` is bound as a storage buffer but WGSL {} is in the `{space}` address space; declare it `var<storage, {want}>`",
            describe(var, rb)
        );
        cx.error(syn::Error::new(name.span(), msg));
        return;
    };
    if wgsl_access & (StorageAccess::LOAD | StorageAccess::STORE) != want_access {
        let msg = format!(
            "`{name}` is bound `{}` but WGSL {} is {}; make them agree{}",
            access.value.keyword(),
            describe(var, rb),
            access_name(wgsl_access),
            if access.value == Access::Accumulate { " (an accumulating output is `var<storage, read_write>`)" } else { "" }
        );
        cx.error(access.span.error(msg));
    }
    let Some(scalar) = scalar else { return };
    let (ok, sized) = match module.types[var.ty].inner {
        TypeInner::Array { base, size, .. } => {
            let elem = &module.types[base].inner;
            let atomic = access.value == Access::Accumulate && *elem == TypeInner::Atomic(scalar) && scalar.kind != naga::ScalarKind::Float;
            (*elem == TypeInner::Scalar(scalar) || atomic, !matches!(size, ArraySize::Dynamic))
        }
        _ => (false, false),
    };
    if ok && sized {
        let msg = format!(
            "`{name}` is bound to WGSL {} of type `{}`, a fixed-size array, but a tensor holds as many elements as its dims say (a fixed size silently drops the rest); declare it runtime-sized: `array<{elem}>`",
            describe(var, rb),
            module.types.type_to_string(var.ty)
        );
        cx.error(syn::Error::new(name.span(), msg));
        return;
    }
    if !ok {
        let msg = format!(
            "`{name}` holds `{elem}` in the signature but WGSL {} has type `{}`; declare it `array<{elem}>`",
            describe(var, rb),
            module.types.type_to_string(var.ty)
        );
        cx.error(syn::Error::new(name.span(), msg));
    }
}

/// Rule: a `uniform(fields...)` slot is a WGSL `var<uniform>` struct whose members are the
/// fields in order: `u32` for dimensions, the parameter's type for parameters.
fn check_uniform(
    cx: &Ctxt,
    module: &Module,
    sig: &SSignature,
    slot: usize,
    global: Option<(&GlobalVariable, ResourceBinding)>,
    span: SpanRange,
    fields: &[Ident],
) {
    let wanted = uniform_wanted(cx, sig, fields);
    let Some((var, rb)) = global else {
        let members = fields
            .iter()
            .zip(&wanted)
            .map(|(f, s)| format!("{f}: {}", s.map_or("u32".into(), |s| s.to_wgsl_for_diagnostics())))
            .collect::<Vec<_>>()
            .join(", ");
        let msg = format!("`uniform(...)` is descriptor slot {slot} but WGSL has no `@group(0) @binding({slot})`; declare `@group(0) @binding({slot}) var<uniform> params: Params;` with `struct Params {{ {members} }}`");
        cx.error(span.error(msg));
        return;
    };
    if var.space != AddressSpace::Uniform {
        let space = space_name(var.space).unwrap_or_else(|| "handle (texture or sampler)".into());
        let msg = format!(
            "`uniform(...)` is descriptor slot {slot} but WGSL {} is in the `{space}` address space; declare it `var<uniform>`",
            describe(var, rb)
        );
        cx.error(span.error(msg));
        return;
    }
    let ty = &module.types[var.ty];
    let TypeInner::Struct { members, .. } = &ty.inner else {
        let msg = format!(
            "`uniform(...)` needs a struct but WGSL {} has type `{}`; declare a struct with one member per field, in order",
            describe(var, rb),
            module.types.type_to_string(var.ty)
        );
        cx.error(span.error(msg));
        return;
    };
    let struct_name = ty.name.as_deref().unwrap_or("<anonymous>");
    check_uniform_members(cx, module, sig, (var, rb), span, fields, &wanted, (struct_name, members));
}

/// What each uniform field must be in WGSL: `u32` for a dim, the parameter's scalar for a
/// parameter, `None` (reported) when the parameter's dtype has no uniform form.
fn uniform_wanted(cx: &Ctxt, sig: &SSignature, fields: &[Ident]) -> Vec<Option<Scalar>> {
    fields
        .iter()
        .map(|f| match param_dtype(sig, f) {
            None => Some(Scalar::U32),
            Some(d) => {
                let s = uniform_scalar(d.value);
                if s.is_none() {
                    let msg = format!(
                        "uniform field `{f}` is a `{}` parameter, which a WGSL uniform block cannot hold (u32, i32 and f32 only); change the parameter's dtype",
                        d.value.name()
                    );
                    cx.error(syn::Error::new(f.span(), msg));
                }
                s
            }
        })
        .collect()
}

/// The uniform struct's members against the fields: count, order (one error when the same
/// names are permuted), then each member's type.
#[allow(clippy::too_many_arguments)]
fn check_uniform_members(
    cx: &Ctxt,
    module: &Module,
    sig: &SSignature,
    (var, rb): (&GlobalVariable, ResourceBinding),
    span: SpanRange,
    fields: &[Ident],
    wanted: &[Option<Scalar>],
    (struct_name, members): (&str, &[naga::StructMember]),
) {
    if members.len() != fields.len() {
        let names = members.iter().map(|m| format!("`{}`", m.name.as_deref().unwrap_or("_"))).collect::<Vec<_>>().join(", ");
        let msg = format!(
            "`uniform(...)` lists {} field(s) but WGSL struct `{struct_name}` (of {}) has {} member(s) ({names}); one member per field, in order",
            fields.len(),
            describe(var, rb),
            members.len()
        );
        cx.error(span.error(msg));
        return;
    }
    // The same names in another order: one error for the block (the struct is read by offset).
    let field_names: Vec<String> = fields.iter().map(Ident::to_string).collect();
    let member_names: Vec<String> = members.iter().map(|m| m.name.clone().unwrap_or_default()).collect();
    let (mut a, mut b) = (field_names.clone(), member_names.clone());
    a.sort();
    b.sort();
    if field_names != member_names && a == b {
        let msg = format!(
            "uniform fields are `{}` here but WGSL struct `{struct_name}` declares `{}`: the order must match (the block is read by offset); reorder `uniform(...)` or the struct's members",
            field_names.join(", "),
            member_names.join(", ")
        );
        cx.error(span.error(msg));
        return;
    }
    for (j, ((field, want), member)) in fields.iter().zip(wanted).zip(members).enumerate() {
        let member_name = member.name.as_deref().unwrap_or("_");
        if field != member_name {
            let msg =
                format!("uniform field {j} is `{field}` here but `{member_name}` in WGSL struct `{struct_name}`: the order must match");
            cx.error(syn::Error::new(field.span(), msg));
            continue;
        }
        let Some(want) = want else { continue };
        if module.types[member.ty].inner != TypeInner::Scalar(*want) {
            let role = if param_dtype(sig, field).is_some() { "a parameter" } else { "a dimension" };
            let msg = format!(
                "uniform field `{field}` is {role}, so WGSL member `{struct_name}.{member_name}` must be `{}`, not `{}`",
                want.to_wgsl_for_diagnostics(),
                module.types.type_to_string(member.ty)
            );
            cx.error(syn::Error::new(field.span(), msg));
        }
    }
}

/// Rule: every resource the chosen entry point uses is bound by the descriptor. Only globals the
/// entry point uses count (they are what its pipeline layout holds); globals used only by other
/// entry points of the same file are not this kernel's business.
fn check_unbound(cx: &Ctxt, kernel: &SKernel, module: &Module, entry: &str, uses: &FunctionInfo) {
    let slots = kernel.bindings.len();
    for (handle, var) in module.global_variables.iter() {
        let Some(rb) = var.binding else { continue };
        let bound = rb.group == 0 && usize::try_from(rb.binding).is_ok_and(|b| b < slots);
        if bound || uses[handle].is_empty() {
            continue;
        }
        let range = if slots == 0 { "nothing".to_string() } else { format!("`@group(0) @binding(0..{slots})`") };
        let msg = format!(
            "WGSL {} is used by entry `{entry}` but the descriptor does not bind it (it binds {range}); add it to `bindings(...)` in binding order, or remove it from the kernel",
            describe(var, rb)
        );
        match &kernel.bindings_span {
            Some(span) => cx.error(span.error(msg)),
            None => cx.error(syn::Error::new(kernel.path.span(), msg)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_attr;
    use proc_macro2::TokenStream;
    use quote::quote;

    const MEDIAN: &str = r#"
struct Params { n: u32, w: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i + p.w > p.n) { return; } // i.e. i >= n - w + 1
    // Insertion-sort the window (w <= 31) and take the middle.
    var win: array<f32, 31>;
    for (var k = 0u; k < p.w; k++) {
        let v = x[i + k];
        var j = k;
        while (j > 0u && win[j - 1u] > v) {
            win[j] = win[j - 1u];
            j--;
        }
        win[j] = v;
    }
    out[i] = win[p.w / 2u];
}
"#;

    fn median_kernel() -> TokenStream {
        quote!(kernel(wgsl = "kernels/median.wgsl", bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1))
    }

    /// Parses `signature(...)` plus `kernel` (must parse cleanly), then checks `source`.
    fn check_with(signature: TokenStream, kernel: TokenStream, source: &str) -> (Option<KernelInfo>, Vec<String>) {
        let parse_cx = Ctxt::new();
        let attr = parse_attr(&parse_cx, quote!(#signature, #kernel));
        if let Err(errs) = parse_cx.check() {
            panic!("test attribute does not parse: {:?}", errs.iter().map(|e| e.to_string()).collect::<Vec<_>>());
        }
        let cx = Ctxt::new();
        let info = check_wgsl(&cx, &attr.kernels[0], attr.signature.as_ref().expect("signature"), source);
        let errs = cx.check().err().unwrap_or_default().into_iter().map(|e| e.to_string()).collect();
        (info, errs)
    }

    fn check(kernel: TokenStream, source: &str) -> (Option<KernelInfo>, Vec<String>) {
        let sig = quote!(signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1]);
        check_with(sig, kernel, source)
    }

    fn one_error(kernel: TokenStream, source: &str) -> String {
        let (_, errs) = check(kernel, source);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        errs.into_iter().next().unwrap_or_default()
    }

    #[test]
    fn windowed_median_passes() {
        let (info, errs) = check(median_kernel(), MEDIAN);
        assert!(errs.is_empty(), "{errs:#?}");
        assert_eq!(info, Some(KernelInfo { entry: "main".into(), workgroup_size: [64, 1, 1], launch: Launch::Flat }));
    }

    #[test]
    fn parse_error_names_path_and_line_column() {
        let src = MEDIAN.replace("let i = gid.x;", "let i = gid.x");
        let (info, errs) = check(median_kernel(), &src);
        assert_eq!(info, None);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(errs[0].starts_with("the WGSL kernel `kernels/median.wgsl` does not parse: 10:5: expected `;`"), "{}", errs[0]);
        assert!(errs[0].contains("expected"), "{}", errs[0]);
    }

    #[test]
    fn validation_error_is_reported() {
        let src = MEDIAN.replace("out[i] = win[p.w / 2u];", "out[i] = win[p.w / 2u];\n    x[i] = 0.0;");
        let err = one_error(median_kernel(), &src);
        assert!(
            err.starts_with("the WGSL kernel `kernels/median.wgsl` does not validate: 23:5: Entry point main at Compute is invalid"),
            "{err}"
        );
    }

    #[test]
    fn arbitrary_text_does_not_panic() {
        for src in ["", "\u{0}\u{ffff}", "fn", "@group(0) @binding(99999999999) var<storage> x: array<f32>;", "struct { }}}}"] {
            let _ = check(median_kernel(), src);
        }
    }

    #[test]
    fn access_mismatch_points_at_access() {
        let src = MEDIAN.replace("var<storage, read> x", "var<storage, read_write> x");
        let err = one_error(median_kernel(), &src);
        assert_eq!(err, "`x` is bound `read` but WGSL `@group(0) @binding(0) var<storage, read_write> x` is read_write; make them agree");
    }

    #[test]
    fn element_type_mismatch() {
        let src = MEDIAN
            .replace("var<storage, read_write> out: array<f32>", "var<storage, read_write> out: array<u32>")
            .replace("out[i] = win", "out[i] = bitcast<u32>(win")
            + "";
        let src = src.replace("win[p.w / 2u];", "win[p.w / 2u]);");
        let err = one_error(median_kernel(), &src);
        assert_eq!(
            err,
            "`out` holds `f32` in the signature but WGSL `@group(0) @binding(1) var<storage, read_write> out` has type `array<u32>`; declare it `array<f32>`"
        );
    }

    #[test]
    fn dtype_wgsl_cannot_hold() {
        let sig = quote!(signature(x: i8[n], w: u32) -> f32[n - w + 1]);
        let (_, errs) = check_with(sig, median_kernel(), MEDIAN);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(errs[0].starts_with("`x` has dtype `i8`, which a WGSL storage buffer cannot hold"), "{}", errs[0]);
    }

    #[test]
    fn missing_binding() {
        let kernel = quote!(kernel(wgsl = "k.wgsl", bindings(x: read, out: read_write, w: read, uniform(n, w)), threads = n));
        let (_, errs) = check(kernel, MEDIAN);
        // `w` is a parameter, not a tensor: skipped here (binding coverage reports it); slot 3 is missing.
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(errs[0].starts_with("`uniform(...)` is descriptor slot 3 but WGSL has no `@group(0) @binding(3)`; declare `@group(0) @binding(3) var<uniform> params: Params;` with `struct Params { n: u32, w: u32 }`"), "{}", errs[0]);

        let src =
            MEDIAN.replace("@group(0) @binding(1) var<storage, read_write> out", "@group(0) @binding(5) var<storage, read_write> out");
        let (_, errs) = check(median_kernel(), &src);
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert_eq!(errs[0], "`out` is descriptor slot 1 but WGSL has no `@group(0) @binding(1)`; declare `@group(0) @binding(1) var<storage, read_write> out: array<f32>;` (slots bind in list order)");
        assert!(
            errs[1].starts_with(
                "WGSL `@group(0) @binding(5) var<storage, read_write> out` is used by entry `main` but the descriptor does not bind it"
            ),
            "{}",
            errs[1]
        );
    }

    #[test]
    fn buffer_in_wrong_address_space() {
        let src = MEDIAN
            .replace("@binding(0) var<storage, read> x", "@binding(2) var<storage, read> x")
            .replace("@binding(2) var<uniform> p", "@binding(0) var<uniform> p");
        let (_, errs) = check(median_kernel(), &src);
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert_eq!(errs[0], "`x` is bound as a storage buffer but WGSL `@group(0) @binding(0) var<uniform> p` is in the `uniform` address space; declare it `var<storage, read>`");
        assert_eq!(errs[1], "`uniform(...)` is descriptor slot 2 but WGSL `@group(0) @binding(2) var<storage, read> x` is in the `storage, read` address space; declare it `var<uniform>`");
    }

    #[test]
    fn extra_binding_used_by_entry() {
        let src = MEDIAN
            .replace(
                "struct Params",
                "@group(1) @binding(0) var<storage, read> bias: array<f32>;\n@group(0) @binding(7) var<storage, read> unused: array<f32>;\nstruct Params",
            )
            .replace("out[i] = win[p.w / 2u];", "out[i] = win[p.w / 2u] + bias[0];");
        let err = one_error(median_kernel(), &src);
        assert_eq!(err, "WGSL `@group(1) @binding(0) var<storage, read> bias` is used by entry `main` but the descriptor does not bind it (it binds `@group(0) @binding(0..3)`); add it to `bindings(...)` in binding order, or remove it from the kernel");
    }

    #[test]
    fn uniform_field_order_swapped() {
        let src = MEDIAN.replace("struct Params { n: u32, w: u32 }", "struct Params { w: u32, n: u32 }");
        let (_, errs) = check(median_kernel(), &src);
        assert_eq!(
            errs,
            vec!["uniform fields are `n, w` here but WGSL struct `Params` declares `w, n`: the order must match (the block is read by offset); reorder `uniform(...)` or the struct's members".to_string()]
        );
    }

    #[test]
    fn uniform_field_count() {
        let src = MEDIAN.replace("struct Params { n: u32, w: u32 }", "struct Params { n: u32, w: u32, pad: u32 }");
        let err = one_error(median_kernel(), &src);
        assert_eq!(err, "`uniform(...)` lists 2 field(s) but WGSL struct `Params` (of `@group(0) @binding(2) var<uniform> p`) has 3 member(s) (`n`, `w`, `pad`); one member per field, in order");
    }

    #[test]
    fn uniform_member_types() {
        let src = MEDIAN
            .replace("struct Params { n: u32, w: u32 }", "struct Params { n: i32, w: f32 }")
            .replace("p.w", "u32(p.w)")
            .replace("p.n", "u32(p.n)");
        let (_, errs) = check(median_kernel(), &src);
        assert_eq!(
            errs,
            vec![
                "uniform field `n` is a dimension, so WGSL member `Params.n` must be `u32`, not `i32`".to_string(),
                "uniform field `w` is a parameter, so WGSL member `Params.w` must be `u32`, not `f32`".to_string(),
            ]
        );
        let sig = quote!(signature(x: f32[n], w: u64) -> f32[n - w + 1]);
        let (_, errs) = check_with(sig, median_kernel(), MEDIAN);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(errs[0].starts_with("uniform field `w` is a `u64` parameter, which a WGSL uniform block cannot hold"), "{}", errs[0]);
    }

    #[test]
    fn entry_point_rules() {
        let k = quote!(kernel(wgsl = "k.wgsl", entry = "median", bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1));
        let err = one_error(k, MEDIAN);
        assert_eq!(err, "the WGSL kernel `k.wgsl` has no compute entry point `median`; compute entry points found: `main`; name one of them, or mark the function `@compute @workgroup_size(...)`");

        let two = format!("{MEDIAN}\n@compute @workgroup_size(32) fn other() {{ out[0] = x[0]; }}\n");
        let err = one_error(median_kernel(), &two);
        assert_eq!(
            err,
            "the WGSL kernel `kernels/median.wgsl` has several compute entry points (`main`, `other`); choose one with `entry = \"main\"`"
        );
        let k = quote!(kernel(wgsl = "k.wgsl", entry = "other", bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1));
        let (info, errs) = check(k, &two);
        assert!(errs.is_empty(), "{errs:#?}");
        assert_eq!(info, Some(KernelInfo { entry: "other".into(), workgroup_size: [32, 1, 1], launch: Launch::Flat }));

        let frag = MEDIAN
            .replace(
                "@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>)",
                "@fragment\nfn main(@builtin(position) gid: vec4<f32>) -> @location(0) vec4<f32>",
            )
            .replace("let i = gid.x;", "let i = u32(gid.x);")
            .replace("return; }", "return vec4<f32>(); }")
            .replace("out[i] = win[p.w / 2u];", "out[i] = win[p.w / 2u];\n    return vec4<f32>();");
        let err = one_error(median_kernel(), &frag);
        assert_eq!(err, "the WGSL kernel `kernels/median.wgsl` has no compute entry point; declare one with `@compute @workgroup_size(64) fn main(...)`");
        let k = quote!(kernel(wgsl = "k.wgsl", entry = "main", bindings(x: read, out: read_write, uniform(n, w)), threads = n - w + 1));
        let err = one_error(k, &frag);
        assert!(
            err.starts_with("the WGSL kernel `k.wgsl` has no compute entry point `main` (`main` is a fragment entry point); compute entry points found: none"),
            "{err}"
        );
    }

    #[test]
    fn two_dimensional_workgroups_are_refused() {
        let src = MEDIAN.replace("@compute @workgroup_size(64)", "@compute @workgroup_size(8, 8)");
        let (info, errs) = check(median_kernel(), &src);
        assert_eq!(info, None);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(
            errs[0].starts_with(
                "WGSL entry `main` has `@workgroup_size(8, 8, 1)`, but its launch is 1-D (`threads = n`): launch it over a 2-D grid"
            ),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn a_2d_launch_takes_a_2d_workgroup_that_indexes_y_and_refuses_a_z_size() {
        let sig = quote!(signature(x: f32[m, n], w: u32) -> f32[m, n]);
        let k = quote!(kernel(wgsl = "k.wgsl", bindings(x: read, out: read_write, uniform(n, w)), threads = (n, m)));
        let rows = MEDIAN
            .replace("@compute @workgroup_size(64)", "@compute @workgroup_size(8, 8)")
            .replace("let i = gid.x;", "let i = gid.x + gid.y * p.n;");
        let (info, errs) = check_with(sig.clone(), k.clone(), &rows);
        assert_eq!(errs, Vec::<String>::new());
        assert_eq!(info.map(|i| (i.workgroup_size, i.launch)), Some(([8, 8, 1], Launch::Flat)));
        // A z size needs a 3-D launch.
        let deep = rows.replace("@workgroup_size(8, 8)", "@workgroup_size(4, 4, 4)");
        let (info, errs) = check_with(sig.clone(), k.clone(), &deep);
        assert_eq!(info, None);
        assert!(errs[0].contains("but its launch is 2-D (`threads = (x, y)`): give `threads` a z extent"), "{errs:?}");
        // An entry reading only x components over a 2-D launch repeats every row.
        let (info, errs) = check_with(sig, k, MEDIAN);
        assert_eq!(info, None);
        assert!(errs[0].contains("reads no `y` component of its invocation ids"), "{errs:?}");
        // A 3-D launch of an entry that reads y but no z component is refused too.
        let sig3 = quote!(signature(x: f32[a, m, n], w: u32) -> f32[a, m, n]);
        let k3 = quote!(kernel(wgsl = "k.wgsl", bindings(x: read, out: read_write, uniform(n, w)), threads = (n, m, a)));
        let (info, errs) = check_with(sig3.clone(), k3.clone(), &rows);
        assert_eq!(info, None);
        assert!(errs[0].contains("launched over 3 extents") && errs[0].contains("reads no `z` component"), "{errs:?}");
        let cube = rows.replace("let i = gid.x + gid.y * p.n;", "let i = gid.x + gid.y * p.n + gid.z * p.n;");
        let (info, errs) = check_with(sig3, k3, &cube);
        assert_eq!(errs, Vec::<String>::new());
        assert!(info.is_some());
    }

    #[test]
    fn buffers_bind_by_name_and_are_runtime_sized() {
        let src = MEDIAN.replace("var<storage, read> x: array<f32>", "var<storage, read> y: array<f32>").replace("x[i + k]", "y[i + k]");
        let err = one_error(median_kernel(), &src);
        assert!(
            err.starts_with(
                "`x` is descriptor slot 0, but WGSL `@group(0) @binding(0) var<storage, read> y` is named `y`: slots bind by position"
            ),
            "{err}"
        );
        let k = quote!(kernel(wgsl = "k.wgsl", bindings(x: read as y, out: read_write, uniform(n, w)), threads = n - w + 1));
        assert_eq!(check(k, &src).1, Vec::<String>::new());
        let k = quote!(kernel(wgsl = "k.wgsl", bindings(x: read as z, out: read_write, uniform(n, w)), threads = n - w + 1));
        assert!(one_error(k, &src).contains("change `as z` to `as y`"));
        let src = MEDIAN.replace("var<storage, read> x: array<f32>", "var<storage, read> x: array<f32, 4>");
        let err = one_error(median_kernel(), &src);
        assert!(
            err.starts_with(
                "`x` is bound to WGSL `@group(0) @binding(0) var<storage, read> x` of type `array<f32, 4>`, a fixed-size array"
            ),
            "{err}"
        );
    }

    #[test]
    fn accumulating_outputs_are_read_write_and_may_be_atomic() {
        const HIST: &str = r#"
struct Params { n: u32, bins: u32 }
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> p: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= p.n) { return; }
    atomicAdd(&out[x[gid.x] % p.bins], 1u);
}
"#;
        let sig = quote!(signature(x: u32[n], bins: u32) -> u32[bins]);
        let k = |acc: TokenStream| quote!(kernel(wgsl = "k.wgsl", bindings(x: read, out: #acc, uniform(n, bins)), threads = n));
        assert_eq!(check_with(sig.clone(), k(quote!(accumulate)), HIST).1, Vec::<String>::new());
        // An atomic element is for adding into: a plain `read_write` output must hold `u32`.
        let (_, errs) = check_with(sig.clone(), k(quote!(read_write)), HIST);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(errs[0].starts_with("`out` holds `u32` in the signature but WGSL"), "{}", errs[0]);
        // `accumulate` is read-write storage.
        let src = HIST
            .replace("var<storage, read_write> out: array<atomic<u32>>", "var<storage, read> out: array<u32>")
            .replace("atomicAdd(&out[x[gid.x] % p.bins], 1u);", "let v = out[0] + x[gid.x];");
        let (_, errs) = check_with(sig, k(quote!(accumulate)), &src);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(
            errs[0].starts_with("`out` is bound `accumulate` but WGSL `@group(0) @binding(1) var<storage, read> out` is read"),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn launch_convention_is_read_from_the_builtins() {
        let linear = MEDIAN
            .replace(
                "@builtin(global_invocation_id) gid: vec3<u32>)",
                "@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>)",
            )
            .replace("let i = gid.x;", "let i = gid.x + gid.y * nwg.x * 64u;");
        let (info, errs) = check(median_kernel(), &linear);
        assert!(errs.is_empty(), "{errs:#?}");
        assert_eq!(info.map(|i| i.launch), Some(Launch::Linear));
        // The builtins as members of a struct argument.
        let member = MEDIAN
            .replace(
                "struct Params",
                "struct Ids { @builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32> }\nstruct Params",
            )
            .replace("fn main(@builtin(global_invocation_id) gid: vec3<u32>)", "fn main(ids: Ids)")
            .replace("let i = gid.x;", "let i = ids.gid.x + ids.gid.y * ids.nwg.x * 64u;");
        let (info, errs) = check(median_kernel(), &member);
        assert!(errs.is_empty(), "{errs:#?}");
        assert_eq!(info.map(|i| i.launch), Some(Launch::Linear));
        // Rows without their width: refused.
        let no_width = MEDIAN.replace("let i = gid.x;", "let i = gid.x + gid.y * 4194240u;");
        let (info, errs) = check(median_kernel(), &no_width);
        assert_eq!(info, None);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(
            errs[0]
                .starts_with("WGSL entry `main` reads more than `global_invocation_id.x` but does not declare `@builtin(num_workgroups)`"),
            "{}",
            errs[0]
        );
        // The whole vector counts as more than x.
        let whole = MEDIAN.replace("let i = gid.x;", "let v = gid.xy; let i = v.x;");
        assert_eq!(check(median_kernel(), &whole).1.len(), 1);
        // `num_workgroups` declared but only x read (a grid-stride loop, say): flat.
        let stride = MEDIAN
            .replace(
                "@builtin(global_invocation_id) gid: vec3<u32>)",
                "@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>)",
            )
            .replace("let i = gid.x;", "let i = gid.x + 0u * nwg.x;");
        let (info, errs) = check(median_kernel(), &stride);
        assert!(errs.is_empty(), "{errs:#?}");
        assert_eq!(info.map(|i| i.launch), Some(Launch::Flat));
    }

    /// A workgroup above WebGPU's default limits (here 32 x 32 = 1,024 invocations) is refused
    /// unless the kernel declares the limits it needs; the message names each limit and the
    /// declaration.
    #[test]
    fn workgroups_stay_within_the_default_limits_unless_declared() {
        let sig = quote!(signature(x: f32[m, n], w: u32) -> f32[m, n]);
        let rows = |wg: &str| {
            MEDIAN
                .replace("@compute @workgroup_size(64)", &format!("@compute @workgroup_size({wg})"))
                .replace("let i = gid.x;", "let i = gid.x + gid.y * p.n;")
        };
        let k = quote!(kernel(wgsl = "k.wgsl", bindings(x: read, out: read_write, uniform(n, w)), threads = (n, m)));
        let (info, errs) = check_with(sig.clone(), k.clone(), &rows("32, 32"));
        assert_eq!(info, None);
        assert_eq!(errs, ["WGSL entry `main` has `@workgroup_size(32, 32, 1)`: 1024 invocations in all, above `max_compute_invocations_per_workgroup` = 256 (WebGPU's default); devices are only required to meet WebGPU's defaults, so shrink the workgroup (at most 256 invocations: 256, 256 and 64 along x, y and z), or, if the kernel needs more, declare it in `kernel(...)` with `limits(max_compute_invocations_per_workgroup = 1024)` (it then runs only on devices that allow it)"]);
        // At the limits: fine; one past a per-dimension limit: refused.
        assert_eq!(check_with(sig.clone(), k.clone(), &rows("16, 16")).1, Vec::<String>::new());
        assert_eq!(check_with(sig.clone(), k.clone(), &rows("256, 1")).1, Vec::<String>::new());
        let (_, errs) = check_with(sig.clone(), k, &rows("1, 257"));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("257 along y, above `max_compute_workgroup_size_y` = 256"), "{}", errs[0]);
        // Declared: accepted.
        let k = quote!(kernel(wgsl = "k.wgsl", bindings(x: read, out: read_write, uniform(n, w)), threads = (n, m),
            limits(max_compute_invocations_per_workgroup = 1024)));
        assert_eq!(check_with(sig, k, &rows("32, 32")).1, Vec::<String>::new());
    }

    /// Every output the descriptor binds is written by the entry point.
    #[test]
    fn an_output_the_entry_never_writes_is_refused() {
        let src = MEDIAN.replace("out[i] = win[p.w / 2u];", "let m = win[p.w / 2u] + out[i];");
        let err = one_error(median_kernel(), &src);
        assert!(
            err.starts_with(
                "`out` is bound `read_write` but WGSL entry `main` never writes `@group(0) @binding(1) var<storage, read_write> out`"
            ),
            "{err}"
        );
        // Written through a helper the entry calls: fine.
        let helper = MEDIAN.replace("out[i] = win[p.w / 2u];", "put(i, win[p.w / 2u]);") + "fn put(i: u32, v: f32) { out[i] = v; }\n";
        assert_eq!(check(median_kernel(), &helper).1, Vec::<String>::new());
    }

    #[test]
    fn override_workgroup_size_is_refused() {
        let src = MEDIAN.replace("@compute @workgroup_size(64)", "override WG: u32 = 64;\n@compute @workgroup_size(WG)");
        let (info, errs) = check(median_kernel(), &src);
        assert_eq!(info, None);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        assert!(errs[0].starts_with("the workgroup size of WGSL entry `main` depends on `override` constants"), "{}", errs[0]);
    }

    #[test]
    fn every_mismatch_is_reported() {
        let src = MEDIAN
            .replace("var<storage, read> x: array<f32>", "var<storage, read_write> x: array<i32>")
            .replace("let v = x[i + k];", "let v = f32(x[i + k]);")
            .replace("struct Params { n: u32, w: u32 }", "struct Params { w: u32, n: u32 }")
            .replace("struct Params", "@group(2) @binding(0) var<uniform> q: Params;\nstruct Params")
            .replace("let i = gid.x;", "let i = gid.x + q.n;");
        let (info, errs) = check(median_kernel(), &src);
        assert_eq!(info, Some(KernelInfo { entry: "main".into(), workgroup_size: [64, 1, 1], launch: Launch::Flat }));
        assert_eq!(errs.len(), 4, "{errs:#?}");
        assert!(errs[0].starts_with("`x` is bound `read` but WGSL"), "{}", errs[0]);
        assert!(
            errs[1].starts_with(
                "`x` holds `f32` in the signature but WGSL `@group(0) @binding(0) var<storage, read_write> x` has type `array<i32>`"
            ),
            "{}",
            errs[1]
        );
        assert!(errs[2].starts_with("uniform fields are `n, w` here but WGSL struct `Params` declares `w, n`"), "{}", errs[2]);
        assert!(errs[3].starts_with("WGSL `@group(2) @binding(0) var<uniform> q` is used by entry `main`"), "{}", errs[3]);
    }
}
