//! The runtime side of the code `#[op]` generates, written once here instead of once per op:
//! how a shim calls the user's function (each argument read from the [`Call`] by its [`Src`],
//! the result stored as outputs or gradients, generic over the function's type), and
//! [`DECL_BASE`], the description a declaration's `DECL` completes. Decides nothing: the macro
//! lists the sources from the contract, and the typed binding it emits before each call checks
//! the function against the signature.

use crate::decl::{Call, OpDecl};
use crate::error::ShimError;
use crate::tensor::{Element, ParamValue};

/// What every shim returns.
pub type ShimResult = Result<(), ShimError>;

/// What a declaration's `DECL` is written over (`OpDecl { name: .., ..DECL_BASE }`): no
/// kernels, no description, no `cpu` kernel, no backward, no instances. The macro always sets
/// the identifying fields and the reference itself; this base's stand-ins for them (empty
/// strings, a zero hash, a reference that refuses) never reach a registry, whose load checks the
/// hash against the contract and code.
pub const DECL_BASE: OpDecl = OpDecl {
    rust_name: "",
    site: "",
    module: "",
    contract_json: "",
    body_tokens: "",
    hash: [0; 32],
    description: "",
    kernels: &[],
    reference: no_reference,
    reference_f64: None,
    cpu: None,
    vjp: None,
    vjp_f64: None,
    vjp_cpu: None,
    jvp: &[],
    jvp_f64: &[],
    composite: None,
    members: &[],
};

/// [`DECL_BASE`]'s reference: an error naming the op.
fn no_reference(cx: &mut Call<'_>) -> ShimResult {
    Err(ShimError(format!("op `{}`: its description names no reference", cx.op)))
}

/// Where one argument of the user's function comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// Tensor input `i` (counting tensor inputs only, in signature order).
    Input(usize),
    /// Scalar parameter `i` (counting parameters only, in signature order).
    Param(usize),
    /// The value of dim symbol `name` (a trailing `usize` parameter of the reference).
    Dim(&'static str),
    /// The cotangent of output `k` (VJP rules).
    Cotangent(usize),
    /// The tangent of the input a JVP rule differentiates.
    Tangent,
}

/// Where the function's result goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    /// The call's outputs, in order (reference, `cpu` kernel, JVP rules).
    Outputs,
    /// The gradients of the differentiable inputs, in order (VJP rules).
    Grads,
}

/// A type one argument of a user function can have: `&[E]` (a tensor, cotangent or tangent),
/// a parameter type, or `usize` (a dim).
pub trait Arg<'a>: Sized {
    /// Reads the argument from `src`; a source of the wrong kind is an error naming the op.
    fn read(cx: &Call<'a>, src: Src) -> Result<Self, ShimError>;
}

fn wrong_kind(cx: &Call<'_>, src: Src, want: &str) -> ShimError {
    ShimError(format!("op `{}`: argument source {src:?} cannot give {want}", cx.op))
}

impl<'a, E: Element> Arg<'a> for &'a [E] {
    #[inline(always)]
    fn read(cx: &Call<'a>, src: Src) -> Result<Self, ShimError> {
        match src {
            Src::Input(i) => cx.input(i),
            Src::Cotangent(k) => cx.cotangent(k),
            Src::Tangent => cx.tangent(),
            other => Err(wrong_kind(cx, other, "a slice")),
        }
    }
}

impl<'a, P: ParamValue> Arg<'a> for P {
    #[inline(always)]
    fn read(cx: &Call<'a>, src: Src) -> Result<Self, ShimError> {
        match src {
            Src::Param(i) => cx.param(i),
            other => Err(wrong_kind(cx, other, "a parameter")),
        }
    }
}

impl<'a> Arg<'a> for usize {
    #[inline(always)]
    fn read(cx: &Call<'a>, src: Src) -> Result<Self, ShimError> {
        match src {
            Src::Dim(name) => cx.dim(name),
            other => Err(wrong_kind(cx, other, "a dim")),
        }
    }
}

/// Reads one argument: the general shim, for a function with more than 12 arguments (the
/// `callN` functions go to [`call12`]) or a result of more than 8 parts (tuples implement
/// `Results` up to 8); the macro holds the same limits.
#[inline]
pub fn arg<'a, A: Arg<'a>>(cx: &Call<'a>, src: Src) -> Result<A, ShimError> {
    A::read(cx, src)
}

// Always inlined, like the reads: a shim's source and destination are constants, so each read
// and store folds to the one `Call` method it names (as a hand-written shim would call it).
#[inline(always)]
fn put<E: Element>(cx: &mut Call<'_>, dest: Dest, i: usize, v: Vec<E>) -> ShimResult {
    match dest {
        Dest::Outputs => cx.set_output(i, v),
        Dest::Grads => cx.set_grad(i, v),
    }
}

/// What a user function returns: one `Vec<E>`, or a tuple of them (one per output or gradient).
pub trait Results {
    /// Stores every part in order at `dest`.
    fn store(self, cx: &mut Call<'_>, dest: Dest) -> ShimResult;
}

impl<E: Element> Results for Vec<E> {
    #[inline(always)]
    fn store(self, cx: &mut Call<'_>, dest: Dest) -> ShimResult {
        put(cx, dest, 0, self)
    }
}

macro_rules! tuple_results {
    ($(($($e:ident $i:tt),+);)*) => {$(
        impl<$($e: Element),+> Results for ($(Vec<$e>,)+) {
            #[inline(always)]
            fn store(self, cx: &mut Call<'_>, dest: Dest) -> ShimResult {
                $(put(cx, dest, $i, self.$i)?;)+
                Ok(())
            }
        }
    )*};
}

tuple_results! {
    (E0 0, E1 1);
    (E0 0, E1 1, E2 2);
    (E0 0, E1 1, E2 2, E3 3);
    (E0 0, E1 1, E2 2, E3 3, E4 4);
    (E0 0, E1 1, E2 2, E3 3, E4 4, E5 5);
    (E0 0, E1 1, E2 2, E3 3, E4 4, E5 5, E6 6);
    (E0 0, E1 1, E2 2, E3 3, E4 4, E5 5, E6 6, E7 7);
}

macro_rules! call_fns {
    ($($name:ident [$n:literal] ($($a:ident $i:tt),*);)*) => {$(
        /// Calls `f` with its arguments read from `src` (one per parameter, in order) and
        /// stores what it returns at `dest`. Always inlined into the shim, where `f` is a
        /// known function: the call is then direct, as a hand-written shim's.
        #[inline(always)]
        pub fn $name<'a, $($a: Arg<'a>,)* R: Results>(cx: &mut Call<'a>, src: &[Src; $n], dest: Dest, f: fn($($a),*) -> R) -> ShimResult {
            let r = f($($a::read(cx, src[$i])?),*);
            r.store(cx, dest)
        }
    )*};
}

/// Calls `f`, which takes no arguments, and stores what it returns at `dest`.
#[inline(always)]
pub fn call0<R: Results>(cx: &mut Call<'_>, _src: &[Src; 0], dest: Dest, f: fn() -> R) -> ShimResult {
    f().store(cx, dest)
}

call_fns! {
    call1 [1] (A0 0);
    call2 [2] (A0 0, A1 1);
    call3 [3] (A0 0, A1 1, A2 2);
    call4 [4] (A0 0, A1 1, A2 2, A3 3);
    call5 [5] (A0 0, A1 1, A2 2, A3 3, A4 4);
    call6 [6] (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5);
    call7 [7] (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6);
    call8 [8] (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7);
    call9 [9] (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8);
    call10 [10] (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9);
    call11 [11] (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10);
    call12 [12] (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11);
}
