"""A user op registered after import is a JAX function like a built-in; the same identity again
is a no-op; a different identity under a name@version already registered is refused with both
remedies named."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import op_jax
from op_jax import _op_jax


def test_a_user_op_registered_after_import_then_the_same_identity_again_then_another():
    op_id = _op_jax._register_fixture(0)
    assert op_id == "user/op_jax_fixture/copy@1"
    op_jax.refresh()
    o = op_jax.op(op_id)
    assert o.source == "user"
    x = jnp.arange(5, dtype=jnp.float32)
    np.testing.assert_array_equal(jax.jit(o)(x), x)
    assert f"op_jax:{op_id}:{o.identity[:16]}" in op_jax._registered
    # The same identity again: a no-op (same op, same target).
    assert _op_jax._register_fixture(0) == op_id
    op_jax.refresh()
    assert op_jax.op(op_id).identity == o.identity
    # Another identity under the same name@version: refused, both remedies named.
    with pytest.raises(op_jax.RegistrationError) as e:
        _op_jax._register_fixture(1)
    msg = str(e.value)
    assert "user/op_jax_fixture/copy@1" in msg and "bump the version" in msg and "new name" in msg
    # The registered op is unchanged.
    np.testing.assert_array_equal(jax.jit(o)(x), x)
