//! Dtype-generic contracts: the instances a contract's dtype variables span and the
//! instantiation of the contract at one of them. A declared contract is itself an instance
//! (each variable at its first member); [`Contract::instantiate`] rebinds it. Owns nothing but
//! these rules over the plain data model.

use crate::contract::{Arg, Contract, DType, DTypeVar};

/// The most instances (member combinations) one declaration may span.
pub const MAX_INSTANCES: usize = 64;

impl Contract {
    /// Whether the contract declares dtype variables.
    pub fn is_generic(&self) -> bool {
        !self.signature.dtype_vars.is_empty()
    }

    /// Every binding of the dtype variables (one member per variable, in variable order), in
    /// declaration order of the members (the first varies slowest). One empty binding for a
    /// contract without variables.
    pub fn instances(&self) -> Vec<Vec<DType>> {
        let mut out: Vec<Vec<DType>> = vec![Vec::new()];
        for v in &self.signature.dtype_vars {
            out = out.iter().flat_map(|b| v.members.iter().map(move |m| b.iter().copied().chain([*m]).collect())).collect();
        }
        out
    }

    /// The binding this instance has: for each variable, the dtype of the first tensor or
    /// parameter it types (its first member where none does).
    pub fn binding(&self) -> Vec<DType> {
        let sig = &self.signature;
        sig.dtype_vars
            .iter()
            .map(|v| {
                let typed = sig.args.iter().map(|a| match a {
                    Arg::Tensor(t) => (t.var.as_deref(), t.dtype),
                    Arg::Param(p) => (p.var.as_deref(), p.dtype),
                });
                let mut all = typed.chain(sig.outputs.iter().map(|o| (o.var.as_deref(), o.dtype)));
                all.find(|(var, _)| *var == Some(v.name.as_str())).map_or(v.members.first().copied().unwrap_or(DType::f32), |(_, d)| d)
            })
            .collect()
    }

    /// `T = f32, U = u32` for this instance (empty for a contract without variables).
    pub fn binding_text(&self) -> String {
        binding_text(&self.signature.dtype_vars, &self.binding())
    }

    /// The contract at another binding: every variable-typed tensor and parameter takes its
    /// variable's member from `binding`. `Err` names what is wrong with the binding.
    pub fn instantiate(&self, binding: &[DType]) -> Result<Contract, String> {
        let vars = &self.signature.dtype_vars;
        if binding.len() != vars.len() {
            return Err(format!("{} dtype(s) given for {} dtype variable(s)", binding.len(), vars.len()));
        }
        for (v, d) in vars.iter().zip(binding) {
            if !v.members.contains(d) {
                return Err(format!("`{d}` is not a member of `{}` ({})", v.name, members_text(v)));
            }
        }
        let of =
            |var: &Option<String>, d: DType| var.as_ref().and_then(|n| vars.iter().position(|v| &v.name == n)).map_or(d, |i| binding[i]);
        let mut c = self.clone();
        for a in &mut c.signature.args {
            match a {
                Arg::Tensor(t) => t.dtype = of(&t.var, t.dtype),
                Arg::Param(p) => p.dtype = of(&p.var, p.dtype),
            }
        }
        for o in &mut c.signature.outputs {
            o.dtype = of(&o.var, o.dtype);
        }
        Ok(c)
    }

    /// Whether kernel `k` serves this instance's binding (every kernel does in a contract
    /// without variables; `false` for an index out of range).
    pub fn kernel_serves(&self, k: usize) -> bool {
        self.kernels.get(k).is_some_and(|kernel| serves(&kernel.dtypes, &self.signature.dtype_vars, &self.binding()))
    }

    /// Every `cpu` kernel, in declaration order: (path, the members it serves; empty: all).
    pub fn cpu_kernels(&self) -> Vec<(&str, &[DTypeVar])> {
        let first = self.cpu.as_deref().map(|p| (p, self.cpu_dtypes.as_slice()));
        first.into_iter().chain(self.cpu_more.iter().map(|k| (k.path.as_str(), k.dtypes.as_slice()))).collect()
    }

    /// The path of the `cpu` kernel serving `binding` of the dtype variables (the first that
    /// does: the checker lets no two serve one instance), if any.
    pub fn cpu_for(&self, binding: &[DType]) -> Option<&str> {
        self.cpu_kernels().into_iter().find(|(_, sel)| serves(sel, &self.signature.dtype_vars, binding)).map(|(p, _)| p)
    }

    /// Whether a `cpu` kernel serves this instance's binding.
    pub fn cpu_serves(&self) -> bool {
        self.cpu_for(&self.binding()).is_some()
    }
}

/// Whether a `dtypes(...)` selection admits `binding` of `vars`: every selected variable's
/// bound member is among the selected members (an empty selection admits every binding).
pub fn serves(selection: &[DTypeVar], vars: &[DTypeVar], binding: &[DType]) -> bool {
    selection
        .iter()
        .all(|sel| vars.iter().position(|v| v.name == sel.name).and_then(|i| binding.get(i)).is_some_and(|d| sel.members.contains(d)))
}

/// `f16 | f32`.
pub fn members_text(v: &DTypeVar) -> String {
    v.members.iter().map(|d| d.name()).collect::<Vec<_>>().join(" | ")
}

/// `T = f32, U = u32`.
pub fn binding_text(vars: &[DTypeVar], binding: &[DType]) -> String {
    vars.iter().zip(binding).map(|(v, d)| format!("{} = {d}", v.name)).collect::<Vec<_>>().join(", ")
}

/// The binding gradcheck's f64 path runs at: every variable with a float member at `f64`,
/// the others at their first member.
pub fn f64_binding(vars: &[DTypeVar]) -> Vec<DType> {
    vars.iter()
        .map(|v| if v.members.iter().any(|m| m.is_float()) { DType::f64 } else { v.members.first().copied().unwrap_or(DType::f64) })
        .collect()
}

/// The WGSL spelling of a dtype, if WGSL has the type (`f16` needs `enable f16;`).
pub fn wgsl_type(d: DType) -> Option<&'static str> {
    match d {
        DType::f32 => Some("f32"),
        DType::f16 => Some("f16"),
        DType::u32 => Some("u32"),
        DType::i32 => Some("i32"),
        _ => None,
    }
}

/// What the engine prepends to a WGSL kernel serving `binding` of `vars`: `enable f16;` where a
/// member is `f16`, then `alias T = f32;` per variable, all on one line so the kernel's own line
/// numbers hold. `Err` names a member WGSL has no type for.
pub fn wgsl_prelude(vars: &[DTypeVar], binding: &[DType]) -> Result<String, String> {
    let mut out = String::new();
    if binding.contains(&DType::f16) {
        out.push_str("enable f16; ");
    }
    for (v, d) in vars.iter().zip(binding) {
        let ty = wgsl_type(*d).ok_or_else(|| format!("WGSL has no `{d}` type (for `{} = {d}`)", v.name))?;
        out.push_str(&format!("alias {} = {ty}; ", v.name));
    }
    Ok(out)
}

/// The CUDA C spelling of a dtype.
pub fn cuda_type(d: DType) -> &'static str {
    match d {
        DType::f32 => "float",
        DType::f64 => "double",
        DType::f16 => "__half",
        DType::bf16 => "__nv_bfloat16",
        DType::u32 => "unsigned int",
        DType::i32 => "int",
        DType::u64 => "unsigned long long",
        DType::i64 => "long long",
        DType::u16 => "unsigned short",
        DType::i16 => "short",
        DType::u8 => "unsigned char",
        DType::i8 => "signed char",
        DType::bool => "bool",
    }
}

/// What the engine prepends to a CUDA kernel serving `binding` of `vars`: the half-precision
/// headers where a member needs them, `typedef <type> T;` per variable, then `#line 1` so the
/// kernel's own line numbers hold in compiler messages.
pub fn cuda_prelude(vars: &[DTypeVar], binding: &[DType]) -> String {
    let mut out = String::new();
    if binding.contains(&DType::f16) {
        out.push_str("#include <cuda_fp16.h>\n");
    }
    if binding.contains(&DType::bf16) {
        out.push_str("#include <cuda_bf16.h>\n");
    }
    for (v, d) in vars.iter().zip(binding) {
        out.push_str(&format!("typedef {} {};\n", cuda_type(*d), v.name));
    }
    if !out.is_empty() {
        out.push_str("#line 1\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::contract::{
        Arg, Backward, Category, Contract, DType, DTypeVar, Expr, ShapeClass, Signature, TensorSig, Tolerance, Visibility,
    };

    fn generic() -> Contract {
        let t = |name: &str, dtype: DType, var: Option<&str>| TensorSig {
            name: name.into(),
            dtype,
            dims: vec![Expr::Sym("n".into())],
            var: var.map(Into::into),
        };
        Contract {
            name: "a/b".into(),
            version: 1,
            signature: Signature {
                args: vec![Arg::Tensor(t("x", DType::f16, Some("T"))), Arg::Tensor(t("i", DType::u32, None))],
                constraints: vec![],
                outputs: vec![t("out", DType::f16, Some("T"))],
                shape_class: ShapeClass::Static,
                float_constraints: vec![],
                dtype_vars: vec![DTypeVar { name: "T".into(), members: vec![DType::f16, DType::f32, DType::f64] }],
            },
            category: Category::Elementwise,
            tolerance: Tolerance::Ulp(1),
            backward: Backward::None,
            subgradient: None,
            nan: None,
            cpu: Some("fast".into()),
            cpu_dtypes: vec![DTypeVar { name: "T".into(), members: vec![DType::f32] }],
            cpu_more: vec![],
            kernels: vec![],
            license: None,
            visibility: Visibility::Private,
            signed_zero: Default::default(),
            domain: vec![],
            magnitude: vec![],
            broadcast: Default::default(),
        }
    }

    #[test]
    fn instances_bindings_and_instantiation() {
        let c = generic();
        assert!(c.is_generic());
        assert_eq!(c.instances(), vec![vec![DType::f16], vec![DType::f32], vec![DType::f64]]);
        assert_eq!(c.binding(), vec![DType::f16]);
        let f64c = c.instantiate(&[DType::f64]).unwrap();
        assert_eq!(f64c.binding(), vec![DType::f64]);
        assert_eq!(f64c.signature.outputs[0].dtype, DType::f64);
        assert_eq!(f64c.signature.inputs().nth(1).unwrap().dtype, DType::u32, "a fixed dtype stays");
        assert_eq!(f64c.binding_text(), "T = f64");
        assert!(!c.cpu_serves() && c.instantiate(&[DType::f32]).unwrap().cpu_serves() && !f64c.cpu_serves());
        assert_eq!((c.cpu_for(&[DType::f32]), c.cpu_for(&[DType::f64])), (Some("fast"), None));
        assert_eq!(c.instantiate(&[DType::bf16]).unwrap_err(), "`bf16` is not a member of `T` (f16 | f32 | f64)");
        assert!(c.instantiate(&[]).is_err());
        let vars = &c.signature.dtype_vars;
        assert_eq!(super::wgsl_prelude(vars, &[DType::f16]).unwrap(), "enable f16; alias T = f16; ");
        assert_eq!(super::wgsl_prelude(vars, &[DType::f64]).unwrap_err(), "WGSL has no `f64` type (for `T = f64`)");
        assert_eq!(super::cuda_prelude(vars, &[DType::f64]), "typedef double T;\n#line 1\n");
        assert_eq!(super::cuda_prelude(&[], &[]), "");
        assert_eq!(super::f64_binding(vars), vec![DType::f64]);
    }

    #[test]
    fn each_instance_finds_the_cpu_kernel_that_serves_it() {
        let mut c = generic();
        c.cpu_more.push(crate::contract::CpuKernel {
            path: "fast64".into(),
            dtypes: vec![DTypeVar { name: "T".into(), members: vec![DType::f64] }],
        });
        let paths: Vec<&str> = c.cpu_kernels().iter().map(|(p, _)| *p).collect();
        assert_eq!(paths, ["fast", "fast64"]);
        assert_eq!(c.cpu_for(&[DType::f16]), None);
        assert_eq!(c.cpu_for(&[DType::f32]), Some("fast"));
        assert_eq!(c.cpu_for(&[DType::f64]), Some("fast64"));
        assert!(c.instantiate(&[DType::f64]).unwrap().cpu_serves());
        // One kernel keeps the encoding it had before several existed.
        let json = serde_json::to_string(&generic()).unwrap();
        assert!(!json.contains("cpu_more"), "{json}");
        let back: crate::contract::Contract = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn several_variables_span_their_product_and_plain_contracts_one_instance() {
        let mut c = generic();
        c.signature.dtype_vars.push(DTypeVar { name: "U".into(), members: vec![DType::u32, DType::i64] });
        assert_eq!(c.instances().len(), 6);
        assert_eq!(c.instances()[1], vec![DType::f16, DType::i64]);
        c.signature.dtype_vars.clear();
        assert_eq!(c.instances(), vec![Vec::<DType>::new()]);
        assert_eq!(c.kernel_serves(0), !c.kernels.is_empty());
    }
}
