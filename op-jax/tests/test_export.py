"""jax.export across processes: an artefact made in one process runs bit-identically in a fresh
one that imports op_jax; an artefact naming an op identity the loading process does not hold is
refused, never run against different code."""

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import op_jax

MAKE = textwrap.dedent(
    """
    import sys, jax, jax.numpy as jnp, numpy as np, op_jax
    jax.config.update("jax_enable_x64", True)
    exp, mm, med, unfold = (op_jax.op(n) for n in ["builtin/exp", "builtin/matmul", "builtin/median_rows", "builtin/unfold"])

    def f(x, a, b):
        return med(unfold(exp(x), 5, 1)), mm(a, b)

    def g(x):
        return jax.grad(lambda x: jnp.sum(med(unfold(jnp.tanh(x), 5, 1))))(x)

    rng = np.random.default_rng(0)
    x = rng.standard_normal(64).astype(np.float32)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    out_dir = sys.argv[1]
    for name, fun, args in [("f", f, (x, a, b)), ("g", g, (x,))]:
        exported = op_jax.export(jax.jit(fun))(*args)
        open(f"{out_dir}/{name}.bin", "wb").write(exported.serialize())
        outs = jax.jit(fun)(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        np.savez(f"{out_dir}/{name}.npz", *args)
        np.savez(f"{out_dir}/{name}_out.npz", *[np.asarray(o) for o in outs])
        print(name, " ".join(op_jax.targets_of(exported)))
    """
)

LOAD = textwrap.dedent(
    """
    import sys, jax, numpy as np, op_jax
    jax.config.update("jax_enable_x64", True)
    out_dir, name = sys.argv[1], sys.argv[2]
    exported = op_jax.deserialize(open(f"{out_dir}/{name}.bin", "rb").read())
    args = list(np.load(f"{out_dir}/{name}.npz").values())
    want = list(np.load(f"{out_dir}/{name}_out.npz").values())
    got = exported.call(*args)
    got = got if isinstance(got, (tuple, list)) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes(), (g, w)
    print("bit-identical", [v["op"] for v in op_jax.verify(exported)])
    """
)


def run(code, *args):
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory):
    d = tmp_path_factory.mktemp("export")
    r = run(MAKE, d)
    assert r.returncode == 0, r.stderr
    return d, r.stdout


def test_export_runs_bit_identically_in_a_fresh_process(artefacts):
    d, made = artefacts
    assert "op_jax:builtin/exp@1:" in made and "op_jax:builtin/median_rows@1:" in made
    for name in ["f", "g"]:
        r = run(LOAD, d, name)
        assert r.returncode == 0, r.stderr
        assert "bit-identical" in r.stdout


def test_the_target_names_carry_the_identity(artefacts):
    d, made = artefacts
    exp = op_jax.op("builtin/exp")
    assert f"op_jax:builtin/exp@1:{exp.identity[:16]}" in made
    # The gradient artefact runs the backward through a VJP op or the pullback target.
    g_line = [l for l in made.splitlines() if l.startswith("g ")][0]
    assert "median_rows_vjp@1" in g_line or ":pullback" in g_line


def _tampered(blob: bytes, op: str) -> bytes:
    """The artefact as if made by another build of `op`: its identity prefix changed."""
    prefix = op_jax.op(op).identity[:16]
    other = "0123456789abcdef" if prefix != "0123456789abcdef" else "fedcba9876543210"
    assert blob.count(prefix.encode()) >= 1
    return blob.replace(prefix.encode(), other.encode())


def test_an_artefact_of_a_changed_op_is_refused(artefacts, tmp_path):
    d, _ = artefacts
    blob = _tampered(open(d / "f.bin", "rb").read(), "builtin/exp")
    with pytest.raises(op_jax.IdentityError, match=r"builtin/exp@1.*0123456789abcdef"):
        op_jax.deserialize(blob)
    # Without op_jax.deserialize's check, XLA itself finds no handler under that name.
    exported = jax.export.deserialize(bytearray(blob))
    assert not all(v["registered"] for v in op_jax.verify(exported))
    args = list(np.load(d / "f.npz").values())
    with pytest.raises(Exception, match="op_jax:builtin/exp@1:0123456789abcdef"):
        exported.call(*args)


def test_a_call_with_another_identity_is_refused_by_the_handler():
    exp = op_jax.op("builtin/exp")
    call = jax.ffi.ffi_call(exp.target, jax.ShapeDtypeStruct((3,), jnp.float32))
    x = jnp.ones(3, jnp.float32)
    with pytest.raises(Exception, match=r"builtin/exp@1.*refused"):
        np.asarray(call(x, op="builtin/exp@1", identity="0" * 64, ranks=np.array([1], np.int64)))
    with pytest.raises(Exception, match="identity"):
        np.asarray(call(x, op="builtin/exp@1", ranks=np.array([1], np.int64)))
    with pytest.raises(Exception, match="no op named"):
        np.asarray(call(x, op="builtin/nope@1", identity=exp.identity, ranks=np.array([1], np.int64)))
    # The interpreter is still alive and the op still runs.
    assert np.allclose(exp(x), np.e)
