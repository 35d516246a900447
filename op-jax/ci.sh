#!/usr/bin/env bash
# Builds op-jax and runs its Python tests: a virtual environment at op-jax/.venv (created if
# absent) with the pinned packages of requirements.txt, the native module built by
# `maturin develop --release` (into op-jax/target, its own workspace and lock), then pytest.
# Usage: op-jax/ci.sh [pytest args...]   (PYTHON picks the interpreter; 3.11 by default)
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
# Formatting, as for the root workspace (its rustfmt.toml applies here too).
cargo fmt --check
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
# `--release`: the tests call every op many times; measured here, the release build is the one
# whose handler overhead is representative (see README).
.venv/bin/maturin develop --release --quiet
# A user's own module (examples/user_ops, the README's template), for tests/test_user_module.py.
(cd examples/user_ops && ../../.venv/bin/maturin develop --release --quiet)
# The Rust side: unit tests (the buffer copies, the fixtures' generated tests) and doctests
# (`init_module`'s example), in the release profile maturin just built (its dependencies reused).
# op-jax builds op-runtime without its wgpu backend (JAX calls run on the host), so the
# generated conformance tests of the ops linked here could never meet `OP_REQUIRE_GPU_ADAPTER=1`
# (set by .ci/run for the root workspace, where wgpu is compiled in and the same ops conform on
# the adapter): it is unset for this step only.
PYO3_PYTHON="$PWD/.venv/bin/python" env -u OP_REQUIRE_GPU_ADAPTER cargo test --release -q
.venv/bin/python -m pytest -q tests "$@"
