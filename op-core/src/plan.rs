//! Validation plans: an op's signature compiled once at registration into slot-indexed rules,
//! so each call checks dtypes, shapes and constraints and computes output shapes without string
//! lookups. Owns validation only; it never runs an op.

use crate::error::DispatchError;
use crate::tensor::{Scalar, Shape, Tensor};
use op_contract::contract::{
    broadcast_shapes, BinOp, Broadcast, Constraint, Contract, DType, Expr, FloatConstraint, FloatTerm, ShapeClass, Signature,
};
use smallvec::SmallVec;

/// An expression over symbol slots.
#[derive(Clone, Debug)]
pub enum IExpr {
    /// The value in this symbol slot (an index into `Plan::syms`).
    Slot(usize),
    /// An integer literal.
    Lit(i128),
    /// Negation `-e`.
    Neg(Box<IExpr>),
    /// A binary operation `a op b`.
    Bin(BinOp, Box<IExpr>, Box<IExpr>),
    /// `min(a, b)`.
    Min(Box<IExpr>, Box<IExpr>),
    /// `max(a, b)`.
    Max(Box<IExpr>, Box<IExpr>),
}

impl IExpr {
    fn compile(e: &Expr, syms: &[String]) -> Option<IExpr> {
        Some(match e {
            Expr::Sym(s) => IExpr::Slot(syms.iter().position(|x| x == s)?),
            Expr::Lit(v) => IExpr::Lit(*v as i128),
            Expr::Neg(a) => IExpr::Neg(Box::new(IExpr::compile(a, syms)?)),
            Expr::Bin(op, a, b) => IExpr::Bin(*op, Box::new(IExpr::compile(a, syms)?), Box::new(IExpr::compile(b, syms)?)),
            Expr::Min(a, b) => IExpr::Min(Box::new(IExpr::compile(a, syms)?), Box::new(IExpr::compile(b, syms)?)),
            Expr::Max(a, b) => IExpr::Max(Box::new(IExpr::compile(a, syms)?), Box::new(IExpr::compile(b, syms)?)),
        })
    }

    /// Evaluates over slot values; `None` on division by zero or overflow.
    pub fn eval(&self, v: &[i128]) -> Option<i128> {
        Some(match self {
            IExpr::Slot(k) => *v.get(*k)?,
            IExpr::Lit(x) => *x,
            IExpr::Neg(a) => a.eval(v)?.checked_neg()?,
            IExpr::Bin(op, a, b) => op.apply(a.eval(v)?, b.eval(v)?)?,
            IExpr::Min(a, b) => a.eval(v)?.min(b.eval(v)?),
            IExpr::Max(a, b) => a.eval(v)?.max(b.eval(v)?),
        })
    }
}

/// How one input axis is checked.
#[derive(Clone, Debug)]
enum DimRule {
    /// Binds a symbol (`bound_by: None`: its first sight in input order) or checks it against
    /// the value the input axis `bound_by` gave it (later sights); fixed when the plan is built.
    Sym { slot: usize, bound_by: Option<(usize, usize)> },
    /// Must equal an expression of symbols bound elsewhere.
    Expr { expr: IExpr, text: String },
}

#[derive(Clone, Debug)]
struct InputPlan {
    name: String,
    dtype: DType,
    dims: Vec<DimRule>,
    dims_text: String,
}

#[derive(Clone, Debug)]
struct ParamPlan {
    name: String,
    dtype: DType,
    slot: Option<usize>,
}

#[derive(Clone, Debug)]
struct OutputPlan {
    name: String,
    dtype: DType,
    dims: Vec<(IExpr, String)>,
}

/// An output axis whose size is data-dependent (`output = bounded(..)` or `dynamic`): the
/// reference decides it, within the bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeAxis {
    /// The output index.
    pub output: usize,
    /// The axis within that output.
    pub axis: usize,
    /// The symbol's slot in `Plan::syms`.
    pub slot: usize,
}

/// What validation needs of an input: its dtype and shape.
pub trait Operand {
    /// The element type.
    fn dtype(&self) -> DType;
    /// The shape.
    fn shape(&self) -> &[usize];
}

impl Operand for &Tensor {
    fn dtype(&self) -> DType {
        Tensor::dtype(self)
    }
    fn shape(&self) -> &[usize] {
        Tensor::shape(self)
    }
}

impl Operand for (DType, &[usize]) {
    fn dtype(&self) -> DType {
        self.0
    }
    fn shape(&self) -> &[usize] {
        self.1
    }
}

/// An op's compiled validation rules.
#[derive(Clone, Debug)]
pub struct Plan {
    op: String,
    /// Symbol names: dim symbols first, then integer parameters.
    pub syms: Vec<String>,
    inputs: Vec<InputPlan>,
    params: Vec<ParamPlan>,
    constraints: Vec<(Vec<IExpr>, Constraint, String)>,
    /// `where` constraints over float parameters.
    float_constraints: Vec<FloatConstraint>,
    outputs: Vec<OutputPlan>,
    dynamic: Option<String>,
    /// The `bounded(..)` limit on data-dependent dims.
    limit: Option<(IExpr, String)>,
    /// Data-dependent output axes.
    free: Vec<FreeAxis>,
    /// Output names in order.
    pub out_names: Vec<String>,
    /// `broadcast = numpy`: inputs of any shapes that broadcast; `n` is the broadcast shape's
    /// element count and every output has the broadcast shape.
    broadcast: bool,
}

/// A validated call: symbol values and output shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    /// Values of `Plan::syms`.
    pub values: SmallVec<[i128; 4]>,
    /// Shape of each output; a data-dependent axis holds its upper bound (0 when `dynamic`).
    pub out_shapes: SmallVec<[Shape; 2]>,
    /// Data-dependent output axes (empty for `static` ops).
    pub free: Vec<FreeAxis>,
    /// Their upper bound (`bounded`), `None` when unbounded or static.
    pub free_limit: Option<usize>,
}

impl Bound {
    /// Whether some output size is decided by the data.
    pub fn is_data_dependent(&self) -> bool {
        !self.free.is_empty()
    }

    /// The value of a symbol.
    pub fn get(&self, plan: &Plan, sym: &str) -> Option<i128> {
        plan.syms.iter().position(|s| s == sym).map(|k| self.values[k])
    }
}

impl Plan {
    /// Compiles a contract's signature. Fails only for a contract the checker would reject.
    pub fn new(c: &Contract) -> Result<Plan, String> {
        let sig = &c.signature;
        let (syms, n_fixed) = symbols(sig);
        let compile = |e: &Expr| IExpr::compile(e, &syms).ok_or_else(|| format!("expression `{e}` uses an unbound symbol"));
        let inputs = input_plans(sig, &syms, &compile)?;
        let params = sig
            .params()
            .map(|p| ParamPlan { name: p.name.clone(), dtype: p.dtype, slot: syms.iter().position(|x| *x == p.name) })
            .collect();
        let mut constraints = Vec::new();
        for k in &sig.constraints {
            let terms = k.terms.iter().map(compile).collect::<Result<Vec<_>, _>>()?;
            constraints.push((terms, k.clone(), k.to_string()));
        }
        let dynamic = match &sig.shape_class {
            ShapeClass::Static => None,
            ShapeClass::Bounded(e) => Some(format!("bounded({e})")),
            ShapeClass::Dynamic => Some("dynamic".to_string()),
        };
        let (outputs, free) = output_plans(sig, &syms, n_fixed, &compile)?;
        let limit = match &sig.shape_class {
            ShapeClass::Bounded(e) => Some((compile(e)?, e.to_string())),
            _ => None,
        };
        Ok(Plan {
            op: c.id(),
            syms,
            inputs,
            params,
            constraints,
            float_constraints: sig.float_constraints.clone(),
            outputs,
            dynamic,
            limit,
            free,
            out_names: sig.outputs.iter().map(|o| o.name.clone()).collect(),
            broadcast: c.broadcast == Broadcast::Numpy,
        })
    }

    /// Number of tensor inputs.
    pub fn n_inputs(&self) -> usize {
        self.inputs.len()
    }

    /// Validates a call from its tensors, or from dtypes and shapes alone (the planner, which
    /// must not allocate): one set of rules for both. `float_as` lets gradcheck pass f64 for
    /// float inputs. Checks, in order: arity, parameter dtypes, input dtypes, ranks and dims,
    /// `where` constraints, then the output shapes (each dim non-negative, each output's element
    /// and byte count within `isize::MAX`).
    pub fn validate<S: Operand>(&self, inputs: &[S], params: &[Scalar], float_as: Option<DType>) -> Result<Bound, DispatchError> {
        self.check_arity(inputs.len(), params.len())?;
        let mut values: SmallVec<[i128; 4]> = smallvec::smallvec![0i128; self.syms.len()];
        self.bind_params(params, float_as, &mut values)?;
        self.check_float_constraints(params)?;
        let broadcast = match self.broadcast {
            true => Some(self.bind_broadcast(inputs, float_as, &mut values)?),
            false => {
                self.bind_dims(inputs, float_as, &mut values)?;
                None
            }
        };
        self.check_constraints(&values)?;
        // Data-dependent dims take their bound (`bounded`) or 0 (`dynamic`) in `out_shapes`.
        let free_limit = self.free_limit(&values)?;
        for f in &self.free {
            values[f.slot] = free_limit.unwrap_or(0) as i128;
        }
        let mut out_shapes = self.output_shapes(&values, float_as)?;
        if let Some(shape) = broadcast {
            // Every output is `[n]` with `n` the broadcast shape's element count: same bytes.
            out_shapes.iter_mut().for_each(|s| *s = Shape::from_slice(&shape));
        }
        Ok(Bound { values, out_shapes, free: self.free.clone(), free_limit })
    }

    fn check_arity(&self, inputs: usize, params: usize) -> Result<(), DispatchError> {
        if inputs != self.inputs.len() {
            return Err(DispatchError::InputCount {
                op: self.op.clone(),
                expected: self.inputs.len(),
                found: inputs,
                names: self.inputs.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", "),
            });
        }
        if params != self.params.len() {
            return Err(DispatchError::ParamCount {
                op: self.op.clone(),
                expected: self.params.len(),
                found: params,
                names: self.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "),
            });
        }
        Ok(())
    }

    /// Checks parameter dtypes and stores integer parameters in their symbol slots. A `f16` or
    /// `bf16` parameter is passed as `Scalar::F32` (there is no half scalar; the shim rounds it
    /// once to the parameter's type).
    fn bind_params(&self, params: &[Scalar], float_as: Option<DType>, values: &mut [i128]) -> Result<(), DispatchError> {
        for (p, s) in self.params.iter().zip(params) {
            let want = match p.dtype {
                DType::f16 | DType::bf16 if float_as.is_none() => DType::f32,
                d if d.is_float() => float_as.unwrap_or(d),
                d => d,
            };
            if s.dtype() != want && !(p.dtype.is_float() && s.dtype() == p.dtype) {
                return Err(DispatchError::ParamDType { op: self.op.clone(), param: p.name.clone(), expected: want, found: s.dtype() });
            }
            if let Some(k) = p.slot {
                values[k] = s.as_i128().unwrap_or_default();
            }
        }
        Ok(())
    }

    /// Checks input dtypes and ranks, binds dim symbols from bare-symbol axes (in input order),
    /// then checks expression axes (which may use symbols bound by later inputs).
    fn bind_dims<S: Operand>(&self, inputs: &[S], float_as: Option<DType>, values: &mut [i128]) -> Result<(), DispatchError> {
        for (ip, t) in self.inputs.iter().zip(inputs) {
            self.check_input_type(ip, t, float_as)?;
            for (axis, rule) in ip.dims.iter().enumerate() {
                let DimRule::Sym { slot, bound_by } = *rule else { continue };
                let got = t.shape()[axis];
                match bound_by {
                    None => values[slot] = got as i128,
                    Some((bi, ba)) if values[slot] != got as i128 => {
                        return Err(DispatchError::DimMismatch {
                            op: self.op.clone(),
                            input: ip.name.clone(),
                            axis: axis_u32(axis),
                            dim: self.syms[slot].clone(),
                            expected: i64::try_from(values[slot]).unwrap_or(i64::MAX),
                            bound_by: format!("input `{}` axis {ba}", self.inputs[bi].name),
                            found: got,
                        });
                    }
                    Some(_) => {}
                }
            }
        }
        for (ip, t) in self.inputs.iter().zip(inputs) {
            for (axis, rule) in ip.dims.iter().enumerate() {
                let DimRule::Expr { expr, text } = rule else { continue };
                let got = t.shape()[axis];
                let want = expr.eval(values);
                if want != Some(got as i128) {
                    return Err(DispatchError::DimMismatch {
                        op: self.op.clone(),
                        input: ip.name.clone(),
                        axis: axis_u32(axis),
                        dim: text.clone(),
                        expected: want.and_then(|v| i64::try_from(v).ok()).unwrap_or(-1),
                        bound_by: "the signature".to_string(),
                        found: got,
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether the op broadcasts its operands (`broadcast = numpy`).
    pub fn broadcasts(&self) -> bool {
        self.broadcast
    }

    /// `broadcast = numpy`: checks input dtypes (any rank), computes the broadcast shape of the
    /// inputs (a typed error naming two inputs that do not broadcast) and binds `n` to its
    /// element count.
    fn bind_broadcast<S: Operand>(&self, inputs: &[S], float_as: Option<DType>, values: &mut [i128]) -> Result<Vec<usize>, DispatchError> {
        for (ip, t) in self.inputs.iter().zip(inputs) {
            let want = if ip.dtype.is_float() { float_as.unwrap_or(ip.dtype) } else { ip.dtype };
            if t.dtype() != want {
                return Err(DispatchError::InputDType { op: self.op.clone(), input: ip.name.clone(), expected: want, found: t.dtype() });
            }
        }
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        let shape = broadcast_shapes(&shapes).map_err(|(i, j)| DispatchError::Broadcast {
            op: self.op.clone(),
            first: self.inputs[i].name.clone(),
            first_shape: shapes[i].into(),
            second: self.inputs[j].name.clone(),
            second_shape: shapes[j].into(),
        })?;
        let n = shape.iter().try_fold(1i128, |acc, &d| acc.checked_mul(d as i128)).unwrap_or(i128::MAX);
        for ip in &self.inputs {
            for rule in &ip.dims {
                if let DimRule::Sym { slot, .. } = rule {
                    values[*slot] = n;
                }
            }
        }
        Ok(shape)
    }

    fn check_input_type<S: Operand>(&self, ip: &InputPlan, t: &S, float_as: Option<DType>) -> Result<(), DispatchError> {
        let want = if ip.dtype.is_float() { float_as.unwrap_or(ip.dtype) } else { ip.dtype };
        if t.dtype() != want {
            return Err(DispatchError::InputDType { op: self.op.clone(), input: ip.name.clone(), expected: want, found: t.dtype() });
        }
        if t.shape().len() != ip.dims.len() {
            return Err(DispatchError::InputRank {
                op: self.op.clone(),
                input: ip.name.clone(),
                expected: ip.dims.len(),
                dims: ip.dims_text.clone(),
                found: t.shape().to_vec(),
            });
        }
        Ok(())
    }

    /// Every `where` constraint over float parameters must hold, compared in IEEE arithmetic on
    /// the values passed (a NaN parameter satisfies no comparison).
    fn check_float_constraints(&self, params: &[Scalar]) -> Result<(), DispatchError> {
        if self.float_constraints.is_empty() {
            return Ok(());
        }
        let env = |name: &str| -> Option<f64> {
            let k = self.params.iter().position(|p| p.name == name)?;
            params.get(k).and_then(Scalar::as_f64)
        };
        for c in &self.float_constraints {
            if c.holds(&env) != Some(true) {
                let mut names: Vec<&str> =
                    c.terms.iter().filter_map(|t| if let FloatTerm::Param(p) = t { Some(p.as_str()) } else { None }).collect();
                names.dedup();
                let values = names
                    .iter()
                    .map(|n| format!("{n} = {}", env(n).map_or("?".to_string(), |v| v.to_string())))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(DispatchError::Constraint { op: self.op.clone(), constraint: c.to_string(), values });
            }
        }
        Ok(())
    }

    /// Every `where` constraint must hold (one that cannot be evaluated does not).
    fn check_constraints(&self, values: &[i128]) -> Result<(), DispatchError> {
        for (terms, c, text) in &self.constraints {
            let mut prev = terms.first().and_then(|t| t.eval(values));
            let mut ok = prev.is_some();
            for (opk, t) in c.ops.iter().zip(terms.iter().skip(1)) {
                let next = t.eval(values);
                match (prev, next) {
                    (Some(a), Some(b)) if opk.apply(a, b) => {}
                    _ => {
                        ok = false;
                        break;
                    }
                }
                prev = next;
            }
            if !ok {
                let mut used: Vec<&str> = Vec::new();
                c.terms.iter().for_each(|t| t.symbols(&mut used));
                used.sort_unstable();
                used.dedup();
                let vals: Vec<String> =
                    used.iter().filter_map(|s| self.syms.iter().position(|x| x == s).map(|k| format!("{s} = {}", values[k]))).collect();
                return Err(DispatchError::Constraint { op: self.op.clone(), constraint: text.clone(), values: vals.join(", ") });
            }
        }
        Ok(())
    }

    /// The `bounded(..)` limit of data-dependent dims for this call, if any.
    fn free_limit(&self, values: &[i128]) -> Result<Option<usize>, DispatchError> {
        let Some((e, text)) = &self.limit else { return Ok(None) };
        match e.eval(values).and_then(|v| usize::try_from(v).ok()) {
            Some(v) => Ok(Some(v)),
            None => Err(DispatchError::OutputShape {
                op: self.op.clone(),
                output: self.out_names.first().cloned().unwrap_or_default(),
                expr: format!("bounded({text})"),
                value: e.eval(values).map(|v| v.to_string()).unwrap_or_else(|| "undefined".into()),
            }),
        }
    }

    /// Every output's shape; a negative or undefined dim, or an element or byte count beyond
    /// `isize::MAX` (what any allocation can hold), is a typed error before anything allocates.
    fn output_shapes(&self, values: &[i128], float_as: Option<DType>) -> Result<SmallVec<[Shape; 2]>, DispatchError> {
        let mut out_shapes = SmallVec::with_capacity(self.outputs.len());
        for o in &self.outputs {
            let mut shape = Shape::with_capacity(o.dims.len());
            for (e, text) in &o.dims {
                match e.eval(values).and_then(|v| usize::try_from(v).ok()) {
                    Some(v) => shape.push(v),
                    None => {
                        return Err(DispatchError::OutputShape {
                            op: self.op.clone(),
                            output: o.name.clone(),
                            expr: text.clone(),
                            value: e.eval(values).map(|v| v.to_string()).unwrap_or_else(|| "undefined".into()),
                        })
                    }
                }
            }
            let dtype = if o.dtype.is_float() { float_as.unwrap_or(o.dtype) } else { o.dtype };
            let bytes = shape.iter().try_fold(dtype.size() as u128, |acc, &d| acc.checked_mul(d as u128));
            if bytes.is_none_or(|b| b > isize::MAX as u128) {
                return Err(DispatchError::OutputTooLarge {
                    op: self.op.clone(),
                    output: o.name.clone(),
                    shape: shape.to_vec(),
                    dtype,
                    limit: format!("{} bytes (isize::MAX, the most any allocation holds)", isize::MAX),
                });
            }
            out_shapes.push(shape);
        }
        Ok(out_shapes)
    }

    /// `bounded(..)` or `dynamic` for data-dependent output shapes, `None` for `static`.
    pub fn shape_class(&self) -> Option<&str> {
        self.dynamic.as_deref()
    }

    /// Compiles a kernel expression (e.g. `threads`) once, for evaluation on every call with
    /// `IExpr::eval(&bound.values)`; `None` if it uses a symbol the op does not bind.
    pub fn compile(&self, e: &Expr) -> Option<IExpr> {
        IExpr::compile(e, &self.syms)
    }
}

/// The plan's symbols: dim symbols, then integer parameters (`n_fixed` of them, bound by a
/// call), then symbols only outputs use (data-dependent, sized by the reference).
fn symbols(sig: &Signature) -> (Vec<String>, usize) {
    let mut syms = sig.dim_symbols();
    syms.extend(sig.params().filter(|p| p.dtype.is_int()).map(|p| p.name.clone()));
    let n_fixed = syms.len();
    if sig.shape_class != ShapeClass::Static {
        for d in sig.outputs.iter().flat_map(|o| &o.dims) {
            let mut used = Vec::new();
            d.symbols(&mut used);
            for u in used {
                if !syms.iter().any(|s| s == u) {
                    syms.push(u.to_string());
                }
            }
        }
    }
    (syms, n_fixed)
}

type Compile<'a> = dyn Fn(&Expr) -> Result<IExpr, String> + 'a;

/// Each input's dim rules; a bare symbol's first sight in input order binds it, later sights
/// check against it.
fn input_plans(sig: &Signature, syms: &[String], compile: &Compile<'_>) -> Result<Vec<InputPlan>, String> {
    let mut inputs = Vec::new();
    let mut first_sight: Vec<Option<(usize, usize)>> = vec![None; syms.len()];
    for (ii, t) in sig.inputs().enumerate() {
        let mut dims = Vec::new();
        for (axis, d) in t.dims.iter().enumerate() {
            dims.push(match d {
                // A bare dim named after an integer parameter checks against it (see
                // `Signature::dim_symbols`).
                Expr::Sym(s) if sig.params().any(|p| p.dtype.is_int() && p.name == *s) => {
                    DimRule::Expr { expr: compile(d)?, text: d.to_string() }
                }
                Expr::Sym(s) => {
                    let slot = syms.iter().position(|x| x == s).ok_or("unbound")?;
                    let bound_by = first_sight[slot];
                    first_sight[slot].get_or_insert((ii, axis));
                    DimRule::Sym { slot, bound_by }
                }
                e => DimRule::Expr { expr: compile(e)?, text: e.to_string() },
            });
        }
        let dims_text = format!("[{}]", t.dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "));
        inputs.push(InputPlan { name: t.name.clone(), dtype: t.dtype, dims, dims_text });
    }
    Ok(inputs)
}

/// Each output's dim expressions, and the axes a data-dependent symbol sizes (a whole dim).
fn output_plans(
    sig: &Signature,
    syms: &[String],
    n_fixed: usize,
    compile: &Compile<'_>,
) -> Result<(Vec<OutputPlan>, Vec<FreeAxis>), String> {
    let mut outputs = Vec::new();
    let mut free = Vec::new();
    for (oi, o) in sig.outputs.iter().enumerate() {
        let dims = o.dims.iter().map(|d| Ok((compile(d)?, d.to_string()))).collect::<Result<Vec<_>, String>>()?;
        for (axis, d) in o.dims.iter().enumerate() {
            let mut used = Vec::new();
            d.symbols(&mut used);
            for u in used {
                let slot = syms.iter().position(|s| s == u).ok_or("unbound")?;
                if slot >= n_fixed {
                    if !matches!(d, Expr::Sym(_)) {
                        return Err(format!("data-dependent symbol `{u}` must be a whole output dim"));
                    }
                    free.push(FreeAxis { output: oi, axis, slot });
                }
            }
        }
        outputs.push(OutputPlan { name: o.name.clone(), dtype: o.dtype, dims });
    }
    Ok((outputs, free))
}

/// An axis index as errors carry it (a tensor's rank is far below `u32::MAX`).
fn axis_u32(axis: usize) -> u32 {
    u32::try_from(axis).unwrap_or(u32::MAX)
}
