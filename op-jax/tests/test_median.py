"""The example's windowed median (user/example/windowed_median@1, the project's guiding op) is
served out of the box: registered on `import op_jax`, its outputs under jit bit-identical to the
Rust call (and to a numpy sliding median), its declared backward under jax.grad (check_grads,
and the cotangent routed to each window's selected element), vmap equal to a loop, conformance
and gradcheck from Python."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads
from numpy.lib.stride_tricks import sliding_window_view

import op_jax

NAME = "user/example/windowed_median"
ID = NAME + "@1"


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    assert a.tobytes() == b.tobytes(), f"\n{a}\n{b}"


def total_order(win):
    """Per row, the indices that sort it in IEEE 754 total order (-0 before +0), ties in input
    order: how the Rust reference sorts a window (no NaN here)."""
    return np.lexsort((~np.signbit(win), win), axis=-1)


def numpy_median(x, w):
    win = sliding_window_view(x, w)
    return np.take_along_axis(win, total_order(win)[:, w // 2 : w // 2 + 1], axis=1)[:, 0]


def argmedian(x, w):
    """The element each window selects."""
    win = sliding_window_view(x, w)
    return total_order(win)[:, w // 2] + np.arange(win.shape[0])


def signal(rng, n, dtype):
    x = rng.standard_normal(n)
    x[::11] = np.round(x[::11])  # ties
    return x.astype(dtype)


def test_registered_out_of_the_box():
    assert ID in op_jax.ops()
    assert ID in op_jax._examples.EXAMPLES
    o = op_jax.op(NAME)
    assert o.id == ID and o.source == "user" and o.differentiable
    assert o.inputs == ["x"] and o.params == ["w"]
    assert sorted(tuple(i) for i in o.instances) == sorted([("f16",), ("bf16",), ("f32",), ("f64",)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("w", [1, 3, 7, 31])
def test_jit_equals_the_rust_call_bit_for_bit(dtype, w):
    rng = np.random.default_rng(w)
    med = op_jax.op(NAME)
    for n in [w, w + 1, 100, 1000]:
        x = signal(rng, n, dtype)
        got = jax.jit(lambda v: med(v, w))(x)
        same_bits(got, op_jax.rust_call(NAME, x, w))
        same_bits(got, numpy_median(x, w))


def test_edge_values_and_half_precision():
    med = op_jax.op(NAME)
    x = np.array([0.0, -0.0, np.inf, -np.inf, 1e-40, -1e-40, 1.0, -1.0, 3.5, np.nan, 2.0, 0.0], np.float32)
    same_bits(jax.jit(lambda v: med(v, 3))(x), op_jax.rust_call(NAME, x, 3))
    for dt in [np.float16, jnp.bfloat16]:
        x = signal(np.random.default_rng(1), 64, dt)
        same_bits(jax.jit(lambda v: med(v, 5))(x), op_jax.rust_call(NAME, x, 5))


def test_the_cpu_kernels_serve_f32_and_f64_and_the_reference_the_half_types():
    med = op_jax.op(NAME)
    for dt, backend in [(np.float16, "reference"), (jnp.bfloat16, "reference"), (np.float32, "cpu"), (np.float64, "cpu")]:
        np.asarray(jax.jit(lambda v: med(v, 7))(np.linspace(0, 1, 50).astype(dt)))
        p = op_jax.provenance(NAME)
        assert p["backend"] == backend and p["content_hash"] == med.identity, (dt, p)


def test_a_broken_contract_raises_at_trace_time():
    med = op_jax.op(NAME)
    with pytest.raises(op_jax.ContractError, match="w % 2 == 1"):
        jax.jit(lambda v: med(v, 4))(jnp.ones(10))
    with pytest.raises(op_jax.ContractError, match="w <= n"):
        jax.jit(lambda v: med(v, 7))(jnp.ones(5))


def test_grad_is_the_declared_backward():
    med = op_jax.op(NAME)
    rng = np.random.default_rng(7)
    # Distinct values well apart: no order crossing within check_grads' steps.
    x = rng.permutation(np.linspace(-3, 3, 40))
    check_grads(lambda v: med(v, 5), (x,), order=1, modes=["rev"])
    for dtype in [np.float32, np.float64]:
        v = signal(rng, 50, dtype)
        c = rng.standard_normal(46).astype(dtype)
        g = jax.jit(jax.grad(lambda v: jnp.sum(med(v, 5) * c)))(v)
        want = np.zeros(50, dtype)
        np.add.at(want, argmedian(v, 5), c)
        same_bits(g, want)


def test_second_order_and_forward_mode_through_its_vjp_op():
    # The median's VJP op (examples/autodiff/median_vjp.rs) is linked: the median selects, so
    # its second derivative is zero away from order crossings, and its JVP gathers the tangent
    # from each window's selected element.
    med = op_jax.op(NAME)
    assert med.vjp_op == "user/example/windowed_median_vjp@1" and med.forward_mode
    rng = np.random.default_rng(9)
    x = rng.permutation(np.linspace(-3, 3, 40))
    c = rng.standard_normal(36)
    gg = jax.grad(lambda v: jnp.sum(jax.grad(lambda u: jnp.sum(med(u, 5) * c))(v) * v))(x)
    grad = np.zeros(40)
    np.add.at(grad, argmedian(x, 5), c)
    np.testing.assert_array_equal(gg, grad)  # d/dv [g(v) . v] = g + 0
    t = rng.standard_normal(40)
    y, ty = jax.jvp(lambda v: med(v, 5), (x,), (t,))
    same_bits(ty, t[argmedian(x, 5)])
    check_grads(lambda v: med(v, 5), (x,), order=2, modes=["rev"])
    check_grads(lambda v: med(v, 5), (x,), order=1, modes=["fwd"])


def test_vmap_equals_a_loop():
    med = op_jax.op(NAME)
    rng = np.random.default_rng(3)
    xs = signal(rng, 6 * 64, np.float32).reshape(6, 64)
    got = jax.jit(jax.vmap(lambda v: med(v, 7)))(xs)
    same_bits(got, np.stack([op_jax.rust_call(NAME, x, 7) for x in xs]))
    # Nested vmap, and grad under vmap.
    xs3 = xs.reshape(2, 3, 64)
    same_bits(jax.vmap(jax.vmap(lambda v: med(v, 7)))(xs3), np.asarray(got).reshape(2, 3, 58))
    gs = jax.vmap(jax.grad(lambda v: jnp.sum(med(v, 7))))(xs)
    same_bits(gs, np.stack([np.asarray(jax.grad(lambda v: jnp.sum(med(v, 7)))(x)) for x in xs]))


def test_conformance_and_gradcheck_from_python():
    res = op_jax.conformance(NAME, "cpu")
    by = {r["dtypes"]: r for r in res}
    # cpu kernels serve f32 and f64; the half-precision instances have none (a skip).
    assert by["T = f32"]["verdict"] == "conformed" and by["T = f64"]["verdict"] == "conformed", res
    assert by["T = f16"]["verdict"] == "skipped" and by["T = bf16"]["verdict"] == "skipped"
    g = op_jax.gradcheck(NAME)
    assert g["passed"] is True, g.get("message")
    assert g["report"]["backward"] == {"Vjp": {"path": "windowed_median_vjp"}}
    assert g["report"]["content_hash"] == op_jax.op(NAME).identity
