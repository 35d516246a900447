"""The example ops op_jax serves out of the box: the example's windowed median
(``user/example/windowed_median@1``, compiled into the native module from
``examples/windowed_median/``), registered in the process registry when ``op_jax`` is imported,
before the package registers every op's FFI targets."""

from __future__ import annotations

from . import _op_jax as _native

EXAMPLES: tuple[str, ...] = tuple(_native._register_examples())
