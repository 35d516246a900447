"""Bad inputs raise typed Python exceptions naming the op at trace time (nothing runs), and the
interpreter survives; backend choice takes effect on already-jitted functions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import op_jax

BAD = [
    ("builtin/matmul", lambda o: o(jnp.ones((2, 3)), jnp.ones((4, 5))), r"input `b` axis 0 is `k` = 3"),
    ("builtin/matmul", lambda o: o(jnp.ones((2, 3, 1)), jnp.ones((3, 5))), r"must have rank 2"),
    ("builtin/exp", lambda o: o(jnp.ones(3, jnp.int32)), r"not a member of `T`"),
    ("builtin/exp", lambda o: o(jnp.ones(3, jnp.complex64)), r"no dtype for"),
    ("builtin/add", lambda o: o(jnp.ones(3, jnp.float32), jnp.ones(3, jnp.float64)), r"must be `f32`, got `f64`"),
    ("builtin/add", lambda o: o(jnp.ones(3), jnp.ones(4)), r"do not broadcast"),
    ("builtin/unfold", lambda o: o(jnp.ones(3), 5, 1), r"constraint `w <= n` is violated"),
    ("builtin/unfold", lambda o: o(jnp.ones(8), 2, 0), r"constraint `s >= 1` is violated"),
    ("builtin/unfold", lambda o: o(jnp.ones(8), -2, 1), r"outside the range of u32"),
    ("builtin/unfold", lambda o: o(jnp.ones(8), 2**40, 1), r"outside the range of u32"),
    ("builtin/unfold", lambda o: o(jnp.ones(8), 2.5, 1), r"must be an integer"),
    ("builtin/unfold", lambda o: o(jnp.ones(8), True, 1), r"must be an integer"),
    ("builtin/unfold", lambda o: o(jnp.ones(8), 2), r"missing parameter `s`"),
    ("builtin/unfold", lambda o: jax.jit(lambda x, w: o(x, w, 1))(jnp.ones(8), 2), r"must be a static Python number"),
    ("builtin/slice", lambda o: o(jnp.ones(8), 0, 9, 1), r"constraint `stop <= n`"),
    ("builtin/median_rows", lambda o: o(jnp.ones((1, 2000))), r"constraint `c <= 1024`"),
    ("builtin/reshape", lambda o: o(jnp.ones(7), 2), r"constraint `n % c == 0`"),
    ("builtin/mean", lambda o: o(jnp.ones(0)), r"constraint `n >= 1`"),
    ("builtin/exp", lambda o: o(jnp.ones(8), 2), r"takes 1 arguments, got 2"),
    ("builtin/exp", lambda o: o(jnp.ones(8), y=2), r"unknown argument"),
]


@pytest.mark.parametrize("name,call,message", BAD, ids=[f"{n}:{m}" for n, _, m in BAD])
def test_a_broken_contract_raises_at_trace_time_naming_the_op(name, call, message):
    o = op_jax.op(name)
    with pytest.raises(op_jax.ContractError, match=message) as e:
        jax.jit(lambda: call(o))()  # traced only: the error comes before anything is compiled
    assert o.id in str(e.value)
    assert isinstance(e.value, op_jax.OpError) and isinstance(e.value, ValueError)


def test_shape_inference_runs_nothing():
    # eval_shape traces without executing: the op's outputs come from the contract alone.
    before = op_jax.provenance("builtin/conv1d")
    s = jax.eval_shape(op_jax.op("builtin/conv1d"), jax.ShapeDtypeStruct((100,), jnp.float32), jax.ShapeDtypeStruct((7,), jnp.float32))
    assert s.shape == (94,) and s.dtype == jnp.float32
    assert op_jax.provenance("builtin/conv1d") == before


def test_unknown_op():
    with pytest.raises(op_jax.UnknownOpError, match="builtin/nope"):
        op_jax.op("builtin/nope")


def test_backend_choice_takes_effect_on_a_jitted_function():
    o = op_jax.op("builtin/exp")
    f = jax.jit(o)
    x = jnp.linspace(-1, 1, 8, dtype=jnp.float32)
    np.asarray(f(x))
    assert op_jax.provenance("builtin/exp")["backend"] == "cpu"
    try:
        op_jax.set_backend("builtin/exp", "reference")
        np.asarray(f(x))
        p = op_jax.provenance("builtin/exp")
        assert p["backend"] == "reference" and p["content_hash"] == o.identity
    finally:
        op_jax.set_backend("builtin/exp", None)
    np.asarray(f(x))
    assert op_jax.provenance("builtin/exp")["backend"] == "cpu"
    with pytest.raises(op_jax.OpError, match="unknown backend `gpu`"):
        op_jax.set_backend("builtin/exp", "gpu")
