//! The typed model of one `#[op(...)]` attribute, as parsed: every value keeps the span of the
//! tokens it came from so the checker can point at the smallest offending token. It holds no
//! rules (see `check`) and converts to the span-free [`Contract`](crate::contract::Contract).

use crate::contract::{
    self, Access, BinOp, Category, CmpOp, DType, DomainBound, FloatLit, FloatTerm, KernelLang, NanPolicy, SignedZero, Tolerance, Visibility,
};
use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;

/// A source range from its first to its last token, usable as an error location.
#[derive(Clone, Copy, Debug)]
pub struct SpanRange {
    /// The first token's span.
    pub first: Span,
    /// The last token's span.
    pub last: Span,
}

impl SpanRange {
    /// A range of one token.
    pub fn single(span: Span) -> Self {
        SpanRange { first: span, last: span }
    }
    /// Spans `self.first ..= other.last`.
    pub fn to(self, other: SpanRange) -> Self {
        SpanRange { first: self.first, last: other.last }
    }
    /// An error covering the range.
    pub fn error(self, msg: impl std::fmt::Display) -> syn::Error {
        let (a, b) = (self.first, self.last);
        let tokens: TokenStream = quote_spanned!(a=> __op_first);
        let mut tokens = tokens;
        tokens.extend(quote_spanned!(b=> __op_last));
        syn::Error::new_spanned(tokens, msg)
    }
}

/// A value with its source range.
#[derive(Clone, Debug)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it was written.
    pub span: SpanRange,
}

impl<T> Spanned<T> {
    /// Pairs a value with its range.
    pub fn new(value: T, span: SpanRange) -> Self {
        Spanned { value, span }
    }
}

/// An integer expression with spans.
#[derive(Clone, Debug)]
pub struct SExpr {
    /// The expression's form.
    pub kind: SExprKind,
    /// The whole expression.
    pub span: SpanRange,
}

/// Expression forms.
#[derive(Clone, Debug)]
pub enum SExprKind {
    /// A dim symbol or integer parameter.
    Sym(syn::Ident),
    /// An integer literal.
    Lit(i64),
    /// A float literal: parsed only in constraint terms, where it makes the constraint a float
    /// constraint (`check` refuses it anywhere else).
    Float(f64),
    /// Negation `-e`.
    Neg(Box<SExpr>),
    /// A binary operation `a op b`.
    Bin(BinOp, Box<SExpr>, Box<SExpr>),
    /// `min(a, b)`.
    Min(Box<SExpr>, Box<SExpr>),
    /// `max(a, b)`.
    Max(Box<SExpr>, Box<SExpr>),
}

impl SExpr {
    /// The span-free expression.
    pub fn to_expr(&self) -> contract::Expr {
        use contract::Expr as E;
        match &self.kind {
            SExprKind::Sym(i) => E::Sym(i.to_string()),
            SExprKind::Lit(v) => E::Lit(*v),
            // Float literals live only in float constraints, which convert with
            // `SConstraint::to_float_constraint`; this arm keeps the conversion total.
            SExprKind::Float(v) => E::Lit(*v as i64),
            SExprKind::Neg(e) => E::Neg(Box::new(e.to_expr())),
            SExprKind::Bin(op, a, b) => E::Bin(*op, Box::new(a.to_expr()), Box::new(b.to_expr())),
            SExprKind::Min(a, b) => E::Min(Box::new(a.to_expr()), Box::new(b.to_expr())),
            SExprKind::Max(a, b) => E::Max(Box::new(a.to_expr()), Box::new(b.to_expr())),
        }
    }

    /// Every symbol identifier in the expression, in order.
    pub fn symbols<'a>(&'a self, out: &mut Vec<&'a syn::Ident>) {
        match &self.kind {
            SExprKind::Sym(i) => out.push(i),
            SExprKind::Lit(_) | SExprKind::Float(_) => {}
            SExprKind::Neg(e) => e.symbols(out),
            SExprKind::Bin(_, a, b) | SExprKind::Min(a, b) | SExprKind::Max(a, b) => {
                a.symbols(out);
                b.symbols(out);
            }
        }
    }
}

impl SExpr {
    /// Nesting depth, counted as `contract::Expr::depth` counts it.
    pub fn depth(&self) -> usize {
        match &self.kind {
            SExprKind::Sym(_) | SExprKind::Lit(_) | SExprKind::Float(_) => 1,
            SExprKind::Neg(e) => 1 + e.depth(),
            SExprKind::Bin(_, a, b) | SExprKind::Min(a, b) | SExprKind::Max(a, b) => 1 + a.depth().max(b.depth()),
        }
    }

    /// Number of nodes (symbols, literals and operators).
    pub fn nodes(&self) -> usize {
        match &self.kind {
            SExprKind::Sym(_) | SExprKind::Lit(_) | SExprKind::Float(_) => 1,
            SExprKind::Neg(e) => 1 + e.nodes(),
            SExprKind::Bin(_, a, b) | SExprKind::Min(a, b) | SExprKind::Max(a, b) => 1 + a.nodes() + b.nodes(),
        }
    }

    /// The first float literal in the expression, if any.
    pub fn float_literal(&self) -> Option<&SExpr> {
        match &self.kind {
            SExprKind::Float(_) => Some(self),
            SExprKind::Sym(_) | SExprKind::Lit(_) => None,
            SExprKind::Neg(e) => e.float_literal(),
            SExprKind::Bin(_, a, b) | SExprKind::Min(a, b) | SExprKind::Max(a, b) => a.float_literal().or_else(|| b.float_literal()),
        }
    }

    /// The term of a float constraint this expression is: a symbol (taken as a float
    /// parameter), a literal or a negated literal; `None` for anything else.
    pub fn to_float_term(&self) -> Option<FloatTerm> {
        match &self.kind {
            SExprKind::Sym(i) => Some(FloatTerm::Param(i.to_string())),
            SExprKind::Lit(v) => Some(FloatTerm::Lit(FloatLit(*v as f64))),
            SExprKind::Float(v) => Some(FloatTerm::Lit(FloatLit(*v))),
            SExprKind::Neg(e) => match e.to_float_term()? {
                FloatTerm::Lit(l) => Some(FloatTerm::Lit(FloatLit(-l.0))),
                FloatTerm::Param(_) => None,
            },
            _ => None,
        }
    }
}

/// A parsed `#[op(...)]` attribute.
#[derive(Clone, Debug, Default)]
pub struct OpAttr {
    /// The whole attribute's span (for "missing key" errors).
    pub span: Option<Span>,
    /// `name = "..."`.
    pub name: Option<Spanned<String>>,
    /// `version = n`.
    pub version: Option<Spanned<u32>>,
    /// `signature(...) -> ...`.
    pub signature: Option<SSignature>,
    /// `category = ...`.
    pub category: Option<Spanned<Category>>,
    /// `tolerance = ...`.
    pub tolerance: Option<Spanned<Tolerance>>,
    /// `backward = ...`.
    pub backward: Option<SBackward>,
    /// `subgradient = "..."`: the rule at kinks.
    pub subgradient: Option<Spanned<String>>,
    /// `nan = propagate`.
    pub nan: Option<Spanned<NanPolicy>>,
    /// Every `cpu = path` or `cpu(path, dtypes(...))` entry that parsed, in order: the fast
    /// CPU kernels (several serve disjoint instances of a dtype-generic op).
    pub cpu: Vec<SCpuKernel>,
    /// `output = static | bounded(expr) | dynamic`.
    pub output: Option<SShapeClass>,
    /// Every `kernel(...)` entry that parsed, in order.
    pub kernels: Vec<SKernel>,
    /// `license = "..."`: an SPDX expression.
    pub license: Option<Spanned<String>>,
    /// `visibility = ...`.
    pub visibility: Option<Spanned<Visibility>>,
    /// `generated_tests = false`: no `#[test]`s are generated for the declaration (fixtures
    /// whose tests assert their own expectation, e.g. a deliberately broken kernel that must be
    /// rejected). Not part of the contract: it changes no computation.
    pub generated_tests: Option<Spanned<bool>>,
    /// `signed_zero = exact | ignore`.
    pub signed_zero: Option<Spanned<SignedZero>>,
    /// `domain(...)`: one interval per float input.
    pub domain: Vec<SDomain>,
    /// `magnitude(...)`: one magnitude range per float input (where gradcheck draws values).
    pub magnitude: Vec<SMagnitude>,
    /// `broadcast = numpy`: operands of different shapes broadcast.
    pub broadcast: Option<Spanned<contract::Broadcast>>,
    /// Every key written in the attribute, even those whose value did not parse (a malformed
    /// value is reported where it is; the key is not also "missing").
    pub keys_present: Vec<String>,
}

/// One input's declared domain with spans (`x > 0`, `-1 <= y <= 1`).
#[derive(Clone, Debug)]
pub struct SDomain {
    /// The input's name as written.
    pub input: syn::Ident,
    /// The lower end, if bounded below.
    pub lo: Option<DomainBound>,
    /// The upper end, if bounded above.
    pub hi: Option<DomainBound>,
    /// The whole chain.
    pub span: SpanRange,
}

impl SDomain {
    /// The span-free domain.
    pub fn to_domain(&self) -> contract::Domain {
        contract::Domain { input: self.input.to_string(), lo: self.lo, hi: self.hi }
    }
}

/// One input's declared magnitude range with spans (`x: 1e-3..30`).
#[derive(Clone, Debug)]
pub struct SMagnitude {
    /// The input's name as written.
    pub input: syn::Ident,
    /// The smallest magnitude.
    pub lo: f64,
    /// The largest magnitude.
    pub hi: f64,
    /// The whole entry.
    pub span: SpanRange,
}

impl SMagnitude {
    /// The span-free magnitude range.
    pub fn to_magnitude(&self) -> contract::Magnitude {
        contract::Magnitude { input: self.input.to_string(), lo: self.lo, hi: self.hi }
    }
}

/// The shape signature with spans.
#[derive(Clone, Debug)]
pub struct SSignature {
    /// The `signature` keyword.
    pub span: SpanRange,
    /// The dtype variables (`signature<T: f16 | f32>`), in order.
    pub vars: Vec<SDTypeVar>,
    /// Tensor inputs and scalar parameters, in declaration order.
    pub args: Vec<SArg>,
    /// Every `where` constraint, in declaration order: integer ones and float ones (see
    /// [`SSignature::is_float_constraint`]).
    pub constraints: Vec<SConstraint>,
    /// The outputs after `->`.
    pub outputs: Vec<STensor>,
    /// Which parts did not parse (each reported where it is).
    pub gaps: Gaps,
}

/// Parts of a signature that did not parse. Each was reported where it is; the rules that
/// would need the missing part skip it instead of reporting follow-on errors.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gaps {
    /// Some argument's type did not parse (it is an [`SArg::Broken`]).
    pub args: bool,
    /// Some constraint did not parse: the admissible inputs are not known exactly.
    pub constraints: bool,
    /// Some output did not parse.
    pub outputs: bool,
}

impl Gaps {
    /// Whether everything parsed.
    pub fn none(&self) -> bool {
        !(self.args || self.constraints || self.outputs)
    }
}

impl SSignature {
    /// The tensor inputs, in order.
    pub fn inputs(&self) -> impl Iterator<Item = &STensor> {
        self.args.iter().filter_map(|a| match a {
            SArg::Tensor(t) => Some(t),
            _ => None,
        })
    }

    /// The scalar parameters, in order.
    pub fn params(&self) -> impl Iterator<Item = &SParam> {
        self.args.iter().filter_map(|a| match a {
            SArg::Param(p) => Some(p),
            _ => None,
        })
    }

    /// The parameter named `name`.
    pub fn param(&self, name: &str) -> Option<&SParam> {
        self.params().find(|p| p.name == name)
    }

    /// Whether `name` is a float parameter.
    pub fn is_float_param(&self, name: &str) -> bool {
        self.param(name).is_some_and(|p| p.dtype.value.is_float())
    }

    /// A float constraint mentions a float parameter or a float literal; the others compare
    /// integers (dims and integer parameters).
    pub fn is_float_constraint(&self, c: &SConstraint) -> bool {
        let mut syms = Vec::new();
        c.terms.iter().for_each(|t| t.symbols(&mut syms));
        syms.iter().any(|s| self.is_float_param(&s.to_string())) || c.terms.iter().any(|t| t.float_literal().is_some())
    }

    /// The integer constraints, in order.
    pub fn int_constraints(&self) -> impl Iterator<Item = &SConstraint> {
        self.constraints.iter().filter(|c| !self.is_float_constraint(c))
    }

    /// The float constraints, in order.
    pub fn float_constraints(&self) -> impl Iterator<Item = &SConstraint> {
        self.constraints.iter().filter(|c| self.is_float_constraint(c))
    }

    /// Whether the signature has a tensor (input or output) named `name`.
    pub fn has_tensor(&self, name: &str) -> bool {
        self.inputs().chain(&self.outputs).any(|t| t.name == name)
    }
}

/// One argument.
#[derive(Clone, Debug)]
pub enum SArg {
    /// A tensor input.
    Tensor(STensor),
    /// A scalar parameter.
    Param(SParam),
    /// An argument whose type did not parse (reported); it keeps its name and position.
    Broken(syn::Ident),
}

impl SArg {
    /// The argument's name.
    pub fn ident(&self) -> &syn::Ident {
        match self {
            SArg::Tensor(t) => &t.name,
            SArg::Param(p) => &p.name,
            SArg::Broken(i) => i,
        }
    }
}

/// A dtype variable and its members (`T: f16 | f32`), or in a `dtypes(...)` selection the
/// members of a variable a kernel serves.
#[derive(Clone, Debug)]
pub struct SDTypeVar {
    /// The variable's name.
    pub name: syn::Ident,
    /// Its members, each at its token.
    pub members: Vec<Spanned<DType>>,
    /// From the name to the last member.
    pub span: SpanRange,
}

impl SDTypeVar {
    /// The span-free variable.
    pub fn to_var(&self) -> contract::DTypeVar {
        contract::DTypeVar { name: self.name.to_string(), members: self.members.iter().map(|m| m.value).collect() }
    }
}

/// A tensor input or output.
#[derive(Clone, Debug)]
pub struct STensor {
    /// The name; for an unnamed output, `out` or `outN` at the dtype's span.
    pub name: syn::Ident,
    /// Whether the name was written (outputs may be unnamed).
    pub named: bool,
    /// Element type (for a variable-typed tensor: the variable's first member, at the
    /// variable's token).
    pub dtype: Spanned<DType>,
    /// The dtype variable typing the tensor, if any.
    pub var: Option<syn::Ident>,
    /// Dim expressions, outermost first.
    pub dims: Vec<SExpr>,
}

/// A scalar parameter.
#[derive(Clone, Debug)]
pub struct SParam {
    /// The parameter's name.
    pub name: syn::Ident,
    /// Scalar type (for a variable-typed parameter: the variable's first member).
    pub dtype: Spanned<DType>,
    /// The dtype variable typing the parameter, if any.
    pub var: Option<syn::Ident>,
}

/// A comparison chain.
#[derive(Clone, Debug)]
pub struct SConstraint {
    /// The compared expressions.
    pub terms: Vec<SExpr>,
    /// The operators between consecutive terms.
    pub ops: Vec<CmpOp>,
    /// The whole chain.
    pub span: SpanRange,
}

impl SConstraint {
    /// The span-free constraint.
    pub fn to_constraint(&self) -> contract::Constraint {
        contract::Constraint { terms: self.terms.iter().map(SExpr::to_expr).collect(), ops: self.ops.clone() }
    }

    /// The span-free float constraint; `None` if a term is not a parameter or a literal (the
    /// checker reports those).
    pub fn to_float_constraint(&self) -> Option<contract::FloatConstraint> {
        let terms = self.terms.iter().map(SExpr::to_float_term).collect::<Option<Vec<_>>>()?;
        Some(contract::FloatConstraint { terms, ops: self.ops.clone() })
    }
}

/// The output-shape class with spans.
#[derive(Clone, Debug)]
pub enum SShapeClass {
    /// `static`, at its keyword.
    Static(SpanRange),
    /// `bounded(expr)`: the keyword and the bound.
    Bounded(SpanRange, SExpr),
    /// `dynamic`, at its keyword.
    Dynamic(SpanRange),
}

/// The backward representation with spans.
#[derive(Clone, Debug)]
pub enum SBackward {
    /// `none`, at its keyword.
    None(SpanRange),
    /// `composite` or `composite(graph_fn)`.
    Composite {
        /// The `composite` keyword.
        span: SpanRange,
        /// The graph builder function, if named.
        graph: Option<syn::Path>,
    },
    /// `vjp(path)`, `jvp(path, ...)` or both joined by `+`.
    Declared {
        /// The first `vjp`/`jvp` keyword.
        span: SpanRange,
        /// The VJP rule, if declared.
        vjp: Option<syn::Path>,
        /// The `jvp` keyword and its rules, if declared.
        jvp: Option<(SpanRange, Vec<syn::Path>)>,
        /// The VJP op's GPU kernels (`vjp(path, kernel(...), ...)`), checked against the VJP
        /// signature (`VjpSig`).
        vjp_kernels: Vec<SKernel>,
        /// The VJP op's `cpu` kernels (`vjp(path, cpu(f, dtypes(...)), ...)` or `cpu = f`): the
        /// rule's signature at the instances each serves, checked as the op's own `cpu` entries.
        vjp_cpu: Vec<SCpuKernel>,
    },
}

impl SBackward {
    /// The span of the backward form's (first) keyword.
    pub fn span(&self) -> SpanRange {
        match self {
            SBackward::None(s) => *s,
            SBackward::Composite { span, .. } | SBackward::Declared { span, .. } => *span,
        }
    }
}

/// A `cpu = path` or `cpu(path, dtypes(...))` entry with spans.
#[derive(Clone, Debug)]
pub struct SCpuKernel {
    /// The kernel function's path.
    pub path: syn::Path,
    /// `dtypes(T: f32)`: the members served (`None`: every member), with the key's span.
    pub dtypes: Option<(SpanRange, Vec<SDTypeVar>)>,
    /// The whole entry, from the `cpu` key.
    pub span: SpanRange,
}

impl SCpuKernel {
    /// The selection's variables (empty: every member).
    pub fn selection(&self) -> &[SDTypeVar] {
        self.dtypes.as_ref().map(|(_, s)| s.as_slice()).unwrap_or_default()
    }

    /// The span-free kernel.
    pub fn to_cpu_kernel(&self) -> contract::CpuKernel {
        contract::CpuKernel { path: path_text(&self.path), dtypes: self.selection().iter().map(SDTypeVar::to_var).collect() }
    }
}

/// A kernel declaration with spans.
#[derive(Clone, Debug)]
pub struct SKernel {
    /// From `kernel` to the closing parenthesis.
    pub span: SpanRange,
    /// Source language, from the `wgsl`/`cuda` key.
    pub lang: KernelLang,
    /// The path literal.
    pub path: syn::LitStr,
    /// `entry = "..."`, if written.
    pub entry: Option<syn::LitStr>,
    /// The descriptor's slots, in binding order.
    pub bindings: Vec<SBinding>,
    /// The `bindings` keyword, if written.
    pub bindings_span: Option<SpanRange>,
    /// `threads = expr`: the number of invocations (along x of a 2-D or 3-D launch).
    pub threads: Option<SExpr>,
    /// `threads = (x, y[, z])`: the invocations along y (and z); empty for a 1-D launch.
    pub threads_yz: Vec<SExpr>,
    /// `block = n`: CUDA threads per block (along x of `block = (x, y[, z])`).
    pub block: Option<Spanned<u32>>,
    /// `block = (x, y[, z])`: CUDA threads per block along y (and z); empty: 1.
    pub block_yz: Vec<Spanned<u32>>,
    /// `dtypes(T: f32 | f16)`: the members served (empty: every member), with the key's span.
    pub dtypes: Option<(SpanRange, Vec<SDTypeVar>)>,
    /// `limits(max_compute_invocations_per_workgroup = 1024, ...)`: the WebGPU limits above the
    /// defaults a WGSL kernel's workgroup needs (empty: the defaults).
    pub limits: Vec<SLimit>,
}

impl SKernel {
    /// The selection's variables (empty: every member).
    pub fn selection(&self) -> &[SDTypeVar] {
        self.dtypes.as_ref().map(|(_, s)| s.as_slice()).unwrap_or_default()
    }
}

/// One declared WebGPU limit of a WGSL kernel (`max_compute_workgroup_size_x = 512`).
#[derive(Clone, Debug)]
pub struct SLimit {
    /// The limit's name, as `wgpu::Limits` spells it.
    pub name: syn::Ident,
    /// The value the kernel needs.
    pub value: Spanned<u32>,
}

/// One descriptor slot with spans.
#[derive(Clone, Debug)]
pub enum SBinding {
    /// `name: read` or `name: read_write`, optionally `as global`.
    Buffer {
        /// The tensor's name.
        name: syn::Ident,
        /// The access mode, spanning its keyword.
        access: Spanned<Access>,
        /// `as global`: the kernel's name for the buffer when it differs from the tensor's.
        global: Option<syn::Ident>,
    },
    /// `uniform(fields...)`.
    Uniform {
        /// From `uniform` to the closing parenthesis.
        span: SpanRange,
        /// Dim symbols and param names, in binding order.
        fields: Vec<syn::Ident>,
    },
}

fn path_text(p: &syn::Path) -> String {
    let mut s = String::new();
    if p.leading_colon.is_some() {
        s.push_str("::");
    }
    let segs: Vec<String> = p.segments.iter().map(|seg| seg.ident.to_string()).collect();
    s.push_str(&segs.join("::"));
    s
}

impl OpAttr {
    /// The span-free contract, defaults applied. `None` when a required key is missing (the
    /// checker has reported it then).
    pub fn to_contract(&self) -> Option<contract::Contract> {
        let sig = self.signature.as_ref().filter(|s| s.gaps.none())?;
        let signature = contract::Signature {
            args: sig
                .args
                .iter()
                .map(|a| match a {
                    SArg::Tensor(t) => Some(contract::Arg::Tensor(t.to_sig())),
                    SArg::Param(p) => Some(contract::Arg::Param(contract::ParamSig {
                        name: p.name.to_string(),
                        dtype: p.dtype.value,
                        var: p.var.as_ref().map(|v| v.to_string()),
                    })),
                    SArg::Broken(_) => None,
                })
                .collect::<Option<Vec<_>>>()?,
            constraints: sig.int_constraints().map(SConstraint::to_constraint).collect(),
            outputs: sig.outputs.iter().map(STensor::to_sig).collect(),
            shape_class: match &self.output {
                None | Some(SShapeClass::Static(_)) => contract::ShapeClass::Static,
                Some(SShapeClass::Bounded(_, e)) => contract::ShapeClass::Bounded(e.to_expr()),
                Some(SShapeClass::Dynamic(_)) => contract::ShapeClass::Dynamic,
            },
            float_constraints: sig.float_constraints().map(SConstraint::to_float_constraint).collect::<Option<Vec<_>>>()?,
            dtype_vars: sig.vars.iter().map(SDTypeVar::to_var).collect(),
        };
        let backward = match self.backward.as_ref()? {
            SBackward::None(_) => contract::Backward::None,
            SBackward::Composite { graph, .. } => contract::Backward::Composite { graph: graph.as_ref().map(path_text) },
            SBackward::Declared { vjp, jvp, vjp_kernels, vjp_cpu, .. } => contract::Backward::Declared {
                vjp: vjp.as_ref().map(path_text),
                jvp: jvp.as_ref().map(|(_, v)| v.iter().map(path_text).collect()).unwrap_or_default(),
                vjp_kernels: vjp_kernels.iter().map(SKernel::to_kernel).collect(),
                vjp_cpu: vjp_cpu.iter().map(SCpuKernel::to_cpu_kernel).collect(),
            },
        };
        Some(contract::Contract {
            name: self.name.as_ref()?.value.clone(),
            version: self.version.as_ref()?.value,
            signature,
            category: self.category.as_ref()?.value,
            tolerance: self.tolerance.as_ref()?.value,
            backward,
            subgradient: self.subgradient.as_ref().map(|s| s.value.clone()),
            nan: self.nan.as_ref().map(|n| n.value),
            cpu: self.cpu.first().map(|k| path_text(&k.path)),
            cpu_dtypes: self.cpu.first().map(|k| k.selection().iter().map(SDTypeVar::to_var).collect()).unwrap_or_default(),
            cpu_more: self.cpu.iter().skip(1).map(SCpuKernel::to_cpu_kernel).collect(),
            kernels: self.kernels.iter().map(SKernel::to_kernel).collect(),
            license: self.license.as_ref().map(|l| l.value.clone()),
            visibility: self.visibility.as_ref().map(|v| v.value).unwrap_or(Visibility::Private),
            signed_zero: self.signed_zero.as_ref().map(|s| s.value).unwrap_or_default(),
            domain: self.domain.iter().map(SDomain::to_domain).collect(),
            magnitude: self.magnitude.iter().map(SMagnitude::to_magnitude).collect(),
            broadcast: self.broadcast.as_ref().map(|b| b.value).unwrap_or_default(),
        })
    }
}

impl STensor {
    /// The span-free tensor signature.
    pub fn to_sig(&self) -> contract::TensorSig {
        contract::TensorSig {
            name: self.name.to_string(),
            dtype: self.dtype.value,
            dims: self.dims.iter().map(SExpr::to_expr).collect(),
            var: self.var.as_ref().map(|v| v.to_string()),
        }
    }
}

impl SKernel {
    /// The span-free kernel; a missing entry is empty and missing `threads` is `0`.
    pub fn to_kernel(&self) -> contract::Kernel {
        contract::Kernel {
            lang: self.lang,
            path: self.path.value(),
            entry: self.entry.as_ref().map(|e| e.value()).unwrap_or_default(),
            bindings: self
                .bindings
                .iter()
                .map(|b| match b {
                    SBinding::Buffer { name, access, global } => contract::Binding::Buffer {
                        name: name.to_string(),
                        access: access.value,
                        global: global.as_ref().map(|g| g.to_string()),
                    },
                    SBinding::Uniform { fields, .. } => {
                        contract::Binding::Uniform { fields: fields.iter().map(|f| f.to_string()).collect() }
                    }
                })
                .collect(),
            threads: self.threads.as_ref().map(SExpr::to_expr).unwrap_or(contract::Expr::Lit(0)),
            threads_yz: self.threads_yz.iter().map(SExpr::to_expr).collect(),
            block: self.block.as_ref().map(|b| b.value),
            block_yz: self.block_yz.iter().map(|b| b.value).collect(),
            dtypes: self.dtypes.iter().flat_map(|(_, sel)| sel.iter().map(SDTypeVar::to_var)).collect(),
        }
    }
}
