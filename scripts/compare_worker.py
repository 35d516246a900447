#!/usr/bin/env python3
"""The Python side of `cargo bench --bench cpu_compare`: runs what a user would call instead of
the built-ins and the example median (numpy, with OpenBLAS for matmul; scipy; bottleneck) on
the bench's own data, on request, and reports the time of each call.

Not meant to be run by hand: the bench starts it with a pipe on stdin and stdout and drives it
line by line, interleaving its requests with its own timed calls. Requests (one per line):

  load NAME PATH DTYPE D0 [D1]   read a raw little-endian array the bench wrote      -> ok
  run IMPL OP REPS ARGS...       REPS timed calls (the result freed inside the timing)
                                 -> "t t t ..." seconds of thread CPU time per call, or of
                                    wall time when the environment asks for several threads
  save IMPL OP PATH ARGS...      one call, its result written raw to PATH            -> ok
  quit

On start it prints one line: "ready <versions>", or "missing <what>" and exits 0 when a package
is not importable (the bench then prints that it skipped the comparison). Every error is
reported as one line "error <text>"; the bench treats it as fatal for the line.
"""
import os
import sys
import time


def main():
    try:
        import numpy as np
    except Exception as e:  # any import failure means: nothing to compare with
        print(f"missing numpy ({e})", flush=True)
        return
    have = {"numpy": np.__version__}
    optional = {}
    for name in ("scipy", "bottleneck"):
        try:
            optional[name] = __import__(name)
            have[name] = optional[name].__version__
        except Exception:
            pass
    if "scipy" in optional:
        import scipy.ndimage  # noqa: F401  (imported on use below; loaded once here)
        import scipy.signal  # noqa: F401
        import scipy.special  # noqa: F401
    threads = int(os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    clock = time.thread_time if threads == 1 else time.perf_counter
    blas = "?"
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {}).get("name", "?") + " " + str(
            cfg.get("Build Dependencies", {}).get("blas", {}).get("version", "")
        )
    except Exception:
        pass
    print("ready " + " ".join(f"{k}={v}" for k, v in have.items()) + f" blas={blas.replace(' ', '-')} threads={threads}", flush=True)

    arrays = {}

    def ops(impl, op, args):
        """A zero-argument callable computing `op` the way `impl` does (None if unknown)."""
        a = [arrays[n] if n in arrays else n for n in args]
        if impl == "numpy":
            table = {
                "copy": lambda: np.copyto(a[1], a[0]),
                "exp": lambda: np.exp(a[0]),
                "log": lambda: np.log(a[0]),
                "tanh": lambda: np.tanh(a[0]),
                "add": lambda: np.add(a[0], a[1]),
                "sub": lambda: np.subtract(a[0], a[1]),
                "mul": lambda: np.multiply(a[0], a[1]),
                "div": lambda: np.divide(a[0], a[1]),
                "neg": lambda: np.negative(a[0]),
                "scale": lambda: np.multiply(a[0], a[0].dtype.type(float(a[1]))),
                "relu": lambda: np.maximum(a[0], a[0].dtype.type(0)),
                "abs": lambda: np.abs(a[0]),
                "sqrt": lambda: np.sqrt(a[0]),
                "square": lambda: np.square(a[0]),
                # numpy has no sigmoid: the expression a numpy user writes (scipy's expit below).
                "sigmoid": lambda: np.reciprocal(np.add(np.exp(np.negative(a[0])), a[0].dtype.type(1))),
                "maximum": lambda: np.maximum(a[0], a[1]),
                "minimum": lambda: np.minimum(a[0], a[1]),
                "sum": lambda: np.sum(a[0]),
                "mean": lambda: np.mean(a[0]),
                "mse_loss": lambda: np.mean(np.square(np.subtract(a[0], a[1]))),
                "matmul": lambda: np.matmul(a[0], a[1]),
                "conv1d": lambda: np.correlate(a[0], a[1], "valid"),
            }
            return table.get(op)
        if impl == "scipy" and "scipy" in optional:
            sp = optional["scipy"]
            table = {
                "conv1d": lambda: sp.signal.correlate(a[0], a[1], "valid", method="auto"),
                "sigmoid": lambda: sp.special.expit(a[0]),
                # Centred windows of `w` (mode irrelevant inside): out[i + w//2] is our out[i].
                "median": lambda: sp.ndimage.median_filter(a[0], size=int(a[1])),
            }
            return table.get(op)
        if impl == "bottleneck" and "bottleneck" in optional:
            bn = optional["bottleneck"]
            # Trailing windows: move_median(x, w)[i + w - 1] is our out[i].
            table = {"median": lambda: bn.move_median(a[0], int(a[1]))}
            return table.get(op)
        return None

    def aligned(impl, op, args, r):
        """The result as the bench's kernel lays it out (medians trimmed to full windows)."""
        if op == "median":
            w = int(args[1])
            return r[w - 1 :] if impl == "bottleneck" else r[w // 2 : len(r) - w // 2]
        return np.asarray(r)

    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        try:
            if parts[0] == "quit":
                break
            if parts[0] == "load":
                name, path, dtype, dims = parts[1], parts[2], parts[3], [int(d) for d in parts[4:]]
                arrays[name] = np.fromfile(path, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(dims)
                print("ok", flush=True)
            elif parts[0] == "run":
                impl, op, reps, args = parts[1], parts[2], int(parts[3]), parts[4:]
                f = ops(impl, op, args)
                if f is None:
                    print(f"error {impl} has no {op}", flush=True)
                    continue
                out = []
                for _ in range(reps):
                    t = clock()
                    r = f()
                    del r
                    out.append(clock() - t)
                print(" ".join(f"{t:.9f}" for t in out), flush=True)
            elif parts[0] == "save":
                impl, op, path, args = parts[1], parts[2], parts[3], parts[4:]
                f = ops(impl, op, args)
                if f is None:
                    print(f"error {impl} has no {op}", flush=True)
                    continue
                r = aligned(impl, op, args, f())
                np.ascontiguousarray(np.asarray(r, dtype=np.float64)).tofile(path)
                print("ok", flush=True)
            else:
                print(f"error unknown request {parts[0]}", flush=True)
        except Exception as e:
            print(f"error {type(e).__name__}: {e}".replace("\n", " "), flush=True)


if __name__ == "__main__":
    main()
