"""A user's own ops in JAX: `examples/user_ops` is a crate of its own whose `#[pymodule]` registers
its op and calls `op_jax::init_module` (the few lines op-jax/README.md documents). Imported
before op_jax it becomes op_jax's native module, so the user's op runs beside the built-ins
under jit, grad and the project's checks; imported after op_jax it is refused. Each case runs
in a fresh interpreter (`ci.sh` builds and installs the module)."""

import subprocess
import sys
import textwrap

USE = textwrap.dedent(
    """
    import my_ops, op_jax, jax, jax.numpy as jnp, numpy as np
    assert op_jax._native.__name__.split(".")[-1] == "my_ops", op_jax._native
    cube = op_jax.op("user/my_ops/cube")
    x = np.linspace(-2, 2, 9, dtype=np.float32)
    y = jax.jit(cube)(x)
    assert np.asarray(y).tobytes() == np.asarray(op_jax.rust_call("user/my_ops/cube", x)).tobytes()
    np.testing.assert_allclose(y, x.astype(np.float64) ** 3, rtol=1e-6)
    g = jax.grad(lambda x: jnp.sum(cube(x) * 2))(x)
    np.testing.assert_allclose(g, 6 * x.astype(np.float64) ** 2, rtol=1e-6)
    # The built-ins and the example median share the registry.
    np.testing.assert_allclose(op_jax.op("builtin/exp")(x), np.exp(x), rtol=1e-6)
    assert "user/example/windowed_median@1" in op_jax.ops()
    # The project's checks on the user's op, and one set of exception classes.
    assert op_jax.gradcheck("user/my_ops/cube")["passed"]
    assert "conformed" in [v["verdict"] for v in op_jax.conformance("user/my_ops/cube")]
    try:
        cube(jnp.ones((2, 2), jnp.float32))
        raise SystemExit("a rank-2 input was accepted")
    except op_jax.ContractError as e:
        assert "user/my_ops/cube@1" in str(e), e
    print("ok")
    """
)

LATE = textwrap.dedent(
    """
    import op_jax
    try:
        import my_ops
    except ImportError as e:
        assert "must be imported before op_jax" in str(e), e
        print("refused")
    """
)


def run(script):
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.strip().splitlines()[-1]


def test_a_users_module_runs_its_ops_beside_the_builtins():
    assert run(USE) == "ok"


def test_a_users_module_imported_after_op_jax_is_refused():
    assert run(LATE) == "refused"
