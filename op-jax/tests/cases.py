"""One case per built-in: arguments in the contract's order (tensors and parameters) and the
jax.numpy counterpart. Shared by the test modules."""

import jax
import jax.numpy as jnp
import numpy as np

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-40, -2.5, 3.75], np.float64)


def vec(rng, n, dtype, special=False, positive=False):
    x = rng.standard_normal(n)
    if positive:
        x = np.abs(x) + 0.1
    if special and n >= len(SPECIAL):
        x[: len(SPECIAL)] = SPECIAL
    return x.astype(dtype)


def mat(rng, r, c, dtype):
    return rng.standard_normal((r, c)).astype(dtype)


def unary(f, positive=False):
    return lambda rng, dt, sp: ((vec(rng, 16, dt, sp, positive),), f)


def binary(f):
    return lambda rng, dt, sp: ((vec(rng, 16, dt, sp), vec(rng, 16, dt, sp)[::-1].copy()), f)


def _where(rng, dt, sp):
    cond = (rng.random(12) > 0.5).astype(np.uint32)
    return (cond, vec(rng, 12, dt, sp), vec(rng, 12, dt)), lambda c, a, b: jnp.where(c != 0, a, b)


def _lower_median(x):
    c = x.shape[1]
    return jnp.sort(x, axis=1)[:, (c - 1) // 2]


def _unfold(x, w, s):
    n = x.shape[0]
    idx = np.arange(0, n - w + 1, s)[:, None] + np.arange(w)[None, :]
    return x[idx]


CASES = {
    "builtin/exp": unary(jnp.exp),
    "builtin/log": unary(jnp.log, positive=True),
    "builtin/tanh": unary(jnp.tanh),
    "builtin/relu": unary(jax.nn.relu),
    "builtin/neg": unary(jnp.negative),
    "builtin/abs": unary(jnp.abs),
    "builtin/sqrt": unary(jnp.sqrt, positive=True),
    "builtin/square": unary(jnp.square),
    "builtin/sigmoid": unary(jax.nn.sigmoid),
    "builtin/add": binary(jnp.add),
    "builtin/sub": binary(jnp.subtract),
    "builtin/mul": binary(jnp.multiply),
    "builtin/div": binary(jnp.divide),
    "builtin/maximum": binary(jnp.maximum),
    "builtin/minimum": binary(jnp.minimum),
    "builtin/greater": binary(lambda a, b: (a > b).astype(jnp.uint32)),
    "builtin/less": binary(lambda a, b: (a < b).astype(jnp.uint32)),
    "builtin/equal": binary(lambda a, b: (a == b).astype(jnp.uint32)),
    "builtin/greater_bool": binary(lambda a, b: a > b),
    "builtin/less_bool": binary(lambda a, b: a < b),
    "builtin/equal_bool": binary(lambda a, b: a == b),
    "builtin/scale": lambda rng, dt, sp: ((vec(rng, 16, dt, sp), 1.5), lambda x, s: x * jnp.asarray(s, x.dtype)),
    "builtin/sum": lambda rng, dt, sp: ((vec(rng, 64, dt),), jnp.sum),
    "builtin/mean": lambda rng, dt, sp: ((vec(rng, 64, dt),), jnp.mean),
    "builtin/mse_loss": lambda rng, dt, sp: ((vec(rng, 32, dt), vec(rng, 32, dt)), lambda a, b: jnp.mean((a - b) ** 2)),
    "builtin/matmul": lambda rng, dt, sp: ((mat(rng, 4, 5, dt), mat(rng, 5, 3, dt)), jnp.matmul),
    "builtin/conv1d": lambda rng, dt, sp: ((vec(rng, 20, dt), vec(rng, 5, dt)), lambda x, w: jnp.correlate(x, w, "valid")),
    "builtin/sum_rows": lambda rng, dt, sp: ((mat(rng, 4, 9, dt),), lambda x: jnp.sum(x, axis=1)),
    "builtin/mean_rows": lambda rng, dt, sp: ((mat(rng, 4, 9, dt),), lambda x: jnp.mean(x, axis=1)),
    "builtin/max_rows": lambda rng, dt, sp: ((mat(rng, 4, 9, dt),), lambda x: jnp.max(x, axis=1)),
    "builtin/min_rows": lambda rng, dt, sp: ((mat(rng, 4, 9, dt),), lambda x: jnp.min(x, axis=1)),
    "builtin/argmax_rows": lambda rng, dt, sp: ((mat(rng, 4, 9, dt),), lambda x: jnp.argmax(x, axis=1).astype(jnp.uint32)),
    "builtin/sort_rows": lambda rng, dt, sp: ((mat(rng, 4, 9, dt),), lambda x: jnp.sort(x, axis=1)),
    "builtin/median_rows": lambda rng, dt, sp: ((mat(rng, 4, 8, dt),), _lower_median),
    "builtin/where": _where,
    "builtin/reshape": lambda rng, dt, sp: ((vec(rng, 12, dt, sp), 4), lambda x, c: x.reshape(-1, c)),
    "builtin/flatten": lambda rng, dt, sp: ((mat(rng, 3, 4, dt),), jnp.ravel),
    "builtin/transpose": lambda rng, dt, sp: ((mat(rng, 3, 4, dt),), jnp.transpose),
    "builtin/slice": lambda rng, dt, sp: ((vec(rng, 12, dt, sp), 1, 11, 3), lambda x, a, b, s: x[a:b:s]),
    "builtin/concat": lambda rng, dt, sp: ((vec(rng, 12, dt, sp), vec(rng, 5, dt)), lambda a, b: jnp.concatenate([a, b])),
    "builtin/gather": lambda rng, dt, sp: ((vec(rng, 12, dt, sp), rng.integers(0, 12, 7).astype(np.uint32)), lambda x, i: x[i]),
    "builtin/broadcast_to": lambda rng, dt, sp: (
        (mat(rng, 2, 3, dt), 4),
        lambda x, m: jnp.broadcast_to(x[:, None, :], (x.shape[0], m, x.shape[1])),
    ),
    "builtin/take_along": lambda rng, dt, sp: (
        (mat(rng, 3, 5, dt), rng.integers(0, 5, (3, 4)).astype(np.uint32)),
        lambda x, i: jnp.take_along_axis(x, i, axis=1),
    ),
    "builtin/unfold": lambda rng, dt, sp: ((vec(rng, 12, dt, sp), 4, 2), _unfold),
    "builtin/permute3": lambda rng, dt, sp: (
        (rng.standard_normal((2, 3, 4)).astype(dt), 2, 0, 1),
        lambda x, *p: jnp.transpose(x, p),
    ),
    "builtin/permute4": lambda rng, dt, sp: (
        (rng.standard_normal((2, 3, 4, 5)).astype(dt), 3, 1, 0, 2),
        lambda x, *p: jnp.transpose(x, p),
    ),
}

# Which arguments are tensors, for the counterparts that take parameters positionally.
def split(op, args):
    tensors = [a for (kind, _), a in zip(op._arg_order, args) if kind == "tensor"]
    params = [a for (kind, _), a in zip(op._arg_order, args) if kind == "param"]
    return tensors, params
