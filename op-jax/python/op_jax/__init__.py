"""The ops of an op-runtime registry inside JAX.

``op_jax.op("builtin/exp")`` returns a function usable under ``jax.jit``, ``jax.grad``,
``jax.vjp`` and ``jax.vmap``. Everything this module knows about an op comes from its contract
in the process registry (the native module ``op_jax._op_jax``): output shapes and dtypes are
inferred at trace time (nothing runs), a call that breaks the contract raises ``ContractError``
at trace time, and the computation runs in XLA FFI handlers written in Rust that call the op
through op-runtime's one dispatch path.

Each op's FFI target is named from its identity, ``op_jax:<name>@<version>:<identity prefix>``,
so an exported artefact names the exact code it ran, and a process whose op has other content
cannot run it (``deserialize`` refuses it with ``IdentityError``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from . import _op_jax as _native
from ._op_jax import (
    ContractError,
    IdentityError,
    NotDifferentiableError,
    OpError,
    RegistrationError,
    UnknownOpError,
    VerificationError,
)
from . import _examples  # registers the example ops before `_register_all()` below
from ._verdicts import conformance, gradcheck

__all__ = [
    "op",
    "ops",
    "refresh",
    "Op",
    "rust_call",
    "export",
    "deserialize",
    "verify",
    "receipts",
    "present_receipts",
    "targets_of",
    "set_backend",
    "backends",
    "provenance",
    "conformance",
    "gradcheck",
    "OpError",
    "ContractError",
    "UnknownOpError",
    "RegistrationError",
    "IdentityError",
    "NotDifferentiableError",
    "VerificationError",
]

_NAMES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.uint8): "u8",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.int16): "i16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.int32): "i32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.int64): "i64",
    np.dtype(np.float16): "f16",
    np.dtype(jnp.bfloat16): "bf16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}
_DTYPES = {v: k for k, v in _NAMES.items()}

_TARGET = re.compile(r"op_jax:(?P<op>[^:\"\s]+@\d+):(?P<prefix>[0-9a-f]{16})(?P<kind>:pullback|:jvp)?")


def _dtype_name(dtype) -> str:
    d = np.dtype(dtype)
    return _NAMES.get(d, str(d))


def target_name(op_id: str, identity: str, kind: str | None = None) -> str:
    """The FFI target of an op's forward, ``op_jax:<name>@<version>:<16 hex>``, or of its
    ``"pullback"`` or ``"jvp"`` (the same with ``:pullback`` / ``:jvp``)."""
    return f"op_jax:{op_id}:{identity[:16]}" + (f":{kind}" if kind else "")


# Targets registered with XLA in this process, with the full identity each was registered for.
_registered: dict[str, str] = {}


def _ensure_targets(op_id: str, identity: str) -> None:
    """Registers the op's three targets (forward, pullback, jvp) once. Registering the same identity again is a no-op; a
    target name is never re-pointed (the name carries the identity, so other content gets
    another name)."""
    fwd = target_name(op_id, identity)
    have = _registered.get(fwd)
    if have == identity:
        return
    if have is not None:
        raise RegistrationError(
            f"op `{op_id}`: target `{fwd}` is registered for identity {have}, not {identity} "
            "(a 64-bit prefix collision); bump the op's version or give it a new name"
        )
    jax.ffi.register_ffi_target(fwd, _native.forward_handler(), platform="cpu")
    jax.ffi.register_ffi_target(target_name(op_id, identity, "pullback"), _native.pullback_handler(), platform="cpu")
    jax.ffi.register_ffi_target(target_name(op_id, identity, "jvp"), _native.jvp_handler(), platform="cpu")
    for kind in (None, "pullback", "jvp"):
        _registered[target_name(op_id, identity, kind)] = identity


def _register_all() -> None:
    for op_id in _native.ops():
        ident = _native.identity(op_id)
        if ident is not None:
            _ensure_targets(op_id, ident)


def refresh() -> None:
    """Registers the FFI targets of ops registered in the process registry since import (a
    module that registers its own ops calls this after registering them)."""
    _register_all()


def ops() -> list[str]:
    """Every op in the process registry (``name@version``), VJP ops included."""
    return list(_native.ops())


def backends() -> list[str]:
    """The op-runtime backends compiled into the native module."""
    return list(_native.backends())


def set_backend(name: str | None, kind: str | None) -> None:
    """Chooses the backend of op ``name`` (or of every op, ``name=None``); ``kind=None`` clears
    it. Takes effect on the next call, already-jitted functions included."""
    _native.set_backend(name, kind)


def provenance(name: str) -> dict | None:
    """What the last call of op ``name`` through JAX ran: op, content hash, backend, device,
    receipt. ``None`` before the first call."""
    p = _native.provenance(name)
    return None if p is None else json.loads(p)


def rust_call(name: str, *args, **kwargs):
    """Calls the op eagerly through op-runtime (no JAX, no XLA): the reference point for tests.
    Returns numpy arrays (a tuple for several outputs)."""
    o = op(name)
    tensors, params = o._split(args, kwargs)
    ins = []
    for t in tensors:
        a = np.ascontiguousarray(np.asarray(t))
        ins.append((_dtype_name(a.dtype), list(a.shape), a.tobytes()))
    outs = _native.call(o.id, ins, params)
    res = tuple(np.frombuffer(b, dtype=_DTYPES[d]).reshape(s) for d, s, b in outs)
    return res[0] if len(res) == 1 else res


def _is_float(dtype) -> bool:
    return jnp.issubdtype(dtype, jnp.floating)


@dataclass(frozen=True)
class _Call:
    """One traced call: the op, its identity, inputs' ranks, outputs and attributes."""

    op_id: str
    identity: str
    ranks: tuple[int, ...]
    outs: tuple[jax.ShapeDtypeStruct, ...]
    attrs: tuple[tuple[str, Any], ...]

    def attributes(self, extra_ranks: Sequence[int] = ()) -> dict[str, Any]:
        a = dict(self.attrs)
        a["op"] = self.op_id
        a["identity"] = self.identity
        a["ranks"] = np.array(list(self.ranks) + list(extra_ranks), dtype=np.int64)
        return a


class Op:
    """A registered op as a JAX function. Call it with the op's arguments in the contract's order
    (tensors and parameters, as the Rust reference takes them) or parameters by keyword.
    Parameters are static: they become attributes of the XLA call."""

    def __init__(self, name: str):
        d = json.loads(_native.describe(name))
        self.id: str = d["id"]
        self.name: str = d["name"]
        self.version: int = d["version"]
        self.identity: str = d["identity"]
        self.source: str = d["source"]
        self.differentiable: bool = d["differentiable"]
        self.vjp_op: str | None = d["vjp_op"]
        self.forward_mode: bool = d["forward_mode"]
        self.inputs: list[str] = d["inputs"]
        self.params: list[str] = d["params"]
        self.outputs: list[str] = d["outputs"]
        self.instances: list[list[str]] = d["instances"]
        self.contract: dict = d["contract"]
        self._arg_order: list[tuple[str, str]] = [tuple(a) for a in d["arg_order"]]

    def __repr__(self) -> str:
        return f"op_jax.Op({self.id}, identity={self.identity[:16]})"

    @property
    def target(self) -> str:
        return target_name(self.id, self.identity)

    def _split(self, args, kwargs):
        """Tensors and parameter values from a call's positional and keyword arguments."""
        args = list(args)
        kwargs = dict(kwargs)
        tensors, params = [], []
        for kind, name in self._arg_order:
            if args:
                v = args.pop(0)
                if name in kwargs:
                    raise ContractError(f"op `{self.id}`: `{name}` given both positionally and by keyword")
            elif name in kwargs:
                v = kwargs.pop(name)
            else:
                raise ContractError(f"op `{self.id}`: missing {'input' if kind == 'tensor' else 'parameter'} `{name}`")
            if kind == "tensor":
                tensors.append(v)
            else:
                if isinstance(v, jax.core.Tracer) or isinstance(v, jax.Array):
                    raise ContractError(
                        f"op `{self.id}`: parameter `{name}` must be a static Python number (it becomes an XLA "
                        "attribute), not an array or a traced value; mark it static under jit"
                    )
                params.append(v)
        if args:
            raise ContractError(f"op `{self.id}` takes {len(self._arg_order)} arguments, got {len(self._arg_order) + len(args)}")
        if kwargs:
            raise ContractError(f"op `{self.id}`: unknown argument(s) {sorted(kwargs)}; it takes {[n for _, n in self._arg_order]}")
        return tensors, params

    def _trace(self, arrays, params) -> _Call:
        """Trace-time inference from the contract: nothing runs."""
        avals = [(_dtype_name(a.dtype), [int(s) for s in a.shape]) for a in arrays]
        op_id, identity, outs, pdt = _native.infer(self.id, avals, list(params))
        _ensure_targets(op_id, identity)
        attrs = tuple((f"param_{n}", np.dtype(_DTYPES[d]).type(v)) for (n, d), v in zip(pdt, params))
        held = json.loads(_native.receipts(op_id))
        if held:
            # The receipts held when this call was traced travel with it (an exported
            # artefact carries them); the handler does not read them.
            attrs += (("receipts", ",".join(sorted(f"{r['backend']}:{r['digest']}" for r in held))),)
        shapes = tuple(jax.ShapeDtypeStruct(tuple(s), _DTYPES[d]) for d, s in outs)
        return _Call(op_id, identity, tuple(len(a.shape) for a in arrays), shapes, attrs)

    def __call__(self, *args, **kwargs):
        tensors, params = self._split(args, kwargs)
        arrays = [jnp.asarray(t) for t in tensors]
        c = self._trace(arrays, params)
        out = _differentiable(self, c, params)(*arrays)
        return out[0] if len(out) == 1 else tuple(out)


def _forward(c: _Call, arrays):
    call = jax.ffi.ffi_call(target_name(c.op_id, c.identity), list(c.outs), vmap_method="broadcast_all")
    return tuple(call(*arrays, **c.attributes()))


def _zero_cotangent(ct, like: jax.ShapeDtypeStruct):
    if ct is None or type(ct) is ad.Zero or getattr(ct, "dtype", None) == jax.dtypes.float0:
        return jnp.zeros(like.shape, like.dtype)
    return ct


def _differentiable(o: Op, c: _Call, params):
    """The op's forward under `jax.custom_jvp`. Its tangent is `_tangent_p`, a primitive linear
    in the tangents: evaluated (``jax.jvp``) it runs the op's forward mode through the `:jvp`
    target; transposed (``jax.grad``, ``jax.vjp``) it runs the op's declared backward (its
    differentiable VJP op, else the `:pullback` target). So forward and reverse mode each run
    what the op declares, and neither is derived from the other in JAX."""

    @jax.custom_jvp
    def f(*xs):
        return _forward(c, xs)

    def f_jvp(primals, tangents):
        ys = f(*primals)
        if not any(_is_float(s.dtype) for s in c.outs):
            # Integer and bool outputs carry no tangent, whatever the op declares.
            return ys, tuple(np.zeros(s.shape, jax.dtypes.float0) for s in c.outs)
        if not o.differentiable:
            raise NotDifferentiableError(f"op `{o.id}` declares `backward = none`: no gradient flows through it")
        floats = tuple(i for i, x in enumerate(primals) if _is_float(x.dtype))
        ts = [tangents[i] for i in floats]
        touts = iter(_tangent_p.bind(*primals, *ts, call=c, op=o, params=tuple(params), floats=floats))
        out_ts = tuple(next(touts) if _is_float(s.dtype) else np.zeros(s.shape, jax.dtypes.float0) for s in c.outs)
        return ys, out_ts

    f.defjvp(f_jvp)
    return f


# ---- the tangent primitive ------------------------------------------------------------------
#
# `_tangent_p(xs..., ts...)`: the tangents of an op's float outputs for tangents `ts` of its float
# inputs at `xs`. Linear in `ts`. Arguments may carry leading batch dims beyond the op's ranks
# (vmap; every argument the same ones); the handlers read them as one batch axis.

_tangent_p = Primitive("op_jax_tangent")
_tangent_p.multiple_results = True


def _batch_dims(args, c: _Call) -> tuple[int, ...]:
    x, r = args[0], c.ranks[0]
    return tuple(x.shape[: len(x.shape) - r])


def _tangent_outs(args, c: _Call):
    b = _batch_dims(args, c)
    return [jax.ShapeDtypeStruct(b + tuple(s.shape), s.dtype) for s in c.outs if _is_float(s.dtype)]


def _tangent_abstract(*args, call, op, params, floats):
    return [jax.core.ShapedArray(s.shape, s.dtype) for s in _tangent_outs(args, call)]


def _tangent_ffi(*args, call, op, params, floats):
    if not op.forward_mode:
        raise NotDifferentiableError(
            f"op `{op.id}` has no forward mode: it declares no JVP rule, is not a composite, and has no "
            "differentiable VJP op to take the VJP-of-VJP route (reverse mode, jax.grad, still works)"
        )
    ranks = [call.ranks[i] for i in floats]
    ffi = jax.ffi.ffi_call(target_name(call.op_id, call.identity, "jvp"), _tangent_outs(args, call))
    return list(ffi(*args, **call.attributes(ranks)))


def _tangent_batch(args, dims, *, call, op, params, floats):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    moved = [
        jnp.broadcast_to(a, (size,) + a.shape) if d is None else jnp.moveaxis(a, d, 0)
        for a, d in zip(args, dims)
    ]
    outs = _tangent_p.bind(*moved, call=call, op=op, params=params, floats=floats)
    return outs, [0] * len(outs)


def _tangent_transpose(cts, *args, call, op, params, floats):
    n = len(call.ranks)
    xs = args[:n]
    if any(ad.is_undefined_primal(x) for x in xs):
        raise NotDifferentiableError(f"op `{op.id}`: its tangent is linear in the tangents only, not in the inputs")
    b = _batch_dims(xs, call)
    it = iter(cts)
    full = []
    for s in call.outs:
        like = jax.ShapeDtypeStruct(b + tuple(s.shape), s.dtype)
        full.append(_zero_cotangent(next(it), like) if _is_float(s.dtype) else jnp.zeros(like.shape, like.dtype))

    def grads(xs, cts):
        return tuple(_backward(op, call, params, xs, cts, list(floats)))

    g = grads
    for _ in b:
        g = jax.vmap(g)
    gs = g(tuple(xs), tuple(full))
    ts = args[n:]
    return [None] * n + [gk if ad.is_undefined_primal(t) else None for gk, t in zip(gs, ts)]


_tangent_p.def_abstract_eval(_tangent_abstract)
_tangent_p.def_impl(_tangent_ffi)
mlir.register_lowering(_tangent_p, mlir.lower_fun(_tangent_ffi, multiple_results=True))
batching.primitive_batchers[_tangent_p] = _tangent_batch
ad.primitive_transposes[_tangent_p] = _tangent_transpose


def _tangent_jvp(primals, tangents, *, call, op, params, floats):
    raise NotDifferentiableError(
        f"op `{op.id}`: forward mode over forward mode is not supported (differentiate the gradient instead: "
        "reverse over reverse or forward over reverse)"
    )


ad.primitive_jvps[_tangent_p] = _tangent_jvp


def _backward(o: Op, c: _Call, params, xs, cts, floats):
    """Gradients of the float inputs: through the op's differentiable VJP op (itself an op, so
    second order works) where it has one for these dtypes, else through the pullback target
    (the op's VJP rule or VJP op, by `Tape::pullback`)."""
    if o.vjp_op is not None:
        v = op(o.vjp_op)
        dtypes = [_dtype_name(x.dtype) for x in list(xs) + list(cts)]
        if dtypes in v.instances and len(v.params) == len(params) and len(v.inputs) == len(xs) + len(cts):
            g = v(**dict(zip(v.inputs, list(xs) + list(cts))), **dict(zip(v.params, params)))
            g = g if isinstance(g, tuple) else (g,)
            if len(g) == len(floats):
                return g
    outs = [jax.ShapeDtypeStruct(xs[i].shape, xs[i].dtype) for i in floats]
    ranks_out = [len(ct.shape) for ct in cts]

    @jax.custom_vjp
    def pb(*args):
        call = jax.ffi.ffi_call(target_name(c.op_id, c.identity, "pullback"), outs, vmap_method="broadcast_all")
        return tuple(call(*args, **c.attributes(ranks_out)))

    def pb_fwd(*args):
        return pb(*args), None

    def pb_bwd(_, __):
        raise NotDifferentiableError(
            f"op `{o.id}`: its backward is a VJP rule, not a differentiable VJP op, so it cannot be "
            "differentiated a second time"
        )

    pb.defvjp(pb_fwd, pb_bwd)
    return pb(*xs, *cts)


_ops: dict[str, Op] = {}


def op(name: str) -> Op:
    """The op ``name`` (``name@version``, or ``name`` for its latest version) as a JAX function.
    Raises ``UnknownOpError`` when no such op is registered."""
    o = _ops.get(name)
    if o is None:
        o = Op(name)
        _ensure_targets(o.id, o.identity)
        _ops[name] = o
    return o


# ---- export ---------------------------------------------------------------------------------


def targets_of(exported) -> list[str]:
    """The op_jax FFI targets an exported artefact calls."""
    return sorted(set(m.group(0) for m in _TARGET.finditer(exported.mlir_module())))


def export(fun, **kwargs):
    """``jax.export.export`` for a jitted function that calls ops: op_jax's targets are named by
    identity, so they are exempt from JAX's stable-custom-call check (and only they are)."""
    checks = [jax.export.DisabledSafetyCheck.custom_call(t) for t in _registered]
    checks += list(kwargs.pop("disabled_checks", []))
    return jax.export.export(fun, disabled_checks=checks, **kwargs)


_CALL = re.compile(r'custom_call @"?(?P<target>op_jax:[^"(\s]+)"?\((?P<rest>.*)')
_ATTR = re.compile(r'(?P<key>identity|receipts) = "(?P<value>[^"]*)"')


def _artefact_calls(exported) -> dict[str, dict[str, set[str]]]:
    """Per op_jax target in an artefact: the identities and receipt digests its calls carry."""
    calls: dict[str, dict[str, set[str]]] = {}
    for line in exported.mlir_module().splitlines():
        m = _CALL.search(line)
        if not m:
            continue
        c = calls.setdefault(m.group("target"), {"identity": set(), "receipts": set()})
        for a in _ATTR.finditer(m.group("rest")):
            if a.group("key") == "identity":
                c["identity"].add(a.group("value"))
            elif a.group("value"):
                c["receipts"].update(a.group("value").split(","))
    return calls


def verify(exported) -> list[dict]:
    """For each op target in an artefact: the op, the identity it was made for
    (``identity_prefix``, and ``identity`` in full), whether this process holds that identity
    (``registered``, ``identity_here``), the receipts the artefact carries (``backend:digest``,
    those held when it was traced), and whether this process holds a receipt for the op's
    content that is valid on this machine (``verified_here``, with ``receipts_here``)."""
    out = []
    calls = _artefact_calls(exported)
    for t in targets_of(exported):
        m = _TARGET.fullmatch(t)
        op_id, prefix = m.group("op"), m.group("prefix")
        here = _native.identity(op_id)
        registered = here is not None and here.startswith(prefix)
        held = json.loads(_native.receipts(op_id)) if registered else []
        valid = [f"{r['backend']}:{r['digest']}" for r in held if r["valid_here"]]
        c = calls.get(t, {"identity": set(), "receipts": set()})
        out.append(
            {
                "target": t,
                "op": op_id,
                "identity_prefix": prefix,
                "identity": next(iter(c["identity"]), None),
                "registered": registered,
                "identity_here": here,
                "receipts": sorted(c["receipts"]),
                "verified_here": bool(valid),
                "receipts_here": valid,
            }
        )
    return out


def receipts(name: str) -> list[dict]:
    """The receipts this process holds for op ``name``'s current content: minted by
    ``conformance`` here or given to ``present_receipts``. Each names its backend, device,
    dtypes and digest, and ``valid_here`` (verified against this machine's device)."""
    return json.loads(_native.receipts(op(name).id))


def present_receipts(receipts) -> tuple[int, int]:
    """Holds receipts (a receipt dict, a list of them, or their JSON text, as ``conformance``
    returns them under ``receipt``): later calls name them in their provenance, artefacts
    traced afterwards carry them, and ``verify`` counts them where valid on this machine.
    Returns (held, refused as not intact: tampered, another format, a bad signature)."""
    text = receipts if isinstance(receipts, str) else json.dumps(receipts)
    return tuple(_native.present_receipts(text))


def deserialize(blob: bytes | bytearray):
    """``jax.export.deserialize``, refusing (``IdentityError``) an artefact that calls an op
    identity this process does not hold: it is never run against different code."""
    exported = jax.export.deserialize(bytearray(blob))
    for v in verify(exported):
        if not v["registered"]:
            here = v["identity_here"]
            held = f"this process holds identity {here[:16]}" if here else "this process has no op of that name@version"
            raise IdentityError(
                f"op `{v['op']}`: the artefact was made for identity {v['identity_prefix']}, but {held}; "
                "the op's content changed since export (re-export against this build, or load the build it was made with)"
            )
    return exported


_register_all()
