//! The expansion's decisions, made here from the checked declaration so that `op-macros` only
//! generates: how the shims instantiate the user's functions (generic over one float type `T`
//! or concrete), at which dtype the declared path runs, whether an f64 path exists for
//! gradcheck, and which user functions each shim calls. Derived data only; no rules.

use crate::contract::{Contract, DType};
use crate::model::{OpAttr, SBackward, SCpuKernel};
use crate::reference::RefShape;

/// The Rust element type of a value under the plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Elem {
    /// The shims' float type parameter `T`.
    T,
    /// A concrete dtype.
    Of(DType),
}

/// The f64 path gradcheck runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum F64Path {
    /// No f64 path: the op has no float, or a non-generic reference of another float dtype
    /// (then it is not differentiable: the checker requires a generic reference for that).
    None,
    /// The generic shims instantiated at `f64`.
    Generic,
    /// The declared shims themselves: every float of the op already is `f64`.
    Declared,
    /// Concrete shims at [`ShimPlan::f64_binding`] (an op with dtype variables).
    Member,
}

/// How the shims call the user's functions.
#[derive(Clone, Debug)]
pub struct ShimPlan {
    /// Shims are generic over `T` (the reference is generic), instantiated at `declared` and,
    /// for gradcheck, at `f64`.
    pub generic: bool,
    /// The float dtype `T` takes on the declared path (generic shims only).
    pub declared: Option<DType>,
    /// The f64 path.
    pub f64: F64Path,
    /// Whether generic shims also need `T: ParamValue` (a float parameter is read as `T`).
    pub float_params: bool,
    /// The fast CPU kernel (`cpu = path`) of an op without dtype variables, called at the
    /// declared dtype (such an op has at most one).
    pub cpu: Option<syn::Path>,
    /// The VJP rule.
    pub vjp: Option<syn::Path>,
    /// The VJP's `cpu` kernel of an op without dtype variables (`vjp(rule, cpu(f))`), called
    /// with the rule's signature at the declared dtype.
    pub vjp_cpu: Option<syn::Path>,
    /// The JVP rules, one per differentiable input, in order.
    pub jvp: Vec<syn::Path>,
    /// The composite graph builder.
    pub composite: Option<syn::Path>,
    /// The bindings of the dtype variables, one instance each (empty for an op without
    /// variables): the shims are concrete per instance.
    pub members: Vec<Vec<DType>>,
    /// The `cpu` kernel serving each instance, if any (several `cpu(path, dtypes(...))`
    /// entries serve disjoint instances).
    pub cpu_members: Vec<Option<syn::Path>>,
    /// The VJP's `cpu` kernel serving each instance, if any.
    pub vjp_cpu_members: Vec<Option<syn::Path>>,
    /// The binding the f64 path instantiates (variables with a float member at `f64`).
    pub f64_binding: Vec<DType>,
}

impl ShimPlan {
    /// The plan for a checked declaration.
    pub fn new(attr: &OpAttr, c: &Contract, reference: &RefShape) -> ShimPlan {
        let sig = &c.signature;
        let floats: Vec<DType> = sig
            .inputs()
            .map(|t| t.dtype)
            .chain(sig.params().map(|p| p.dtype))
            .chain(sig.outputs.iter().map(|o| o.dtype))
            .filter(|d| d.is_float())
            .collect();
        let generic = reference.float_generic.is_some() && !floats.is_empty();
        let members = if c.is_generic() { c.instances() } else { Vec::new() };
        let f64 = match (floats.is_empty(), generic, floats.iter().all(|d| *d == DType::f64)) {
            (true, _, _) => F64Path::None,
            _ if c.is_generic() => F64Path::Member,
            (false, true, _) => F64Path::Generic,
            (false, false, true) => F64Path::Declared,
            (false, false, false) => F64Path::None,
        };
        let vars = &c.signature.dtype_vars;
        // The kernel of `kernels` (in declaration order) serving each instance.
        let serving = |kernels: &[SCpuKernel]| -> Vec<Option<syn::Path>> {
            members
                .iter()
                .map(|b| {
                    let found = kernels.iter().find(|k| {
                        let sel: Vec<_> = k.selection().iter().map(|v| v.to_var()).collect();
                        op_contract::generic::serves(&sel, vars, b)
                    });
                    found.map(|k| k.path.clone())
                })
                .collect()
        };
        let cpu_members = serving(&attr.cpu);
        let (mut vjp, mut jvp, mut composite, mut vjp_cpu) = (None, Vec::new(), None, &[][..]);
        match &attr.backward {
            Some(SBackward::Declared { vjp: v, jvp: j, vjp_cpu: vc, .. }) => {
                vjp = v.clone();
                jvp = j.as_ref().map(|(_, rules)| rules.clone()).unwrap_or_default();
                if vjp.is_some() {
                    vjp_cpu = vc;
                }
            }
            Some(SBackward::Composite { graph, .. }) => composite = graph.clone(),
            _ => {}
        }
        ShimPlan {
            generic,
            declared: if generic { floats.first().copied() } else { None },
            f64,
            float_params: sig.params().any(|p| p.dtype.is_float()),
            cpu: if c.is_generic() { None } else { attr.cpu.first().map(|k| k.path.clone()) },
            vjp_cpu: if c.is_generic() { None } else { vjp_cpu.first().map(|k| k.path.clone()) },
            vjp_cpu_members: serving(vjp_cpu),
            vjp,
            jvp,
            composite,
            members,
            cpu_members,
            f64_binding: op_contract::generic::f64_binding(vars),
        }
    }

    /// The element type of a value of dtype `d` typed by variable `var`, at instance `binding`
    /// (an op with dtype variables).
    pub fn member_elem(c: &Contract, d: DType, var: Option<&str>, binding: &[DType]) -> DType {
        var.and_then(|v| c.signature.dtype_vars.iter().position(|x| x.name == v)).and_then(|i| binding.get(i).copied()).unwrap_or(d)
    }

    /// The element type of a value of dtype `d` in the shims.
    pub fn elem(&self, d: DType) -> Elem {
        if self.generic && d.is_float() {
            Elem::T
        } else {
            Elem::Of(d)
        }
    }
}
