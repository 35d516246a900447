#!/usr/bin/env bash
# CUDA checks for a session lent an NVIDIA machine (the `device` tool). That machine has no
# network, so the binaries are built here and carried:
#   here  : bash scripts/device-cuda.sh prepare       # release binaries into device-bin/ (~30 MB)
#   device: run(command = "bash scripts/device-cuda.sh run", carry = ["device-bin"])
# With OP_REQUIRE_CUDA=1 an unavailable CUDA backend is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

exe_of() { # exe_of <cargo args...>: the test executable cargo builds for them
    cargo test --release --no-run --message-format=json "$@" 2>/dev/null |
        python3 -c 'import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        print(m["executable"])' | tail -1
}

case "${1:-}" in
prepare)
    rm -rf device-bin && mkdir -p device-bin
    cargo build --release --example windowed_median
    cp target/release/examples/windowed_median device-bin/windowed_median
    cp "$(exe_of -p op-runtime --lib)" device-bin/op_runtime_lib
    cp "$(exe_of --test conformance_median)" device-bin/conformance_median
    du -sh device-bin && ls -la device-bin
    ;;
run)
    out="${OUT:-/tmp/op-device-out}"; mkdir -p "$out"
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu \
             $(python3 -c 'import nvidia.cuda_nvrtc as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null || true); do
        [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
    export OP_REQUIRE_CUDA=1 OP_CACHE_DIR="$out/ptx-cache"
    (nvidia-smi -L || true) | tee "$out/nvidia-smi.txt"
    status=0
    device-bin/op_runtime_lib cuda --test-threads=1 2>&1 | tee "$out/lib.log" || status=1
    device-bin/conformance_median --test-threads=1 2>&1 | tee "$out/conformance_median.log" || status=1
    device-bin/windowed_median 2>&1 | tee "$out/example.log" || status=1
    exit $status
    ;;
*)
    echo "usage: $0 prepare|run" >&2
    exit 2
    ;;
esac
