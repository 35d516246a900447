//! The launch convention of a WGSL entry point, read from its builtins (naga IR): which of
//! `global_invocation_id`, `workgroup_id` and `num_workgroups` it declares and which
//! components it reads. It reads no files and generates nothing.
//!
//! The convention: a **flat** kernel indexes with the x components only; the runtime launches
//! `ceil(threads / workgroup)` workgroups along x, at most the device's per-dimension limit
//! (65,535 on most devices: 4.2M invocations at 64 per workgroup). A **linear** kernel declares
//! `@builtin(num_workgroups) nwg` and linearises its index,
//! `gid.x + gid.y * nwg.x * WG` (or `(wid.x + wid.y * nwg.x) * WG + lid.x`), keeping its
//! `i >= threads` guard: the runtime then launches a 2-D grid of rows `nwg.x` workgroups wide,
//! as many rows as needed, so any length the buffer limits allow runs. Conformance launches
//! linear kernels in rows one workgroup wide, so a wrong row width fails on small cases.

use crate::ctxt::Ctxt;
use crate::model::SKernel;
use naga::valid::FunctionInfo;
use naga::{Binding, BuiltIn, EntryPoint, Expression, Handle, Module, TypeInner};

/// How a checked WGSL entry point indexes its invocations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Launch {
    /// x components only: at most the device's workgroups per dimension.
    #[default]
    Flat,
    /// Linearised over rows of `num_workgroups.x` workgroups: any number of workgroups.
    Linear,
}

/// What the entry point does with one builtin.
#[derive(Default)]
struct Use {
    declared: bool,
    /// Reads something other than the x component (y, z, the whole vector, a dynamic index).
    beyond_x: bool,
    /// Which components it reads (all three where the whole vector or a dynamic index is used).
    reads: [bool; 3],
}

/// The entry point's use of `builtin`: declared as an argument or a member of a struct
/// argument; every read of it other than `.x` counts as beyond x.
fn builtin_use(module: &Module, info: &FunctionInfo, ep: &EntryPoint, builtin: BuiltIn) -> Use {
    let f = &ep.function;
    let mut sources: Vec<Handle<Expression>> = Vec::new();
    let mut declared = false;
    for (k, arg) in f.arguments.iter().enumerate() {
        let args = f.expressions.iter().filter(|(_, e)| matches!(e, Expression::FunctionArgument(a) if *a as usize == k)).map(|(h, _)| h);
        if arg.binding == Some(Binding::BuiltIn(builtin)) {
            declared = true;
            sources.extend(args);
        } else if let TypeInner::Struct { members, .. } = &module.types[arg.ty].inner {
            let Some(m) = members.iter().position(|m| m.binding == Some(Binding::BuiltIn(builtin))) else { continue };
            declared = true;
            let args: Vec<Handle<Expression>> = args.collect();
            sources.extend(f.expressions.iter().filter_map(|(h, e)| match e {
                Expression::AccessIndex { base, index } if args.contains(base) && *index as usize == m => Some(h),
                _ => None,
            }));
        }
    }
    let mut reads = [false; 3];
    for &s in &sources {
        let mut per = [0usize; 3];
        for (_, e) in f.expressions.iter() {
            if let Expression::AccessIndex { base, index } = e {
                if *base == s && (*index as usize) < 3 {
                    per[*index as usize] += 1;
                }
            }
        }
        let whole = info[s].ref_count > per.iter().sum::<usize>();
        for k in 0..3 {
            reads[k] |= whole || per[k] > 0;
        }
    }
    Use { declared, beyond_x: reads[1] || reads[2], reads }
}

/// Rule: an entry point that reads the y or z component of `global_invocation_id` or
/// `workgroup_id` declares `@builtin(num_workgroups)` (its rows are `num_workgroups.x`
/// workgroups wide; without it no index can be linearised). Returns the entry's launch
/// convention, or `None` (reported) when it breaks the rule.
pub fn check_launch(cx: &Ctxt, kernel: &SKernel, module: &Module, info: &FunctionInfo, ep: &EntryPoint) -> Option<Launch> {
    let gid = builtin_use(module, info, ep, BuiltIn::GlobalInvocationId);
    let wid = builtin_use(module, info, ep, BuiltIn::WorkGroupId);
    if !kernel.threads_yz.is_empty() {
        // A 2-D or 3-D launch: each component indexes its own extent, `ceil(threads / size)`
        // workgroups along each, nothing to linearise; but an entry that reads only x
        // components would run every row of the launch on the same elements.
        let lid = builtin_use(module, info, ep, BuiltIn::LocalInvocationId);
        let dims = kernel.threads_yz.len() + 1;
        if let Some(d) = (1..dims.min(3)).find(|&d| !(gid.reads[d] || wid.reads[d] || lid.reads[d])) {
            let axis = ["x", "y", "z"][d];
            let msg = format!(
                "WGSL entry `{}` is launched over {dims} extents (`threads = (...)`) but reads no `{axis}` component of its invocation ids: every invocation along {axis} would repeat the same elements; index that dimension with `global_invocation_id.{axis}`, or launch over fewer extents",
                ep.name
            );
            cx.error(syn::Error::new(kernel.path.span(), msg));
            return None;
        }
        return Some(Launch::Flat);
    }
    let nwg = builtin_use(module, info, ep, BuiltIn::NumWorkGroups);
    let rows = gid.beyond_x || wid.beyond_x;
    if rows && !nwg.declared {
        let which = if gid.beyond_x { "global_invocation_id" } else { "workgroup_id" };
        let msg = format!(
            "WGSL entry `{}` reads more than `{which}.x` but does not declare `@builtin(num_workgroups)`: a launch of any size runs in rows `num_workgroups.x` workgroups wide, so linearise with it: `let i = gid.x + gid.y * nwg.x * {}u;` (or index with `.x` only, for at most the device's workgroups per dimension)",
            ep.name, ep.workgroup_size[0]
        );
        cx.error(syn::Error::new(kernel.path.span(), msg));
        return None;
    }
    Some(if rows { Launch::Linear } else { Launch::Flat })
}
