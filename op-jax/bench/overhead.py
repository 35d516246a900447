"""Issue 35's benchmark (a benchmark, not a test): the cost of an op inside `jax.jit`.

1. Per-call time of a jitted function that calls `builtin/exp` on f32[16] through op_jax,
   against the same call of an FFI handler that does nothing (`op_jax._op_jax.empty_handler`,
   given the same operands and attributes) and against `jax.numpy.exp`. The op's overhead is
   its time minus the empty handler's (the bound: 2 us).
2. The windowed median (w = 15) on 1M f32 samples through `jax.jit` against the Rust call of
   the same op timed in Rust (`OpHandle::call`, no Python, no copies).

Each figure is the median of `--repeats` runs of `--calls` calls each (per-call mean within a
run). Run: `op-jax/.venv/bin/python op-jax/bench/overhead.py` after `op-jax/ci.sh` built the
module. Prints one line per figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import op_jax
from op_jax import _op_jax as native

EMPTY = "op_jax_bench:empty"


def per_call(fs, x, calls: int, repeats: int) -> list[float]:
    """Per-call seconds of each function, the median over `repeats` runs of `calls` calls; the
    functions take turns within each repeat, so they share the machine's noise."""
    for f in fs:
        f(x).block_until_ready()
    runs: list[list[float]] = [[] for _ in fs]
    for _ in range(repeats):
        for k, f in enumerate(fs):
            t = time.perf_counter()
            for _ in range(calls):
                f(x).block_until_ready()
            runs[k].append((time.perf_counter() - t) / calls)
    return [statistics.median(r) for r in runs]


def overhead(calls: int, repeats: int) -> None:
    jax.ffi.register_ffi_target(EMPTY, native.empty_handler(), platform="cpu")
    exp = op_jax.op("builtin/exp")
    x = jnp.linspace(0.0, 1.0, 16, dtype=jnp.float32)
    c = exp._trace([x], [])
    empty_call = jax.ffi.ffi_call(EMPTY, list(c.outs))
    f_empty = jax.jit(lambda x: empty_call(x, **c.attributes())[0])
    f_op = jax.jit(lambda x: exp(x))
    f_jnp = jax.jit(jnp.exp)
    t_empty, t_op, t_jnp = per_call([f_empty, f_op, f_jnp], x, calls, repeats)
    # Time inside the op's handler itself (measured in Rust around each entry).
    ns0, n0 = native.handler_time()
    for _ in range(calls):
        f_op(x).block_until_ready()
    ns1, n1 = native.handler_time()
    t_handler = (ns1 - ns0) / max(1, n1 - n0) * 1e-9
    print(f"jit call, f32[16]: empty FFI handler {t_empty * 1e6:.2f} us, builtin/exp {t_op * 1e6:.2f} us, "
          f"jnp.exp {t_jnp * 1e6:.2f} us; op overhead above the empty handler {(t_op - t_empty) * 1e6:.2f} us (bound 2 us), "
          f"of which inside the handler {t_handler * 1e6:.2f} us")


def median_1m(repeats: int) -> None:
    name = "user/example/windowed_median"
    if name not in {o.split("@")[0] for o in op_jax.ops()}:
        print(f"{name}: not registered in this build, skipped")
        return
    med = op_jax.op(name)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    w = 15
    f = jax.jit(lambda x: med(x, w))
    xj = jnp.asarray(x)
    [t_jax] = per_call([f], xj, 3, repeats)
    t_rust = native.time_call(med.id, [("f32", [x.size], x.tobytes())], [w], repeats * 3)
    print(f"{name} w={w}, 1M f32: through jax.jit {t_jax * 1e3:.2f} ms, Rust call {t_rust * 1e3:.2f} ms, "
          f"ratio {t_jax / t_rust:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    print(f"jax {jax.__version__}, {os.cpu_count()} cpus")
    overhead(a.calls, a.repeats)
    median_1m(a.repeats)


if __name__ == "__main__":
    main()
