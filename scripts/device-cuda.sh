#!/usr/bin/env bash
# CUDA checks for a session lent an NVIDIA machine (the `device` tool). That machine has no
# network, so the binaries are built here and carried:
#   here  : bash scripts/device-cuda.sh prepare    # stripped, xz-packed release binaries in device-bin/
#   device: run(command = "bash scripts/device-cuda.sh run", carry = ["device-bin", "device-inc", ".gl"])
# (`.gl`, optional: the Vulkan loader's .deb, fetched as the device tool's README says.)
# With OP_REQUIRE_CUDA=1 an unavailable CUDA backend is a failure, never a skip. `run` does, in
# order: the CUDA engine's own tests; CUDA conformance of every built-in (and the broken CUDA
# kernels' rejection, the transcendental sweep, the accum margins) and of the example median;
# the dtype-generic, accumulating-output, training and CUDA device-tensor tests (default
# dispatch picks CUDA where an op has a CUDA kernel), the VJP kernels' conformance and training
# on the device; 2-D launches (a transpose in 16 x 16 blocks); the example; the `cuda_kernels`
# and `device_tape` benches; then, where `.gl` carries the Vulkan loader, wgpu's device-tensor
# (buffer pool, bind-group cache), any-size, 2-D/3-D launch and VJP-kernel tests and its
# benches on the GPU. Logs land in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

# exe_of <cargo subcommand and args...>: the executable cargo builds for them.
exe_of() {
    cargo "$@" --message-format=json 2>/dev/null |
        python3 -c 'import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["executable"])' | tail -1
}

# Test binaries; the tests of the example's median are one binary (tests/example_median), run by
# module (`training::` and so on).
TESTS="conformance_builtins accumulate launch_grid example_median"
WGPU_TESTS="device_tensors launch_grid"
WGPU_BENCHES="device_chain conformance_wgpu"

case "${1:-}" in
prepare)
    rm -rf device-bin && mkdir -p device-bin
    cargo build --release --example windowed_median
    cp target/release/examples/windowed_median device-bin/windowed_median
    # The CUDA engine's unit tests live with the backends (op-backends), the built-ins' kernels
    # with op-builtins.
    cp "$(exe_of test --release --no-run -p op-backends --lib)" device-bin/op_backends_lib
    cp "$(exe_of test --release --no-run -p op-builtins --lib)" device-bin/op_builtins_lib
    for t in $TESTS; do cp "$(exe_of test --release --no-run --test "$t")" "device-bin/$t"; done
    cp "$(exe_of bench --no-run --bench cuda_kernels)" device-bin/cuda_kernels
    cp "$(exe_of bench --no-run --bench device_tape)" device-bin/device_tape
    # wgpu on the NVIDIA Vulkan driver too, where the Vulkan loader is carried in `.gl` (see run).
    for t in $WGPU_TESTS; do [ -e "device-bin/$t" ] || cp "$(exe_of test --release --no-run --test "$t")" "device-bin/$t"; done
    for b in $WGPU_BENCHES; do cp "$(exe_of bench --no-run --bench "$b")" "device-bin/$b"; done
    # CUDA's half-precision headers (NVRTC ships none; the device may have no toolkit): from the
    # wheel .ci/run installs (target/nvrtc-venv), carried as device-inc (OP_CUDA_INCLUDE there).
    rm -rf device-inc && mkdir -p device-inc
    inc=$(find target/nvrtc-venv -path '*nvidia/cuda_runtime/include' -type d 2>/dev/null | head -1)
    if [ -n "$inc" ]; then cp "$inc"/cuda_fp16.h* "$inc"/cuda_bf16.h* device-inc/; else echo "no target/nvrtc-venv: run .ci/run's nvrtc step first, or the f16/bf16 CUDA kernels will not compile on the device"; fi
    strip device-bin/*
    xz -6 -T2 device-bin/*   # about 8 MB each unpacked; the carried tree must stay under 64 MiB
    du -sh device-bin && ls -la device-bin
    ;;
run)
    out="${OUT:-/tmp/op-device-out}"; mkdir -p "$out"
    for f in device-bin/*.xz; do # xz where installed, else Python's lzma
        [ -e "$f" ] || continue
        xz -d "$f" 2>/dev/null || python3 -c 'import lzma, os, sys; f = sys.argv[1]; open(f[:-3], "wb").write(lzma.open(f).read()); os.chmod(f[:-3], 0o755); os.remove(f)' "$f"
    done
    # libcuda from the driver; libnvrtc from the toolkit or a Python wheel, wherever it lies.
    nvrtc_dirs=$(find /usr/local /usr/lib /opt -name 'libnvrtc.so*' -not -name '*builtins*' -not -path '*/stubs/*' 2>/dev/null | xargs -r -n1 dirname | sort -u)
    for d in /usr/lib/x86_64-linux-gnu /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib64 $nvrtc_dirs; do
        [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
    # cudarc looks for `libnvrtc.so` or a few versioned names (not `.so.13`): link the newest.
    if [ -n "$nvrtc_dirs" ] && ! find $nvrtc_dirs -maxdepth 1 -name libnvrtc.so 2>/dev/null | grep -q .; then
        newest=$(find $nvrtc_dirs -maxdepth 1 -name 'libnvrtc.so.*' 2>/dev/null | sort -V | tail -1)
        mkdir -p /tmp/op-nvrtc && ln -sf "$newest" /tmp/op-nvrtc/libnvrtc.so && export LD_LIBRARY_PATH="/tmp/op-nvrtc:$LD_LIBRARY_PATH"
    fi
    # cudarc tries `libcuda.so` first, which may be the toolkit's stub: link the driver's own.
    driver=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
    [ -n "$driver" ] || driver=$(find / -name 'libcuda.so.1' -not -path '*/stubs/*' -not -path '/proc/*' 2>/dev/null | head -1)
    if [ -n "$driver" ]; then
        mkdir -p /tmp/op-cuda && ln -sf "$driver" /tmp/op-cuda/libcuda.so && export LD_LIBRARY_PATH="/tmp/op-cuda:$LD_LIBRARY_PATH"
    fi
    echo "libcuda: ${driver:-not found}; LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    echo "libnvrtc candidates: $(find $nvrtc_dirs -maxdepth 1 -name 'libnvrtc.so*' 2>/dev/null | tr '\n' ' ')"
    # At most 8 files come back from $OUT: every step's log is appended to all.log as well.
    # CUDA's half-precision headers: a toolkit's where CUDA_PATH or /usr/local/cuda has them,
    # else the carried copy.
    if [ -f device-inc/cuda_fp16.h ] && [ ! -f "${CUDA_PATH:-/usr/local/cuda}/include/cuda_fp16.h" ]; then
        export OP_CUDA_INCLUDE="$PWD/device-inc"
    fi
    export OP_REQUIRE_CUDA=1 OP_REQUIRE_NVRTC=1 OP_CACHE_DIR=/tmp/op-ptx-cache
    { nvidia-smi -L || true; echo "libcuda: ${driver:-not found}"; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH";
      find $nvrtc_dirs -maxdepth 1 -name 'libnvrtc.so*' 2>/dev/null; } | tee "$out/all.log"
    status=0
    step() { # step <log name> <command...>: runs it, logs it, remembers a failure
        local name=$1; shift
        echo "=== $name: $*"
        local log=/tmp/op-step-$name.log
        "$@" > "$log" 2>&1 || { status=1; echo "FAILED: $name"; }
        { echo "=== $name: $*"; cat "$log"; } >> "$out/all.log"
        case $name in builtins | example | bench | tape | wgpu-conformance_wgpu) cp "$log" "$out/$name.log" ;; esac
        grep -E "^test result|FAILED|panicked|^device|kernel|GFLOP|conformance: .* on cuda" "$log" | head -60 || true
    }
    step lib device-bin/op_backends_lib cuda --test-threads=1
    step builtins-lib device-bin/op_builtins_lib cuda --test-threads=1
    step builtins device-bin/conformance_builtins cuda --nocapture
    step median device-bin/example_median conformance_median:: --nocapture
    step generic device-bin/example_median dtype_generic::
    step accumulate device-bin/accumulate
    step training device-bin/example_median training:: --skip device_training::
    step resident device-bin/example_median cuda_device_tensors:: --nocapture
    step vjp device-bin/example_median vjp_kernels:: --nocapture
    step device-training device-bin/example_median device_training:: --nocapture --test-threads=1
    step grid device-bin/launch_grid --nocapture
    step example device-bin/windowed_median
    tail -20 /tmp/op-step-example.log
    step bench device-bin/cuda_kernels
    cat /tmp/op-step-bench.log
    step tape device-bin/device_tape
    cat /tmp/op-step-tape.log
    # wgpu on the GPU's Vulkan driver, when the loader was carried (`carry` names `.gl`, which
    # holds libvulkan1's .deb: see the device tool's README). Required to run once attempted.
    if ls .gl/*.deb >/dev/null 2>&1; then
        for f in .gl/*.deb; do dpkg -x "$f" /; done
        ldconfig
        icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
        [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
        egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
        [ -f "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$egl
        { echo "Vulkan ICDs:"; ls /usr/local/nvidia/share/vulkan/icd.d /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1;
          ldconfig -p | grep -E 'libvulkan|libGLX_nvidia|libGLdispatch' || true; } | tee -a "$out/all.log"
        export OP_REQUIRE_GPU_ADAPTER=1
        for t in $WGPU_TESTS; do step "wgpu-$t" "device-bin/$t"; done
        for m in launch_any_size vjp_kernels; do step "wgpu-$m" device-bin/example_median "$m::"; done
        for b in $WGPU_BENCHES; do step "wgpu-$b" "device-bin/$b"; cat "/tmp/op-step-wgpu-$b.log"; done
    fi
    exit $status
    ;;
*)
    echo "usage: $0 prepare|run" >&2
    exit 2
    ;;
esac
