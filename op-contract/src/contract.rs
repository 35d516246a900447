//! The span-free contract of an op: what the macro checked, what the runtime loads, and what
//! the canonical encoding hashes. Owns the plain data model and integer evaluation of its
//! expressions; it must not know about syntax or spans (see `model` for those).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// An op's whole contract, as declared in `#[op(...)]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Contract {
    /// Namespaced name, e.g. `user/example/windowed_median`.
    pub name: String,
    /// Contract version; changed content needs a new version.
    pub version: u32,
    /// Inputs, parameters, constraints and outputs.
    pub signature: Signature,
    /// Semantic category (what kind of arithmetic the op does).
    pub category: Category,
    /// How far a kernel may deviate from the reference.
    pub tolerance: Tolerance,
    /// How gradients flow through the op.
    pub backward: Backward,
    /// How the op is differentiated at kinks (required for kinked categories).
    pub subgradient: Option<String>,
    /// Declared NaN behaviour (what a NaN input does to the outputs). Conformance tries NaN
    /// inputs for every float op whose domain admits them; a declared policy admits them.
    pub nan: Option<NanPolicy>,
    /// Path of an optional fast CPU kernel with the reference's signature.
    pub cpu: Option<String>,
    /// The members of the dtype variables the `cpu` kernel serves (`cpu(path, dtypes(T: f32))`);
    /// empty: every member. Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_dtypes: Vec<DTypeVar>,
    /// Further `cpu(path, dtypes(...))` kernels after the first (`cpu`, `cpu_dtypes`), each
    /// serving other instances of a dtype-generic op; no two serve one instance. Absent from
    /// the JSON when empty, so an op with one `cpu` kernel keeps its encoding (and identity).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_more: Vec<CpuKernel>,
    /// GPU kernels with their binding descriptors.
    pub kernels: Vec<Kernel>,
    /// SPDX licence expression.
    pub license: Option<String>,
    /// Who may see the op.
    pub visibility: Visibility,
    /// Whether the sign of a zero result is part of the result (`exact` compares it; `ignore`
    /// compares by IEEE equality, with NaN equal to NaN). Absent from the JSON when `exact`, so
    /// contracts that do not declare it keep their encoding (and identity).
    #[serde(default, skip_serializing_if = "SignedZero::is_exact")]
    pub signed_zero: SignedZero,
    /// Declared input domains (`domain(x > 0)`): the values of a float tensor input the op is
    /// defined on. Conformance and gradcheck sample only inside them. Absent from the JSON when
    /// empty, so contracts without one keep their encoding (and identity).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub domain: Vec<Domain>,
    /// Declared magnitudes (`magnitude(x: 1e-3..30)`): the range of `|value|` a float tensor
    /// input is meant for. Gradcheck draws that input's values there (log-uniform, both signs,
    /// inside its domain) instead of its default ladder; conformance ignores it (its edge cases
    /// stay). Absent from the JSON when empty, so contracts without one keep their encoding
    /// (and identity).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub magnitude: Vec<Magnitude>,
    /// How operands of different shapes combine (`broadcast = numpy`): the signature then
    /// describes the op on its operands flattened to one length `n`, and a call may pass any
    /// shapes that broadcast together. Absent from the JSON when `none`, so contracts that do not
    /// declare it keep their encoding (and identity).
    #[serde(default, skip_serializing_if = "Broadcast::is_none")]
    pub broadcast: Broadcast,
}

impl Contract {
    /// `name@version`.
    pub fn id(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }

    /// The declared domain of the tensor input `input`, if any.
    pub fn domain_of(&self, input: &str) -> Option<&Domain> {
        self.domain.iter().find(|d| d.input == input)
    }

    /// The declared magnitude range of the tensor input `input`, if any.
    pub fn magnitude_of(&self, input: &str) -> Option<&Magnitude> {
        self.magnitude.iter().find(|m| m.input == input)
    }

    /// Whether NaN values are in the contract for the tensor input `input`: always unless the
    /// input has a declared domain (IEEE comparisons exclude NaN from every interval), and
    /// whenever the op declares a NaN policy (a declaration about NaN inputs).
    pub fn admits_nan(&self, input: &str) -> bool {
        self.nan.is_some() || self.domain_of(input).is_none()
    }
}

/// The shape signature: arguments in declaration order, outputs, constraints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// Tensor inputs and scalar parameters, in the order the reference takes them.
    pub args: Vec<Arg>,
    /// Every integer `where` constraint (over dims and integer parameters), in declaration order.
    pub constraints: Vec<Constraint>,
    /// Outputs with their dim expressions.
    pub outputs: Vec<TensorSig>,
    /// Whether output sizes are known before running.
    pub shape_class: ShapeClass,
    /// Every `where` constraint over float parameters (`lo <= hi`, `0 <= p <= 1`), in
    /// declaration order. Absent from the JSON when empty, so contracts without one keep the
    /// encoding (and identity) they had before float constraints existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub float_constraints: Vec<FloatConstraint>,
    /// The dtype variables (`signature<T: f32 | f64>(...)`), each with its set of members, in
    /// declaration order. A contract with variables is one instance of a dtype-generic op: every
    /// tensor or parameter typed by a variable carries the variable's name and, as its `dtype`,
    /// the member this instance binds (the first member of each set in the declared contract;
    /// see `crate::generic`). Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dtype_vars: Vec<DTypeVar>,
}

impl Signature {
    /// Tensor inputs in order.
    pub fn inputs(&self) -> impl Iterator<Item = &TensorSig> {
        self.args.iter().filter_map(|a| match a {
            Arg::Tensor(t) => Some(t),
            Arg::Param(_) => None,
        })
    }
    /// Scalar parameters in order.
    pub fn params(&self) -> impl Iterator<Item = &ParamSig> {
        self.args.iter().filter_map(|a| match a {
            Arg::Param(p) => Some(p),
            Arg::Tensor(_) => None,
        })
    }
    /// Tensor inputs of a float dtype: the ones gradients flow to.
    pub fn differentiable_inputs(&self) -> impl Iterator<Item = &TensorSig> {
        self.inputs().filter(|t| t.dtype.is_float())
    }
    /// The first float constraint that `env` (float parameter values by name) violates, if any.
    /// A NaN value violates every constraint that mentions it; a name `env` does not know
    /// violates the constraint too (the call cannot be checked, so it is refused).
    pub fn violated_float_constraint(&self, env: &dyn Fn(&str) -> Option<f64>) -> Option<&FloatConstraint> {
        self.float_constraints.iter().find(|c| c.holds(env) != Some(true))
    }
    /// Symbols bound by input dims (a bare symbol in some input's dim list), in first-seen order.
    /// A bare dim named after an integer parameter is that parameter (bound by it and checked
    /// against it), not a dim symbol: a declaration cannot name a parameter like a dim symbol,
    /// but a derived VJP op can, where an output dim of the op is a parameter (`unfold`'s
    /// `T[(n - w) / s + 1, w]` makes its cotangent an input with a dim `w`).
    pub fn dim_symbols(&self) -> Vec<String> {
        let int_params: Vec<&str> = self.params().filter(|p| p.dtype.is_int()).map(|p| p.name.as_str()).collect();
        let mut out: Vec<String> = Vec::new();
        for t in self.inputs() {
            for d in &t.dims {
                if let Expr::Sym(s) = d {
                    if !out.contains(s) && !int_params.contains(&s.as_str()) {
                        out.push(s.clone());
                    }
                }
            }
        }
        out
    }
}

/// A dtype variable and its members (`T: f16 | f32` in `signature<T: f16 | f32>(...)`); in a
/// `dtypes(...)` clause, the members of a declared variable that a kernel serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DTypeVar {
    /// The variable's name.
    pub name: String,
    /// Its members, in declaration order.
    pub members: Vec<DType>,
}

/// One argument of the signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Arg {
    /// A tensor input, passed to the reference as a slice.
    Tensor(TensorSig),
    /// A scalar parameter, passed by value.
    Param(ParamSig),
}

impl Arg {
    /// The argument's name.
    pub fn name(&self) -> &str {
        match self {
            Arg::Tensor(t) => &t.name,
            Arg::Param(p) => &p.name,
        }
    }
}

/// A tensor: name, element type and dims (row-major, contiguous).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorSig {
    /// The tensor's name (unnamed outputs get `out`, or `out0`, `out1`, ...).
    pub name: String,
    /// Element type (for a variable-typed tensor: the member this instance binds).
    pub dtype: DType,
    /// Dim expressions, outermost first.
    pub dims: Vec<Expr>,
    /// The dtype variable typing the tensor (`x: T[n]`), if any. Absent from the JSON when
    /// `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub var: Option<String>,
}

/// A scalar parameter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamSig {
    /// The parameter's name.
    pub name: String,
    /// Scalar type (for a variable-typed parameter: the member this instance binds).
    pub dtype: DType,
    /// The dtype variable typing the parameter (`alpha: T`), if any. Absent from the JSON
    /// when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub var: Option<String>,
}

/// A comparison chain `e0 op0 e1 op1 e2 ...`, e.g. `1 <= w <= 31`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Constraint {
    /// The compared expressions, `e0, e1, ...`.
    pub terms: Vec<Expr>,
    /// The operators between consecutive terms (one fewer than `terms`).
    pub ops: Vec<CmpOp>,
}

impl Constraint {
    /// Evaluates the chain; `None` when a symbol is missing or arithmetic fails.
    pub fn holds(&self, env: &dyn Fn(&str) -> Option<i128>) -> Option<bool> {
        let mut prev = self.terms.first()?.eval(env)?;
        for (op, t) in self.ops.iter().zip(&self.terms[1..]) {
            let next = t.eval(env)?;
            if !op.apply(prev, next) {
                return Some(false);
            }
            prev = next;
        }
        Some(true)
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.terms[0])?;
        for (op, t) in self.ops.iter().zip(&self.terms[1..]) {
            write!(f, " {op} {t}")?;
        }
        Ok(())
    }
}

/// A comparison chain over float parameters and literals, e.g. `0 <= p <= 1` or `lo <= hi`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloatConstraint {
    /// The compared terms.
    pub terms: Vec<FloatTerm>,
    /// The operators between consecutive terms (one fewer than `terms`).
    pub ops: Vec<CmpOp>,
}

/// One term of a float constraint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FloatTerm {
    /// A float parameter, by name.
    Param(String),
    /// A literal (integer literals are converted exactly to f64).
    Lit(FloatLit),
}

/// A finite f64 literal compared by its bits, so contracts stay `Eq`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FloatLit(pub f64);

impl PartialEq for FloatLit {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for FloatLit {}

impl FloatTerm {
    /// The term's value: the parameter's from `env`, or the literal.
    pub fn value(&self, env: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
        match self {
            FloatTerm::Param(p) => env(p),
            FloatTerm::Lit(l) => Some(l.0),
        }
    }
}

impl FloatConstraint {
    /// Evaluates the chain in IEEE arithmetic (a NaN makes a comparison false); `None` when
    /// `env` lacks a parameter.
    pub fn holds(&self, env: &dyn Fn(&str) -> Option<f64>) -> Option<bool> {
        let mut prev = self.terms.first()?.value(env)?;
        for (op, t) in self.ops.iter().zip(self.terms.get(1..).unwrap_or_default()) {
            let next = t.value(env)?;
            if !op.apply_f64(prev, next) {
                return Some(false);
            }
            prev = next;
        }
        Some(true)
    }
}

impl fmt::Display for FloatTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FloatTerm::Param(p) => f.write_str(p),
            FloatTerm::Lit(l) => write!(f, "{:?}", l.0),
        }
    }
}

impl fmt::Display for FloatConstraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(first) = self.terms.first() else { return Ok(()) };
        write!(f, "{first}")?;
        for (op, t) in self.ops.iter().zip(&self.terms[1..]) {
            write!(f, " {op} {t}")?;
        }
        Ok(())
    }
}

/// Comparison operators of constraints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CmpOp {
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl CmpOp {
    /// Applies the comparison.
    pub fn apply(self, a: i128, b: i128) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }

    /// Applies the comparison to floats (IEEE: every comparison with NaN is false, `!=` too,
    /// so a NaN parameter never satisfies a constraint).
    pub fn apply_f64(self, a: f64, b: f64) -> bool {
        if a.is_nan() || b.is_nan() {
            return false;
        }
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        })
    }
}

/// The deepest expression (`Expr::depth`) a contract may hold; `#[op]` refuses deeper ones.
/// Each level costs at most two levels of JSON nesting and a contract puts at most six around
/// an expression, so every contract the macro accepts stays below serde_json's default
/// recursion limit (128) and reads back (`tests::deepest_contract_round_trips`: about 60 levels
/// would be the breaking point).
pub const MAX_EXPR_DEPTH: usize = 32;

/// Integer expressions over dim symbols and integer parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Expr {
    /// A dim symbol or integer parameter.
    Sym(String),
    /// An integer literal.
    Lit(i64),
    /// Negation `-e`.
    Neg(Box<Expr>),
    /// A binary operation `a op b`.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// `min(a, b)`.
    Min(Box<Expr>, Box<Expr>),
    /// `max(a, b)`.
    Max(Box<Expr>, Box<Expr>),
}

/// Binary arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`, truncating toward zero.
    Div,
    /// `%`, with the sign of the dividend.
    Rem,
}

impl BinOp {
    /// Applies the operator; division and remainder truncate toward zero (as in Rust and
    /// WGSL); division by zero or overflow gives `None`.
    pub fn apply(self, a: i128, b: i128) -> Option<i128> {
        match self {
            BinOp::Add => a.checked_add(b),
            BinOp::Sub => a.checked_sub(b),
            BinOp::Mul => a.checked_mul(b),
            BinOp::Div => a.checked_div(b),
            BinOp::Rem => a.checked_rem(b),
        }
    }
}

impl Expr {
    /// Evaluates with `env` for symbols. Division and remainder truncate toward zero (as in
    /// Rust and WGSL); division by zero or overflow gives `None`.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i128>) -> Option<i128> {
        Some(match self {
            Expr::Sym(s) => env(s)?,
            Expr::Lit(v) => *v as i128,
            Expr::Neg(e) => e.eval(env)?.checked_neg()?,
            Expr::Bin(op, a, b) => op.apply(a.eval(env)?, b.eval(env)?)?,
            Expr::Min(a, b) => a.eval(env)?.min(b.eval(env)?),
            Expr::Max(a, b) => a.eval(env)?.max(b.eval(env)?),
        })
    }

    /// Nesting depth: 1 for a symbol or literal, one more per operator above it.
    pub fn depth(&self) -> usize {
        match self {
            Expr::Sym(_) | Expr::Lit(_) => 1,
            Expr::Neg(e) => 1 + e.depth(),
            Expr::Bin(_, a, b) | Expr::Min(a, b) | Expr::Max(a, b) => 1 + a.depth().max(b.depth()),
        }
    }

    /// Evaluates with a map environment.
    pub fn eval_map(&self, env: &BTreeMap<String, i128>) -> Option<i128> {
        self.eval(&|s| env.get(s).copied())
    }

    /// Every symbol the expression mentions, in order, with repeats.
    pub fn symbols<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Sym(s) => out.push(s),
            Expr::Lit(_) => {}
            Expr::Neg(e) => e.symbols(out),
            Expr::Bin(_, a, b) | Expr::Min(a, b) | Expr::Max(a, b) => {
                a.symbols(out);
                b.symbols(out);
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn prec(e: &Expr) -> u8 {
            match e {
                Expr::Bin(BinOp::Add | BinOp::Sub, ..) => 1,
                Expr::Bin(..) => 2,
                _ => 3,
            }
        }
        match self {
            Expr::Sym(s) => f.write_str(s),
            Expr::Lit(v) => write!(f, "{v}"),
            Expr::Neg(e) if prec(e) < 3 => write!(f, "-({e})"),
            Expr::Neg(e) => write!(f, "-{e}"),
            Expr::Min(a, b) => write!(f, "min({a}, {b})"),
            Expr::Max(a, b) => write!(f, "max({a}, {b})"),
            Expr::Bin(op, a, b) => {
                let p = prec(self);
                let sym = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::Div => "/",
                    BinOp::Rem => "%",
                };
                if prec(a) < p {
                    write!(f, "({a})")?;
                } else {
                    write!(f, "{a}")?;
                }
                write!(f, " {sym} ")?;
                // Left-associative: the right operand needs parentheses at equal precedence.
                if prec(b) <= p {
                    write!(f, "({b})")
                } else {
                    write!(f, "{b}")
                }
            }
        }
    }
}

/// Element types of the design's dtype list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[allow(non_camel_case_types, missing_docs)]
pub enum DType {
    bool,
    u8,
    i8,
    u16,
    i16,
    u32,
    i32,
    u64,
    i64,
    f16,
    bf16,
    f32,
    f64,
}

impl DType {
    /// Every supported dtype.
    pub const ALL: [DType; 13] = [
        DType::bool,
        DType::u8,
        DType::i8,
        DType::u16,
        DType::i16,
        DType::u32,
        DType::i32,
        DType::u64,
        DType::i64,
        DType::f16,
        DType::bf16,
        DType::f32,
        DType::f64,
    ];

    /// The dtype's name as written in signatures.
    pub fn name(self) -> &'static str {
        match self {
            DType::bool => "bool",
            DType::u8 => "u8",
            DType::i8 => "i8",
            DType::u16 => "u16",
            DType::i16 => "i16",
            DType::u32 => "u32",
            DType::i32 => "i32",
            DType::u64 => "u64",
            DType::i64 => "i64",
            DType::f16 => "f16",
            DType::bf16 => "bf16",
            DType::f32 => "f32",
            DType::f64 => "f64",
        }
    }

    /// Parses a dtype name.
    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }

    /// Whether the dtype is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::f16 | DType::bf16 | DType::f32 | DType::f64)
    }

    /// Whether the dtype is an integer type.
    pub fn is_int(self) -> bool {
        !self.is_float() && self != DType::bool
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::bool | DType::u8 | DType::i8 => 1,
            DType::u16 | DType::i16 | DType::f16 | DType::bf16 => 2,
            DType::u32 | DType::i32 | DType::f32 => 4,
            DType::u64 | DType::i64 | DType::f64 => 8,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Packed sub-byte and fp8 dtype names, refused with a reason.
pub fn refused_dtype(s: &str) -> Option<&'static str> {
    const PACKED: [&str; 8] = ["u1", "u2", "u4", "i4", "s1", "s2", "s3", "s4"];
    if PACKED.contains(&s) || s.starts_with("f4e") || s.starts_with("f6e") {
        return Some("packed sub-byte types would be reinterpreted as raw bytes");
    }
    if s.starts_with("f8e") || s.starts_with("float8") {
        return Some("fp8 types would be reinterpreted as raw bytes");
    }
    None
}

/// Output-shape class.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ShapeClass {
    /// Every output dim is an expression of input dims and params.
    Static,
    /// Data-dependent output dims (free symbols) each at most the bound.
    Bounded(Expr),
    /// Data-dependent output dims with no bound.
    Dynamic,
}

/// Semantic categories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Compares, selects and permutes values without arithmetic; must be `exact`.
    Selection,
    /// Integer arithmetic; must be `exact`.
    Integer,
    /// Float arithmetic per element; bounded in ulps.
    Elementwise,
    /// Transcendental functions per element (`exp`, `log`, `tanh`, ...); bounded in ulps.
    Transcendental,
    /// Accumulates along an axis; error grows with length (`accum`).
    Reduction,
    /// Sums of products (matmul, convolution); error grows with length (`accum`).
    Contraction,
    /// Deliberately approximate; the only category allowed `loose`.
    Approximate,
}

impl Category {
    /// Every category with its keyword.
    pub const ALL: [(Category, &'static str); 7] = [
        (Category::Selection, "selection"),
        (Category::Integer, "integer"),
        (Category::Elementwise, "elementwise"),
        (Category::Transcendental, "transcendental"),
        (Category::Reduction, "reduction"),
        (Category::Contraction, "contraction"),
        (Category::Approximate, "approximate"),
    ];

    /// The keyword.
    pub fn name(self) -> &'static str {
        Category::ALL.iter().find(|(c, _)| *c == self).map(|(_, n)| *n).unwrap_or("?")
    }

    /// Whether the category has kinks (points without a derivative).
    pub fn has_kinks(self) -> bool {
        matches!(self, Category::Selection)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Tolerance classes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tolerance {
    /// Bit-identical, sign of zero included.
    Exact,
    /// Within k units in the last place.
    Ulp(u32),
    /// Error bound `k * len * eps * sum|terms|`, growing with reduction length.
    Accum(u32),
    /// `|a - b| <= atol + rtol * |b|`.
    Loose {
        /// Relative tolerance, scaled by `|b|`.
        rtol: f64,
        /// Absolute tolerance.
        atol: f64,
    },
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Exact => f.write_str("exact"),
            Tolerance::Ulp(k) => write!(f, "ulp({k})"),
            Tolerance::Accum(k) => write!(f, "accum({k})"),
            Tolerance::Loose { rtol, atol } => write!(f, "loose({rtol:e}, {atol:e})"),
        }
    }
}

/// How gradients flow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Backward {
    /// Declared non-differentiable.
    None,
    /// A composition of registered differentiable ops; `graph` names the builder function.
    Composite {
        /// Path of the graph builder function, if one was named.
        graph: Option<String>,
    },
    /// Declared rules: a VJP and/or one JVP rule per differentiable input.
    Declared {
        /// Path of the VJP rule, if declared.
        vjp: Option<String>,
        /// Paths of the JVP rules, one per differentiable input; empty if none declared.
        jvp: Vec<String>,
        /// GPU kernels of the VJP (`vjp(rule, kernel(...), ...)`): each runs the op's VJP op
        /// ([`Contract::vjp_contract`]), binding the op's inputs, one cotangent `d_<output>` per
        /// output and one gradient `d_<input>` per float input. Absent from the JSON when
        /// empty, so contracts without one keep their encoding (and identity).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        vjp_kernels: Vec<Kernel>,
        /// `cpu` kernels of the VJP (`vjp(rule, cpu(f, dtypes(...)))`): functions with the
        /// rule's signature, run as the VJP op's `cpu` kernels, at the instances each serves.
        /// Absent from the JSON when empty, so contracts without one keep their identity.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        vjp_cpu: Vec<CpuKernel>,
    },
}

impl Backward {
    /// Whether gradients can flow through the op.
    pub fn is_differentiable(&self) -> bool {
        !matches!(self, Backward::None)
    }
}

/// Declared NaN behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NanPolicy {
    /// A NaN input makes the affected outputs NaN.
    Propagate,
    /// NaN is a value like any other, ordered by IEEE 754 total order (`-NaN` first, `+NaN`
    /// last): a `selection` op moves it where the order puts it, so it reaches an output only
    /// where it is selected (a median of a row holding one NaN is not NaN), and every NaN of
    /// an output is, bit for bit, a NaN of an input (never one the op made up).
    Ordered,
}

/// Whether the sign of a zero result is part of an op's result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignedZero {
    /// `+0` and `-0` are different results (the default; `exact` compares bits).
    #[default]
    Exact,
    /// `+0 == -0`: results are compared by IEEE equality, NaN equal to NaN (`signed_zero =
    /// ignore`), e.g. for a clamp built on WGSL's `min`/`max`, which may return either zero.
    Ignore,
}

impl SignedZero {
    /// Whether this is the default, [`SignedZero::Exact`].
    pub fn is_exact(&self) -> bool {
        *self == SignedZero::Exact
    }
}

/// How an op's tensor operands of different shapes combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Broadcast {
    /// Operands have the shapes the signature gives them (the default).
    #[default]
    None,
    /// numpy's rules (`broadcast = numpy`): shapes are aligned at their last axis, and along each
    /// axis every operand has the same length or 1 (or lacks the axis); the outputs have the
    /// broadcast shape. Declared on ops whose every tensor is `[n]` for one symbol `n`: the op is
    /// elementwise, so it runs on the operands expanded to the broadcast shape and flattened,
    /// and the gradient of an expanded operand is summed over the axes it was expanded along.
    Numpy,
}

impl Broadcast {
    /// Whether this is the default, [`Broadcast::None`].
    pub fn is_none(&self) -> bool {
        *self == Broadcast::None
    }
}

/// The numpy broadcast of `shapes`: aligned at their last axis, each axis the one length other
/// than 1 among the shapes that have it (1 if none). `Err((i, j))` names two shapes (indices
/// into `shapes`) that disagree on an axis where neither is 1.
pub fn broadcast_shapes(shapes: &[&[usize]]) -> Result<Vec<usize>, (usize, usize)> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    let mut owner = vec![None::<usize>; rank];
    for (i, s) in shapes.iter().enumerate() {
        for (k, &d) in s.iter().enumerate() {
            let axis = rank - s.len() + k;
            if d == 1 {
                continue;
            }
            match owner[axis] {
                Some(j) if out[axis] != d => return Err((j, i)),
                Some(_) => {}
                None => {
                    out[axis] = d;
                    owner[axis] = Some(i);
                }
            }
        }
    }
    Ok(out)
}

/// One end of a [`Domain`] interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DomainBound {
    /// The bound (finite).
    pub value: f64,
    /// Whether the bound itself is in the domain (`<=`, `>=`) or not (`<`, `>`).
    pub inclusive: bool,
}

/// The declared magnitude range of one float tensor input (`magnitude(x: 1e-3..30)`): gradcheck
/// draws its values with `lo <= |v| <= hi` (log-uniform, both signs, inside the domain).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Magnitude {
    /// The tensor input's name.
    pub input: String,
    /// The smallest magnitude (finite, above 0).
    pub lo: f64,
    /// The largest magnitude (finite, at least `lo`).
    pub hi: f64,
}

impl Magnitude {
    /// Whether the range is well formed: `0 < lo <= hi`, both finite.
    pub fn is_valid(&self) -> bool {
        self.lo > 0.0 && self.lo <= self.hi && self.hi.is_finite()
    }

    /// Whether some value of `domain` (every value where `None`) has a magnitude in the range.
    pub fn meets(&self, domain: Option<&Domain>) -> bool {
        let Some(d) = domain else { return true };
        let lo = d.lo.map_or(f64::NEG_INFINITY, |b| b.value);
        let hi = d.hi.map_or(f64::INFINITY, |b| b.value);
        // The range is `[-hi, -lo]` and `[lo, hi]`: each meets the domain's interval where
        // their intersection is not empty (a bound the domain excludes counts only inside).
        [(-self.hi, -self.lo), (self.lo, self.hi)].iter().any(|&(a, b)| {
            let (x, y) = (a.max(lo), b.min(hi));
            x < y || (x == y && d.contains(x))
        })
    }
}

impl fmt::Display for Magnitude {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:e}..{:e}", self.input, self.lo, self.hi)
    }
}

/// The declared domain of one float tensor input: every element lies in an interval, compared
/// in IEEE arithmetic (so NaN lies outside every domain), e.g. `domain(x > 0)` for `log`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    /// The tensor input's name.
    pub input: String,
    /// The lower end, if bounded below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lo: Option<DomainBound>,
    /// The upper end, if bounded above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hi: Option<DomainBound>,
}

impl Domain {
    /// Whether `v` lies in the domain (never for NaN).
    pub fn contains(&self, v: f64) -> bool {
        let above = |b: &DomainBound| if b.inclusive { v >= b.value } else { v > b.value };
        let below = |b: &DomainBound| if b.inclusive { v <= b.value } else { v < b.value };
        !v.is_nan() && self.lo.as_ref().is_none_or(above) && self.hi.as_ref().is_none_or(below)
    }

    /// Whether some value lies in the domain (an empty interval is a contract defect).
    pub fn is_empty(&self) -> bool {
        match (&self.lo, &self.hi) {
            (Some(l), Some(h)) => l.value > h.value || (l.value == h.value && !(l.inclusive && h.inclusive)),
            _ => false,
        }
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = |b: &DomainBound| if b.inclusive { "<=" } else { "<" };
        match (&self.lo, &self.hi) {
            (Some(l), Some(h)) => write!(f, "{:?} {} {} {} {:?}", l.value, op(l), self.input, op(h), h.value),
            (Some(l), None) => write!(f, "{} {} {:?}", self.input, if l.inclusive { ">=" } else { ">" }, l.value),
            (None, Some(h)) => write!(f, "{} {} {:?}", self.input, op(h), h.value),
            (None, None) => write!(f, "{} unrestricted", self.input),
        }
    }
}

/// Visibility levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Not shared (the default); needs no licence.
    Private,
    /// Shared within the workspace; needs a licence.
    Workspace,
    /// Shared publicly; needs a licence and a doc comment.
    Public,
}

/// Kernel languages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelLang {
    /// A WGSL compute shader, run through wgpu.
    Wgsl,
    /// A CUDA C++ kernel, compiled with NVRTC.
    Cuda,
}

impl KernelLang {
    /// Every kernel language.
    pub const ALL: [KernelLang; 2] = [KernelLang::Wgsl, KernelLang::Cuda];

    /// The language whose declaration key is `key`.
    pub fn from_name(key: &str) -> Option<KernelLang> {
        KernelLang::ALL.into_iter().find(|l| l.name() == key)
    }

    /// The declaration's key for this language (`wgsl = "..."`, `cuda = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            KernelLang::Wgsl => "wgsl",
            KernelLang::Cuda => "cuda",
        }
    }
}

/// A GPU kernel and how its buffers bind to the signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kernel {
    /// Source language.
    pub lang: KernelLang,
    /// Path relative to the declaring crate's manifest directory (or, if absent there, to the
    /// declaring source file's directory).
    pub path: String,
    /// Entry point (WGSL: the compute entry; CUDA: the `extern "C" __global__` name).
    pub entry: String,
    /// Buffers in binding order (WGSL: `@group(0) @binding(i)`; CUDA: parameter i).
    pub bindings: Vec<Binding>,
    /// Launch geometry: number of invocations (along x, for a 2-D or 3-D launch).
    pub threads: Expr,
    /// Invocations along y (and z) of a 2-D (3-D) launch, `threads = (x, y[, z])`; empty for a
    /// 1-D launch (and then absent from the JSON, so 1-D contracts are unchanged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads_yz: Vec<Expr>,
    /// CUDA threads per block (along x; WGSL takes the workgroup size from the kernel).
    pub block: Option<u32>,
    /// CUDA threads per block along y (and z), `block = (x, y[, z])`; empty: 1. Absent from the
    /// JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_yz: Vec<u32>,
    /// The members of the dtype variables this kernel serves (`dtypes(T: f32 | f16)`); empty:
    /// every member. Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dtypes: Vec<DTypeVar>,
}

/// A `cpu(path, dtypes(...))` kernel: a function with the reference's signature at the
/// instances it serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuKernel {
    /// The function's path, as written.
    pub path: String,
    /// The members of the dtype variables it serves; empty: every member.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dtypes: Vec<DTypeVar>,
}

/// One slot of the binding descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Binding {
    /// A tensor input or output buffer.
    Buffer {
        /// The tensor's name in the signature.
        name: String,
        /// How the kernel may access the buffer.
        access: Access,
        /// The kernel's own name for the buffer (WGSL global, CUDA parameter) when it differs
        /// from the tensor's (`x: read as lhs`); absent from the JSON when it does not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        global: Option<String>,
    },
    /// A uniform block (WGSL) or scalar parameters (CUDA) with these fields, each a dim or param.
    Uniform {
        /// Dim symbols and param names, in binding order.
        fields: Vec<String>,
    },
}

/// Buffer access modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Read-only (`read`).
    Read,
    /// Read and written (`read_write`).
    ReadWrite,
    /// An output the kernel adds into (`accumulate`): it starts at zero on every backend and
    /// in conformance too (no canaries inside it), so an element the kernel never adds to is
    /// zero, not a defect.
    Accumulate,
}

impl Access {
    /// The keyword as written in a binding descriptor.
    pub fn keyword(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::ReadWrite => "read_write",
            Access::Accumulate => "accumulate",
        }
    }

    /// Whether the kernel may write the buffer (`read_write` or `accumulate`).
    pub fn writes(self) -> bool {
        !matches!(self, Access::Read)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn shapes_broadcast_by_numpys_rules() {
        assert_eq!(broadcast_shapes(&[&[3, 4], &[4]]), Ok(vec![3, 4]));
        assert_eq!(broadcast_shapes(&[&[3, 1], &[1, 4]]), Ok(vec![3, 4]));
        assert_eq!(broadcast_shapes(&[&[2, 1, 5], &[3, 1], &[]]), Ok(vec![2, 3, 5]));
        assert_eq!(broadcast_shapes(&[&[0], &[1]]), Ok(vec![0]));
        assert_eq!(broadcast_shapes(&[&[3, 4], &[3]]), Err((0, 1)));
        assert_eq!(broadcast_shapes(&[&[0], &[2]]), Err((0, 1)));
        assert_eq!(broadcast_shapes(&[]), Ok(vec![]));
    }

    #[test]
    fn a_magnitude_range_meets_a_domain_on_either_side_of_zero() {
        let b = |value, inclusive| Some(DomainBound { value, inclusive });
        let d = |lo, hi| Domain { input: "x".into(), lo, hi };
        let m = |lo, hi| Magnitude { input: "x".into(), lo, hi };
        assert!(m(1e-3, 10.0).meets(None));
        assert!(m(1e-3, 10.0).meets(Some(&d(b(0.0, false), None))));
        assert!(m(1e-3, 10.0).meets(Some(&d(None, b(-5.0, true)))), "the negative side counts");
        assert!(!m(10.0, 100.0).meets(Some(&d(b(0.0, false), b(1.0, false)))));
        assert!(m(1.0, 2.0).meets(Some(&d(b(2.0, true), None))), "an inclusive end meets");
        assert!(!m(1.0, 2.0).meets(Some(&d(b(2.0, false), None))), "an exclusive end does not");
        assert!(m(1e-3, 10.0).is_valid() && !m(0.0, 1.0).is_valid() && !m(2.0, 1.0).is_valid());
        assert_eq!(m(1e-3, 30.0).to_string(), "x: 1e-3..3e1");
    }
    use super::*;

    /// A left-deep sum `n + n + ... + n` of the given depth.
    fn deep(depth: usize) -> Expr {
        let mut e = Expr::Sym("n".into());
        for _ in 1..depth {
            e = Expr::Bin(BinOp::Add, Box::new(e), Box::new(Expr::Sym("n".into())));
        }
        e
    }

    fn contract_with(e: &Expr) -> Contract {
        let t = |name: &str, dims: Vec<Expr>| TensorSig { name: name.into(), dtype: DType::f32, dims, var: None };
        Contract {
            name: "a/b".into(),
            version: 1,
            signature: Signature {
                args: vec![Arg::Tensor(t("x", vec![Expr::Sym("n".into()), e.clone()]))],
                constraints: vec![Constraint { terms: vec![e.clone(), Expr::Neg(Box::new(e.clone()))], ops: vec![CmpOp::Ge] }],
                outputs: vec![t("out", vec![e.clone()])],
                shape_class: ShapeClass::Bounded(e.clone()),
                float_constraints: vec![FloatConstraint {
                    terms: vec![FloatTerm::Lit(FloatLit(0.0)), FloatTerm::Param("p".into())],
                    ops: vec![CmpOp::Le],
                }],
                dtype_vars: vec![],
            },
            category: Category::Elementwise,
            tolerance: Tolerance::Loose { rtol: 1e-3, atol: 0.0 },
            backward: Backward::None,
            subgradient: None,
            signed_zero: Default::default(),
            domain: vec![],
            magnitude: vec![],
            broadcast: Default::default(),
            nan: None,
            cpu: None,
            cpu_dtypes: vec![],
            cpu_more: vec![],
            kernels: vec![Kernel {
                lang: KernelLang::Wgsl,
                path: "k.wgsl".into(),
                entry: "main".into(),
                bindings: vec![],
                threads: e.clone(),
                threads_yz: vec![e.clone(), e.clone()],
                block: None,
                block_yz: vec![],
                dtypes: vec![],
            }],
            license: None,
            visibility: Visibility::Private,
        }
    }

    #[test]
    fn deepest_contract_round_trips() {
        // The deepest expression the macro accepts, in every position an expression can take
        // (a constraint term holds `-e`, one level deeper: the parser counts it in the limit, so
        // `MAX_EXPR_DEPTH` there is `-` over a `MAX_EXPR_DEPTH - 1` operand).
        let e = deep(MAX_EXPR_DEPTH);
        assert_eq!(e.depth(), MAX_EXPR_DEPTH);
        let c = contract_with(&e);
        let json = serde_json::to_string(&c).expect("serialises");
        let back: Contract = serde_json::from_str(&json).expect("the deepest accepted contract reads back");
        assert_eq!(back, c);
        // The margin is real: the deepest expression that still reads back is well past the limit
        // (the constraint term `-e` is the deepest position), and a deeper one fails as expected.
        let reads_back = |d: usize| {
            let json = serde_json::to_string(&contract_with(&deep(d))).expect("serialises");
            serde_json::from_str::<Contract>(&json).is_ok()
        };
        let deepest = (1..200).take_while(|d| reads_back(*d)).last().unwrap_or(0);
        assert!(deepest >= MAX_EXPR_DEPTH + 16, "only depth {deepest} reads back");
        assert!(!reads_back(deepest + 1));
    }

    #[test]
    fn empty_float_constraints_keep_the_old_encoding() {
        let mut c = contract_with(&Expr::Sym("n".into()));
        c.signature.float_constraints.clear();
        let json = serde_json::to_string(&c).expect("serialises");
        assert!(!json.contains("float_constraints"), "{json}");
        let back: Contract = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, c);
    }

    #[test]
    fn float_constraints_evaluate_in_ieee() {
        let c = FloatConstraint {
            terms: vec![FloatTerm::Lit(FloatLit(0.0)), FloatTerm::Param("p".into()), FloatTerm::Lit(FloatLit(1.0))],
            ops: vec![CmpOp::Le, CmpOp::Le],
        };
        assert_eq!(c.to_string(), "0.0 <= p <= 1.0");
        let env = |v: f64| move |s: &str| (s == "p").then_some(v);
        assert_eq!(c.holds(&env(0.5)), Some(true));
        assert_eq!(c.holds(&env(1.5)), Some(false));
        assert_eq!(c.holds(&env(f64::NAN)), Some(false));
        assert_eq!(c.holds(&|_| None), None);
        let lo_hi = FloatConstraint { terms: vec![FloatTerm::Param("lo".into()), FloatTerm::Param("hi".into())], ops: vec![CmpOp::Le] };
        let sig = Signature {
            args: vec![],
            constraints: vec![],
            outputs: vec![],
            shape_class: ShapeClass::Static,
            float_constraints: vec![lo_hi.clone()],
            dtype_vars: vec![],
        };
        let env = |lo: f64, hi: f64| {
            move |s: &str| match s {
                "lo" => Some(lo),
                "hi" => Some(hi),
                _ => None,
            }
        };
        assert_eq!(sig.violated_float_constraint(&env(0.0, 1.0)), None);
        assert_eq!(sig.violated_float_constraint(&env(2.0, 1.0)), Some(&lo_hi));
    }
}
