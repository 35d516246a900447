//! The VJP op of an op whose backward declares kernels (`backward = vjp(rule, kernel(...),
//! cpu(f))`): an op in its own right, derived from the forward contract, whose reference is the
//! VJP rule and whose kernels (GPU and `cpu`) are the declared VJP kernels. Conformance, dispatch
//! and device tensors then treat a backward kernel exactly like a forward one.
//!
//! The derivation is one rule (the checker applies the same rule to the spanned signature, so a
//! kernel's bindings are checked at compile time against what runs):
//! - arguments: the op's arguments in order, then one cotangent `d_<output>` per output (the
//!   output's dtype and dims), which is the order the VJP rule takes them;
//! - outputs: one gradient `d_<input>` per float (differentiable) tensor input, with its dtype and
//!   dims;
//! - name `<name>/vjp`, the same version, constraints, dtype variables, category, tolerance,
//!   domain, licence and visibility; `backward = none`, no NaN policy; its `cpu` kernels the
//!   backward's `cpu(...)` entries (none if it declares none);
//! - under `exact`, gradients compare with `signed_zero = ignore` (IEEE equality, NaN equal to
//!   NaN whatever its payload): a rule that sums cotangents leaves the payload of a NaN sum to
//!   its compiler (IEEE 754 does not say which of two NaN operands an addition returns, and
//!   LLVM may commute the operands), so no kernel could be held to it; every other bit stays
//!   exact.

use crate::contract::{Arg, Backward, Contract, CpuKernel, Kernel, ShapeClass, SignedZero, TensorSig, Tolerance};

/// The name the VJP op gives the cotangent of output `output` or the gradient of input `input`.
pub fn grad_name(tensor: &str) -> String {
    format!("d_{tensor}")
}

impl Contract {
    /// The declared VJP kernels (empty unless `backward = vjp(rule, kernel(...))`).
    pub fn vjp_kernels(&self) -> &[Kernel] {
        match &self.backward {
            Backward::Declared { vjp: Some(_), vjp_kernels, .. } => vjp_kernels,
            _ => &[],
        }
    }

    /// The declared `cpu` kernels of the VJP (empty unless `backward = vjp(rule, cpu(...))`).
    pub fn vjp_cpu_kernels(&self) -> &[CpuKernel] {
        match &self.backward {
            Backward::Declared { vjp: Some(_), vjp_cpu, .. } => vjp_cpu,
            _ => &[],
        }
    }

    /// Every kernel the declaration embeds, in embedding order: the op's own, then its VJP
    /// kernels (an op's description carries them in this order).
    pub fn embedded_kernels(&self) -> impl Iterator<Item = &Kernel> {
        self.kernels.iter().chain(self.vjp_kernels())
    }

    /// The VJP op's contract, where the backward declares VJP kernels, GPU or `cpu` (`None`
    /// otherwise); an error names what makes the derivation impossible (a data-dependent output
    /// shape, or a derived name that an argument already has).
    pub fn vjp_contract(&self) -> Option<Result<Contract, String>> {
        let kernels = self.vjp_kernels();
        let cpu = self.vjp_cpu_kernels();
        if kernels.is_empty() && cpu.is_empty() {
            return None;
        }
        Some(self.derive_vjp(kernels.to_vec(), cpu))
    }

    fn derive_vjp(&self, kernels: Vec<Kernel>, cpu: &[CpuKernel]) -> Result<Contract, String> {
        let sig = &self.signature;
        if sig.shape_class != ShapeClass::Static {
            return Err(format!("op `{}`: VJP kernels need outputs whose shapes the signature fixes (a static shape class)", self.id()));
        }
        let mut derived = self.clone();
        let cotangents = sig.outputs.iter().map(|o| TensorSig { name: grad_name(&o.name), ..o.clone() });
        derived.signature.args.extend(cotangents.map(Arg::Tensor));
        derived.signature.outputs = sig.differentiable_inputs().map(|t| TensorSig { name: grad_name(&t.name), ..t.clone() }).collect();
        let mut names: Vec<&str> = Vec::new();
        for n in derived.signature.args.iter().map(Arg::name).chain(derived.signature.outputs.iter().map(|o| o.name.as_str())) {
            if names.contains(&n) {
                return Err(format!("op `{}`: its VJP op would have two tensors named `{n}`; rename the argument `{n}`", self.id()));
            }
            names.push(n);
        }
        derived.name = format!("{}/vjp", self.name);
        derived.backward = Backward::None;
        derived.subgradient = None;
        derived.nan = None;
        derived.cpu = cpu.first().map(|k| k.path.clone());
        derived.cpu_dtypes = cpu.first().map(|k| k.dtypes.clone()).unwrap_or_default();
        derived.cpu_more = cpu.iter().skip(1).cloned().collect();
        derived.kernels = kernels;
        // A broadcasting op's VJP op broadcasts too (its operands of any shapes, its gradients
        // in the broadcast shape): the tape hands it operands expanded to the cotangents' shape
        // and sums each gradient back to its operand's shape.
        if derived.tolerance == Tolerance::Exact {
            derived.signed_zero = SignedZero::Ignore;
        }
        Ok(derived)
    }
}

#[cfg(test)]
mod tests {
    use crate::contract::*;

    fn median() -> Contract {
        let t = |name: &str| TensorSig { name: name.into(), dtype: DType::f32, dims: vec![Expr::Sym("n".into())], var: None };
        let kernel = Kernel {
            lang: KernelLang::Wgsl,
            path: "k.wgsl".into(),
            entry: "main".into(),
            bindings: vec![],
            threads: Expr::Sym("n".into()),
            threads_yz: vec![],
            block: None,
            block_yz: vec![],
            dtypes: vec![],
        };
        Contract {
            name: "user/median".into(),
            version: 1,
            signature: Signature {
                args: vec![Arg::Tensor(t("x")), Arg::Param(ParamSig { name: "w".into(), dtype: DType::u32, var: None })],
                constraints: vec![],
                outputs: vec![t("out")],
                shape_class: ShapeClass::Static,
                float_constraints: vec![],
                dtype_vars: vec![],
            },
            category: Category::Selection,
            tolerance: Tolerance::Exact,
            backward: Backward::Declared { vjp: Some("median_vjp".into()), jvp: vec![], vjp_kernels: vec![kernel], vjp_cpu: vec![] },
            subgradient: Some("routed".into()),
            nan: None,
            cpu: None,
            cpu_dtypes: vec![],
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

    /// The VJP op takes the op's arguments then one cotangent per output, and returns one
    /// gradient per float input; an op without VJP kernels has none.
    #[test]
    fn the_vjp_op_appends_cotangents_and_returns_gradients() {
        let c = median();
        let v = c.vjp_contract().expect("declares VJP kernels").expect("derivable");
        let args: Vec<&str> = v.signature.args.iter().map(Arg::name).collect();
        assert_eq!(args, ["x", "w", "d_out"]);
        assert_eq!(v.signature.outputs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["d_x"]);
        assert_eq!((v.id().as_str(), v.kernels.len(), v.backward.clone()), ("user/median/vjp@1", 1, Backward::None));
        assert_eq!((v.tolerance, v.signed_zero), (Tolerance::Exact, SignedZero::Ignore), "NaN payloads of sums are not the rule's");
        let mut plain = c.clone();
        plain.backward = Backward::Declared { vjp: Some("median_vjp".into()), jvp: vec![], vjp_kernels: vec![], vjp_cpu: vec![] };
        assert!(plain.vjp_contract().is_none());
    }

    /// A backward with only `cpu` kernels has a VJP op too, whose `cpu` kernels they are; the
    /// forward's own `cpu` kernel is never the VJP op's; a contract without them keeps its JSON.
    #[test]
    fn the_vjp_ops_cpu_kernels_are_the_backwards() {
        let mut c = median();
        c.cpu = Some("median_cpu".into());
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("vjp_cpu"), "{json}");
        let v = c.vjp_contract().unwrap().unwrap();
        assert_eq!((v.cpu.as_deref(), v.cpu_kernels().len()), (None, 0), "the forward's cpu kernel is not the VJP op's");
        let sel = vec![DTypeVar { name: "T".into(), members: vec![DType::f32] }];
        let vjp_cpu =
            vec![CpuKernel { path: "median_vjp_cpu".into(), dtypes: vec![] }, CpuKernel { path: "other".into(), dtypes: sel.clone() }];
        c.backward = Backward::Declared { vjp: Some("median_vjp".into()), jvp: vec![], vjp_kernels: vec![], vjp_cpu };
        let v = c.vjp_contract().expect("cpu kernels alone make a VJP op").unwrap();
        assert_eq!((v.cpu.as_deref(), v.kernels.len()), (Some("median_vjp_cpu"), 0));
        assert_eq!(v.cpu_more, vec![CpuKernel { path: "other".into(), dtypes: sel }]);
        assert!(serde_json::to_string(&c).unwrap().contains("median_vjp_cpu"));
    }

    /// A derived name that an argument already has, or a data-dependent output, is refused
    /// with the op named.
    #[test]
    fn clashing_names_and_dynamic_shapes_are_refused() {
        let mut c = median();
        if let Arg::Tensor(t) = &mut c.signature.args[0] {
            t.name = "d_out".into();
        }
        let e = c.vjp_contract().unwrap().unwrap_err();
        assert!(e.contains("user/median@1") && e.contains("`d_out`"), "{e}");
        let mut c = median();
        c.signature.shape_class = ShapeClass::Dynamic;
        assert!(c.vjp_contract().unwrap().unwrap_err().contains("static shape class"));
    }
}
