"""Every built-in through JAX: jit outputs bit-identical to the Rust call, within the op's
tolerance of its jax.numpy counterpart (edge values included), grad against JAX's grad of the
counterpart, check_grads (order 2 where the op has a differentiable VJP op), vmap and nested vmap
against loops."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import op_jax
from cases import CASES, split

NAMES = sorted(CASES)
FLOATS = [np.float32, np.float64]


def bits(a):
    a = np.asarray(a)
    return a.tobytes()


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    assert bits(a) == bits(b), f"\n{a}\n{b}"


def ulps(a, b):
    """ULP distance of two float arrays (NaN to NaN is 0; NaN to a number is infinite)."""
    a, b = np.asarray(a), np.asarray(b)
    it = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = a.view(it).astype(np.int64), b.view(it).astype(np.int64)
    m = np.int64(np.iinfo(it).min)
    ia = np.where(ia < 0, m - ia, ia)
    ib = np.where(ib < 0, m - ib, ib)
    d = np.abs(ia - ib).astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    one_nan = np.isnan(a) ^ np.isnan(b)
    return np.where(both_nan, 0, np.where(one_nan, np.inf, d))


def within_tolerance(op, got, want, n_terms):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    tol = op.contract["tolerance"]
    if not np.issubdtype(got.dtype, np.floating):
        np.testing.assert_array_equal(got, want)
    elif tol == "exact":
        nan = np.isnan(got) & np.isnan(want)
        assert bits(np.where(nan, 0, got)) == bits(np.where(nan, 0, want).astype(got.dtype)), f"\n{got}\n{want}"
    elif "ulp" in tol:
        # XLA's own transcendentals are not correctly rounded either: 2 ulps of slack for them.
        d = ulps(got, want)
        assert np.all(d <= tol["ulp"] + 2), f"ulps {d.max()} > {tol['ulp']} + 2\n{got}\n{want}"
    else:
        k = tol["accum"]
        eps = np.finfo(got.dtype).eps
        scale = max(1.0, float(np.nanmax(np.abs(want))) if want.size else 1.0)
        np.testing.assert_allclose(got, want, rtol=k * n_terms * eps, atol=k * n_terms * eps * scale, equal_nan=True)


def case(name, dtype=np.float32, special=True, seed=0, subnormal=True):
    rng = np.random.default_rng(seed)
    args, ref = CASES[name](rng, dtype, special)
    if not subnormal:
        # XLA's CPU runtime flushes subnormals (FTZ/DAZ), so jax.numpy computes 1e-40 as 0 in
        # f32; the op (like its Rust call) is IEEE. The jax.numpy comparison leaves them out;
        # the Rust comparison keeps them.
        args = tuple(np.where(np.abs(a) == np.float32(1e-40), a.dtype.type(1e-30), a) if isinstance(a, np.ndarray) and a.dtype == np.float32 else a for a in args)
    return op_jax.op(name), args, ref


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def test_every_builtin_is_exposed_and_covered():
    exposed = {o.split("@")[0] for o in op_jax.ops() if o.startswith("builtin/") and "vjp" not in o}
    assert exposed == set(CASES), exposed ^ set(CASES)


@pytest.mark.parametrize("dtype", FLOATS + [np.float16, jnp.bfloat16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", NAMES)
def test_jit_equals_the_rust_call_bit_for_bit(name, dtype):
    o, args, _ = case(name, dtype)
    tensors, params = split(o, args)
    f = jax.jit(lambda *t: o(*[*t, *params]) if False else _call(o, args, t))
    got = as_tuple(f(*tensors))
    want = as_tuple(op_jax.rust_call(name, *args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        same_bits(g, w)


def _call(o, args, tensors):
    """`o` on `args` with its tensors replaced by `tensors` (parameters stay static)."""
    it = iter(tensors)
    return o(*[next(it) if kind == "tensor" else a for (kind, _), a in zip(o._arg_order, args)])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", NAMES)
def test_against_jax_numpy_within_tolerance(name, dtype):
    o, args, ref = case(name, dtype, subnormal=False)
    tensors, params = split(o, args)
    got = as_tuple(jax.jit(lambda *t: _call(o, args, t))(*tensors))
    want = as_tuple(ref(*tensors, *params))
    n_terms = max([int(np.prod(np.shape(t))) for t in tensors] + [1])
    for g, w in zip(got, want):
        within_tolerance(o, g, w, n_terms)


def test_empty_arrays_where_the_contract_admits_them():
    x = jnp.zeros((0,), jnp.float32)
    for name in ["builtin/exp", "builtin/neg", "builtin/abs"]:
        out = jax.jit(op_jax.op(name))(x)
        assert out.shape == (0,) and out.dtype == jnp.float32
    assert float(op_jax.op("builtin/sum")(x)) == 0.0
    a = jnp.zeros((0, 3), jnp.float32)
    assert op_jax.op("builtin/sum_rows")(a).shape == (0,)
    assert op_jax.op("builtin/matmul")(a, jnp.ones((3, 2), jnp.float32)).shape == (0, 2)


DIFFERENTIABLE = [n for n in NAMES if op_jax.op(n).differentiable]


def _float_positions(o, args):
    return [i for i, ((kind, _), a) in enumerate(zip(o._arg_order, args)) if kind == "tensor" and np.issubdtype(np.asarray(a).dtype, np.floating)]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_grad_equals_jax_grad_of_the_counterpart(name):
    o, args, ref = case(name, np.float64, special=False, seed=1)
    pos = _float_positions(o, args)
    rng = np.random.default_rng(2)

    def loss(fun):
        def l(*floats):
            a = list(args)
            for i, f in zip(pos, floats):
                a[i] = f
            outs = as_tuple(fun(a))
            return sum(jnp.sum(y * jnp.asarray(rng_w[k], y.dtype)) for k, y in enumerate(outs) if jnp.issubdtype(y.dtype, jnp.floating))
        return l

    outs = as_tuple(op_jax.rust_call(name, *args))
    rng_w = [rng.standard_normal(np.shape(y)) for y in outs]
    floats = [jnp.asarray(args[i]) for i in pos]
    mine = jax.jit(jax.grad(loss(lambda a: o(*a)), argnums=tuple(range(len(pos)))))(*floats)
    tensors_idx = [i for i, (k, _) in enumerate(o._arg_order) if k == "tensor"]
    params = [a for (k, _), a in zip(o._arg_order, args) if k == "param"]
    theirs = jax.grad(loss(lambda a: ref(*[a[i] for i in tensors_idx], *params)), argnums=tuple(range(len(pos))))(*floats)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(np.asarray(m), np.asarray(t), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_check_grads(name):
    o, args, _ = case(name, np.float64, special=False, seed=3)
    pos = _float_positions(o, args)

    def f(*floats):
        a = list(args)
        for i, x in zip(pos, floats):
            a[i] = x
        outs = as_tuple(o(*a))
        return tuple(y for y in outs if jnp.issubdtype(y.dtype, jnp.floating))

    order = 2 if o.vjp_op is not None and op_jax.op(o.vjp_op).differentiable else 1
    check_grads(f, [jnp.asarray(args[i]) for i in pos], order=order, modes=["rev"], eps=1e-4, atol=1e-5, rtol=1e-5)


def test_second_order_through_the_vjp_op_and_refusal_without_one():
    o = op_jax.op("builtin/tanh")
    x = jnp.linspace(-1.0, 1.0, 7)
    hess_diag = jax.grad(lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(o(y)))(x)))(x)
    np.testing.assert_allclose(hess_diag, -2 * jnp.tanh(x) * (1 - jnp.tanh(x) ** 2), rtol=1e-12)


def test_a_non_differentiable_op_refuses_grad_naming_it():
    # The derived VJP op of exp declares `backward = none`.
    o = op_jax.op("builtin/exp/vjp")
    x = jnp.linspace(0.0, 1.0, 4, dtype=jnp.float32)
    assert np.allclose(o(x, jnp.ones_like(x)), np.exp(np.asarray(x)))
    with pytest.raises(op_jax.NotDifferentiableError, match="builtin/exp/vjp@1"):
        jax.grad(lambda x: jnp.sum(o(x, jnp.ones_like(x))))(x)
    # An integer output carries no gradient: differentiating around it is fine.
    am = op_jax.op("builtin/argmax_rows")
    y = jnp.arange(6.0).reshape(2, 3)
    g = jax.grad(lambda y: jnp.sum(am(y).astype(y.dtype) * y[:, 0]))(y)
    np.testing.assert_array_equal(g, [[2.0, 0, 0], [2.0, 0, 0]])


@pytest.mark.parametrize("name", NAMES)
def test_vmap_equals_a_loop(name):
    o, args, _ = case(name, np.float32, special=False, seed=4)
    tensors, _ = split(o, args)
    rng = np.random.default_rng(5)
    batch = [np.stack([t] + [_perturb(rng, t) for _ in range(2)]) for t in tensors]
    f = lambda *t: _call(o, args, t)
    got = as_tuple(jax.jit(jax.vmap(f))(*batch))
    for b in range(3):
        want = as_tuple(f(*[x[b] for x in batch]))
        for g, w in zip(got, want):
            same_bits(g[b], w)


def _perturb(rng, t):
    t = np.asarray(t)
    if np.issubdtype(t.dtype, np.floating):
        return (t + rng.standard_normal(t.shape)).astype(t.dtype)
    return rng.permutation(t.ravel()).reshape(t.shape)


def test_nested_vmap_and_unbatched_arguments():
    add = op_jax.op("builtin/add")
    a = jnp.arange(2 * 3 * 5, dtype=jnp.float32).reshape(2, 3, 5)
    b = jnp.linspace(0, 1, 5, dtype=jnp.float32)
    got = jax.jit(jax.vmap(jax.vmap(add, in_axes=(0, None)), in_axes=(0, None)))(a, b)
    want = np.stack([np.stack([np.asarray(add(a[i, j], b)) for j in range(3)]) for i in range(2)])
    same_bits(got, want)
    # A batch axis that is not leading.
    got = jax.vmap(add, in_axes=(1, None))(a[0].T, b)
    same_bits(got, np.stack([np.asarray(add(a[0, j], b)) for j in range(3)]))


def test_vmap_of_grad():
    o = op_jax.op("builtin/sigmoid")
    xs = jnp.linspace(-2, 2, 12).reshape(3, 4)
    got = jax.vmap(jax.grad(lambda x: jnp.sum(o(x))))(xs)
    s = jax.nn.sigmoid(xs)
    np.testing.assert_allclose(got, s * (1 - s), rtol=1e-12)
