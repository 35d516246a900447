"""Receipts through JAX: conformance here mints a receipt that the process holds; later calls
name it in their provenance; an artefact traced afterwards carries its digest; in another
process `verify` reports the op unverified until a receipt valid on this machine is held, and
a tampered receipt is refused. Each process is fresh (no receipt held by another test)."""

import json
import subprocess
import sys
import textwrap

import pytest

MAKE = textwrap.dedent(
    """
    import sys, json, jax, jax.numpy as jnp, numpy as np, op_jax
    sq = op_jax.op("builtin/square")
    x = jnp.linspace(-1, 1, 8, dtype=jnp.float32)
    assert op_jax.receipts("builtin/square") == []
    op_jax.set_backend("builtin/square", "cpu")
    jax.jit(lambda x: sq(x))(x).block_until_ready()
    assert op_jax.provenance("builtin/square")["receipt"] is None, "no receipt before conformance"
    before = op_jax.verify(op_jax.export(jax.jit(lambda x: sq(x)))(x))[0]
    assert before["receipts"] == [] and not before["verified_here"], before
    [v] = [v for v in op_jax.conformance("builtin/square", "cpu") if v["dtypes"] in ("", "T = f32")]
    assert v["verdict"] == "conformed", v
    held = op_jax.receipts("builtin/square")
    mine = [r for r in held if r["digest"] == v["digest"]]
    assert mine and mine[0]["valid_here"] and mine[0]["backend"] == "cpu", held
    jax.jit(lambda x: sq(x) + 0)(x).block_until_ready()
    assert op_jax.provenance("builtin/square")["receipt"] == v["digest"], op_jax.provenance("builtin/square")
    exported = op_jax.export(jax.jit(lambda x: sq(x)))(x)
    [info] = op_jax.verify(exported)
    assert "cpu:" + v["digest"] in info["receipts"] and info["verified_here"], info
    open(sys.argv[1] + "/sq.bin", "wb").write(exported.serialize())
    json.dump([r["receipt"] for r in op_jax.conformance("builtin/square", "cpu") if r["verdict"] == "conformed"], open(sys.argv[1] + "/receipts.json", "w"))
    print(v["digest"])
    """
)

LOAD = textwrap.dedent(
    """
    import sys, json, jax, numpy as np, op_jax
    out_dir, digest = sys.argv[1], sys.argv[2]
    exported = op_jax.deserialize(open(out_dir + "/sq.bin", "rb").read())
    [info] = op_jax.verify(exported)
    assert info["registered"] and "cpu:" + digest in info["receipts"], info
    assert not info["verified_here"], "this process holds no receipt yet"
    receipts = json.load(open(out_dir + "/receipts.json"))
    tampered = [dict(r, cases=r["cases"] + 1) for r in receipts]
    assert op_jax.present_receipts(tampered) == (0, len(tampered)), "a tampered receipt is refused"
    assert not op_jax.verify(exported)[0]["verified_here"]
    try:
        op_jax.present_receipts('{"not": "a receipt"}')
        raise SystemExit("a non-receipt was accepted")
    except op_jax.VerificationError:
        pass
    assert op_jax.present_receipts(receipts) == (len(receipts), 0)
    [info] = op_jax.verify(exported)
    assert info["verified_here"] and "cpu:" + digest in info["receipts_here"], info
    exported.call(np.linspace(-1, 1, 8, dtype=np.float32))
    print("verified")
    """
)


def run(script, *args):
    p = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.strip().splitlines()[-1]


def test_a_receipt_minted_here_travels_with_the_artefact_and_verifies_elsewhere(tmp_path):
    digest = run(MAKE, str(tmp_path))
    assert len(digest) == 64
    assert run(LOAD, str(tmp_path), digest) == "verified"
