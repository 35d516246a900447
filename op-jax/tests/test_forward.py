"""Forward mode: `jax.jvp` runs the op's own forward rules (the `:jvp` target: its JVP rules,
its differentiable VJP op or its graph, through `Tape::jvp`), reverse mode its declared
backward, and both agree with JAX's derivatives of the jax.numpy counterpart. Forward over
reverse (Hessian-vector products) goes through the VJP op; forward over forward is refused by
name."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import op_jax
from test_ops import DIFFERENTIABLE, _float_positions, as_tuple, case


def _floats_fn(o, args, ref=None):
    """The op (or its counterpart `ref`) as a function of its float tensor arguments only."""
    pos = _float_positions(o, args)
    tensors_idx = [i for i, (k, _) in enumerate(o._arg_order) if k == "tensor"]
    params = [a for (k, _), a in zip(o._arg_order, args) if k == "param"]

    def f(*floats):
        a = list(args)
        for i, x in zip(pos, floats):
            a[i] = x
        outs = as_tuple(o(*a) if ref is None else ref(*[a[i] for i in tensors_idx], *params))
        return tuple(y for y in outs if jnp.issubdtype(jnp.asarray(y).dtype, jnp.floating))

    return f, [jnp.asarray(args[i]) for i in pos]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_jvp_equals_jax_jvp_of_the_counterpart(name):
    o, args, ref = case(name, np.float64, special=False, seed=11)
    mine, xs = _floats_fn(o, args)
    theirs, _ = _floats_fn(o, args, ref)
    rng = np.random.default_rng(12)
    vs = [jnp.asarray(rng.standard_normal(x.shape)) for x in xs]
    y, t = jax.jit(lambda *a: jax.jvp(mine, a[: len(xs)], a[len(xs) :]))(*xs, *vs)
    y_ref, t_ref = jax.jvp(theirs, xs, vs)
    for a, b in zip(y, y_ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
    for a, b in zip(t, t_ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_check_grads_forward_and_forward_over_reverse(name):
    o, args, _ = case(name, np.float64, special=False, seed=13)
    f, xs = _floats_fn(o, args)
    check_grads(f, xs, order=1, modes=["fwd"], eps=1e-4, atol=1e-5, rtol=1e-5)
    if o.vjp_op is not None and op_jax.op(o.vjp_op).forward_mode:
        # Forward over reverse: forward mode through the pullback (the VJP op), against finite
        # differences of the pullback. (check_grads' own order 2 in "fwd" is forward over
        # forward, which is refused; see below.)
        ys = f(*xs)
        cts = tuple(jnp.asarray(np.random.default_rng(14).standard_normal(y.shape)) for y in ys)
        pullback = lambda *xs: jax.vjp(f, *xs)[1](cts)
        check_grads(pullback, xs, order=1, modes=["fwd"], eps=1e-4, atol=1e-5, rtol=1e-5)


def _lowered(fun, *args):
    return jax.jit(fun).lower(*args).as_text()


def test_jvp_runs_the_jvp_target_and_grad_the_backward():
    o = op_jax.op("builtin/tanh")
    x = jnp.linspace(-1.0, 1.0, 5)
    fwd = _lowered(lambda x, v: jax.jvp(o, (x,), (v,)), x, x)
    rev = _lowered(jax.grad(lambda x: jnp.sum(o(x))), x)
    assert o.target + ":jvp" in fwd and ":pullback" not in fwd
    assert ":jvp" not in rev


def test_forward_over_reverse_where_the_vjp_op_has_forward_mode_else_refused():
    have = [n for n in DIFFERENTIABLE if op_jax.op(n).vjp_op and op_jax.op(op_jax.op(n).vjp_op).forward_mode]
    lack = [n for n in DIFFERENTIABLE if op_jax.op(n).vjp_op and not op_jax.op(op_jax.op(n).vjp_op).forward_mode]
    print("forward over reverse:", have, "refused:", lack)
    if lack:
        o, args, _ = case(lack[0], np.float64, special=False, seed=15)
        f, xs = _floats_fn(o, args)
        g = lambda *xs: jax.vjp(f, *xs)[1](f(*xs))
        with pytest.raises(op_jax.NotDifferentiableError, match="has no forward mode"):
            jax.jvp(g, tuple(xs), tuple(xs))


def test_hessian_vector_product_reverse_over_reverse():
    o = op_jax.op("builtin/tanh")
    x = jnp.linspace(-1.0, 1.0, 7)
    v = jnp.linspace(0.5, 2.0, 7)
    g = jax.grad(lambda x: jnp.sum(o(x)))
    _, hv = jax.vjp(g, x)
    th = jnp.tanh(x)
    np.testing.assert_allclose(hv(v)[0], -2 * th * (1 - th**2) * v, rtol=1e-12)
    h = jax.jacrev(jax.jacrev(lambda x: jnp.sum(o(x))))(x)
    np.testing.assert_allclose(jnp.diag(h), -2 * th * (1 - th**2), rtol=1e-12)


def test_vmap_of_jvp_and_jvp_of_vmap_equal_loops():
    o = op_jax.op("builtin/sigmoid")
    xs = jnp.linspace(-2, 2, 12).reshape(3, 4)
    vs = jnp.linspace(1, 3, 12).reshape(3, 4)
    one = lambda x, v: jax.jvp(o, (x,), (v,))[1]
    got = jax.vmap(one)(xs, vs)
    got2 = jax.jvp(jax.vmap(o), (xs,), (vs,))[1]
    want = np.stack([np.asarray(one(xs[i], vs[i])) for i in range(3)])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got2, want)
    # An unbatched tangent beside batched inputs.
    got3 = jax.vmap(one, in_axes=(0, None))(xs, vs[0])
    np.testing.assert_array_equal(got3, np.stack([np.asarray(one(xs[i], vs[0])) for i in range(3)]))


def test_grad_of_vmap_transposes_a_batched_tangent():
    o = op_jax.op("builtin/mul")
    a = jnp.linspace(-1, 1, 12).reshape(3, 4)
    b = jnp.linspace(2, 3, 4)
    ga, gb = jax.grad(lambda a, b: jnp.sum(jax.vmap(o, in_axes=(0, None))(a, b) ** 2), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, 2 * a * b**2, rtol=1e-12)
    np.testing.assert_allclose(gb, jnp.sum(2 * a**2 * b, axis=0), rtol=1e-12)


def test_forward_over_forward_is_refused_naming_the_op():
    o = op_jax.op("builtin/exp")
    x = jnp.linspace(0.0, 1.0, 3)
    first = lambda x: jax.jvp(o, (x,), (jnp.ones_like(x),))[1]
    with pytest.raises(op_jax.NotDifferentiableError, match="builtin/exp@1"):
        jax.jvp(first, (x,), (jnp.ones_like(x),))


def test_jvp_of_a_non_differentiable_op_is_refused_naming_it():
    o = op_jax.op("builtin/exp/vjp")
    x = jnp.linspace(0.0, 1.0, 4)
    with pytest.raises(op_jax.NotDifferentiableError, match="builtin/exp/vjp@1"):
        jax.jvp(lambda x: o(x, jnp.ones_like(x)), (x,), (jnp.ones_like(x),))


def test_integer_inputs_and_outputs_carry_no_tangent():
    w = op_jax.op("builtin/where")
    c = jnp.asarray([1, 0, 1, 0], jnp.uint32)
    a, b = jnp.arange(4.0), -jnp.arange(4.0)
    _, t = jax.jvp(lambda a, b: w(c, a, b), (a, b), (jnp.ones(4), 2 * jnp.ones(4)))
    np.testing.assert_array_equal(t, [1.0, 2.0, 1.0, 2.0])
    am = op_jax.op("builtin/argmax_rows")
    y = jnp.arange(6.0).reshape(2, 3)
    out, t = jax.jvp(am, (y,), (jnp.ones_like(y),))
    assert t.dtype == jax.dtypes.float0 and out.dtype == jnp.uint32
