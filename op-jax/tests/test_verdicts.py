"""Verdicts from Python: op_jax.conformance and op_jax.gradcheck run op-runtime's own checks and
return plain, JSON-able dicts. A built-in conforms with a receipt; a user op whose cpu kernel is
wrong on purpose is rejected with its class and case beside a correct one; a kernel that aborts
is a verdict (it runs in a child process forked from this interpreter, with XLA's threads busy)
and the interpreter goes on; gradcheck passes a built-in's backward and rejects a wrong VJP with
the element that shows it. A check that cannot run raises; a rejection never does."""

import faulthandler
import json
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import op_jax
from op_jax import _op_jax

GOOD = "user/op_jax_fixture/double@1"
SHIFTED = "user/op_jax_fixture/double_shifted@1"
ABORTS = "user/op_jax_fixture/double_aborts@1"
BAD_VJP = "user/op_jax_fixture/cube_bad_vjp@1"


@pytest.fixture(scope="module")
def fixtures():
    ids = _op_jax._register_verdict_fixtures()
    assert ids == [GOOD, SHIFTED, ABORTS, BAD_VJP]
    op_jax.refresh()
    return ids


def test_a_builtin_conforms_on_every_backend_here_with_a_receipt():
    res = op_jax.conformance("builtin/exp")
    json.dumps(res, allow_nan=False)  # plain, strict JSON
    o = op_jax.op("builtin/exp")
    by = {}
    for r in res:
        assert r["op"] == o.id
        by.setdefault(r["backend"], []).append(r)
    assert set(by) == {"reference", "cpu", "wgpu", "cuda"}
    # One entry per instance (`exp` is declared over several float dtypes).
    assert len(by["cpu"]) == len(o.instances)
    for r in by["cpu"] + by["reference"]:
        assert r["verdict"] == "conformed", r
        assert len(r["digest"]) == 64 and r["receipt"]["digest"] == r["digest"]
        assert r["receipt"]["backend"] == r["backend"] and r["receipt"]["content_hash"] == r["content_hash"]
        assert r["cases"] > 0 and r["device"] and r["corpus_digest"]
        assert r["dtypes"].startswith("T = ")
    # This build has no GPU backend: a skip naming why, never a verdict.
    for r in by["wgpu"] + by["cuda"]:
        assert r["verdict"] == "skipped" and r["failure"] == "unavailable" and "not compiled" in r["reason"], r


def test_one_backend_by_name():
    res = op_jax.conformance("builtin/matmul", "cpu")
    assert {r["backend"] for r in res} == {"cpu"}
    assert all(r["verdict"] == "conformed" for r in res), res


def test_a_wrong_kernel_is_rejected_with_its_class_and_case_beside_a_correct_one(fixtures):
    # XLA's threads are up (a jitted call has run) when conformance forks its child.
    x = jnp.linspace(-1, 1, 8, dtype=jnp.float32)
    np.testing.assert_array_equal(jax.jit(op_jax.op(GOOD))(x), 2 * np.asarray(x))
    [bad] = op_jax.conformance(SHIFTED, "cpu")
    json.dumps(bad, allow_nan=False)
    assert bad["verdict"] == "rejected", bad
    assert bad["op"] == SHIFTED and bad["backend"] == "cpu"
    assert bad["class"] == bad["classes"][0] and "output shifted" in bad["classes"], bad["classes"]
    d = next(d for d in bad["defects"] if d["class"] == "output shifted")
    assert d["fault"]["kind"] == "mismatch" and d["fault"]["count"] > 0
    # The kernel is right for n <= 5: the case that shows the defect is larger, and carries
    # its input values (shrunk where the generator could).
    case = d["case"]
    [inp] = case["inputs"]
    assert inp["shape"][0] > 5 and len(inp["values"]) == inp["shape"][0]
    assert "case #" in case["text"] and SHIFTED in bad["message"]
    assert 0 < bad["failed"] <= bad["cases"]
    # The correct op, in the same process after the rejection, conforms.
    [good] = op_jax.conformance(GOOD, "cpu")
    assert good["verdict"] == "conformed", good
    # op-runtime's rule: default selection passes over a rejected kernel from then on, so the
    # op now runs on its reference, right again.
    x8 = jnp.arange(8, dtype=jnp.float32)
    np.testing.assert_array_equal(jax.jit(op_jax.op(SHIFTED))(x8), 2 * np.arange(8, dtype=np.float32))
    assert op_jax.provenance(SHIFTED)["backend"] == "reference"


def test_a_kernel_that_aborts_is_a_verdict_and_the_interpreter_goes_on(fixtures):
    # JAX busy in another thread while conformance forks its children (the GIL is released).
    stop = threading.Event()
    calls = []
    f = jax.jit(lambda v: jnp.sin(v) @ jnp.cos(v).T)

    def busy():
        v = jnp.ones((64, 64))
        while not stop.is_set():
            calls.append(float(f(v)[0, 0]))

    t = threading.Thread(target=busy)
    # The child inherits Python's signal handlers: faulthandler (pytest enables it) would print
    # this process's Python stacks from the aborting child. Off for the call, so the log shows
    # only real crashes; the verdict is the same either way.
    handler_was_on = faulthandler.is_enabled()
    faulthandler.disable()
    t.start()
    try:
        res = op_jax.conformance(ABORTS)
    finally:
        stop.set()
        t.join()
        if handler_was_on:
            faulthandler.enable()
    assert calls, "the JAX thread ran"
    json.dumps(res, allow_nan=False)
    by = {r["backend"]: r for r in res}
    cpu = by["cpu"]
    assert cpu["verdict"] == "rejected" and cpu["class"] == "crashed", cpu
    fault = cpu["defects"][0]["fault"]
    assert fault["kind"] == "died" and fault["death"] == "signal" and "SIGABRT" in fault["message"], fault
    assert cpu["case"]["inputs"][0]["shape"][0] > 5
    assert by["reference"]["verdict"] == "conformed"
    # Still here, and JAX still works.
    assert float(jax.jit(jnp.sum)(jnp.ones(4))) == 4.0


def test_gradcheck_passes_a_builtins_backward():
    r = op_jax.gradcheck("builtin/tanh")
    json.dumps(r, allow_nan=False)
    assert r["passed"] is True and r["op"] == "builtin/tanh@1"
    rep = r["report"]
    assert rep["content_hash"] == op_jax.op("builtin/tanh").identity
    assert rep["probes"] > 0 and rep["max_rel_err"] < 1e-3
    assert rep["negative_control"] and all(c["rejected"] for c in rep["negative_control"] if c["applicable"])
    assert r["summary"].startswith("gradcheck  builtin/tanh@1")


def test_gradcheck_rejects_a_wrong_vjp_naming_the_element(fixtures):
    r = op_jax.gradcheck(BAD_VJP)
    json.dumps(r, allow_nan=False)
    assert r["passed"] is False and r["rejection"] is True and r["kind"] == "mismatch", r
    assert BAD_VJP in r["message"] and r["form"] == "VJP"
    # `2 x^2` against `3 x^2`: the analytic derivative is two thirds of the numeric one.
    assert abs(r["analytic"] / r["numeric"] - 2 / 3) < 1e-3, r
    assert r["diff"] > r["allowed"] and 0 < r["failing"] <= r["checked"]
    loc = r["locus"]
    assert loc["input"] == "x" and len(loc["shape"]) == 1 and 0 <= loc["index"] < loc["shape"][0]
    assert loc["content_hash"] == op_jax.op(BAD_VJP).identity and loc["salt"] == 0
    assert loc["element"] == f"`x`[{loc['index']}]" and loc["text"] in r["message"]


def test_a_check_that_cannot_run_raises():
    with pytest.raises(op_jax.UnknownOpError, match="builtin/nope"):
        op_jax.conformance("builtin/nope")
    with pytest.raises(op_jax.UnknownOpError, match="builtin/nope"):
        op_jax.gradcheck("builtin/nope")
    with pytest.raises(op_jax.VerificationError, match="unknown backend `tpu`"):
        op_jax.conformance("builtin/exp", "tpu")
    # A backend named that cannot run the op here: no verdict to return.
    with pytest.raises(op_jax.VerificationError, match="nothing to conform on backend `cuda`"):
        op_jax.conformance("builtin/exp", "cuda")
    # Nothing to gradcheck on an op declared `backward = none`.
    with pytest.raises(op_jax.VerificationError, match="`builtin/greater@1` is declared `backward = none`"):
        op_jax.gradcheck("builtin/greater")
    # A VJP op derived from a backward has no declaration of its own: its forward is checked.
    with pytest.raises(op_jax.VerificationError, match="gradcheck the op it is the VJP of .`builtin/abs`."):
        op_jax.gradcheck("builtin/abs/vjp")
