#!/usr/bin/env bash
# Compile-time cost of `#[op]`: a crate of 50 realistic declarations (elementwise, reduction,
# selection, integer; VJPs, constraints, float constraints, several outputs; kernel-free)
# against the same 50 functions without the attribute ("plain"), and against those functions
# instantiated where the op would instantiate them (reference and VJP at f32 and f64:
# "plain+inst", the same monomorphization work without the macro). Prints `cargo check` and
# `cargo build` times (clean, and incremental after touching one file) and the ratios, median
# of $RUNS (the crates timed in turn within each run, so load from elsewhere falls on all of
# them alike). An op's `DECL` is a `const`, so its shims and the instantiations they make are
# compiled where the op is used, as a generic function's are: a second table times a crate
# that registers all 50 ops against one that instantiates the 50 plain functions at f32 and
# f64 (the same functions, the same instantiations), `cargo build` of that crate alone.
# A third table: a package whose lib declares 30 of the ops and which has 20 sibling targets
# (examples with no `#[op]`) against the same package with the plain functions, CPU time (user +
# system, cargo and rustc) of `cargo check --lib` and `cargo build --lib`, clean: the macro reads
# only the declaring target's module tree, each file parsed once per compiler process, so the
# siblings cost it nothing.
#   bash scripts/compile-cost.sh            # RUNS=3 by default
#   CASES=siblings bash scripts/compile-cost.sh   # only the third table
# The crates live in a temporary directory; their target dir (target/compile-cost, kept between
# runs) holds the dependencies
# (op-runtime and the macro), built untimed before anything is measured.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/op-compile-cost.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/compile-cost}"

python3 - "$work" "$root" <<'PY'
import os, sys
work, root = sys.argv[1], sys.argv[2]

NAMES, USES = [], []

def decls(with_op, inst=False):
    out = ["#![allow(dead_code, clippy::all)]", "use op_runtime::Real;" if not with_op else "use op_runtime::{op, Real};", ""]
    uses = []
    def attr(s):
        return s if with_op else ""
    for i in range(50):
        kind = i % 5
        if kind == 0:  # elementwise with a VJP
            out.append(attr(f'#[op(name = "bench/scale{i}", version = 1, signature(x: f32[n], s: f32) -> f32[n], category = elementwise, tolerance = ulp(1), backward = vjp(scale{i}_vjp))]'))
            out.append(f"pub fn scale{i}<T: Real>(x: &[T], s: T) -> Vec<T> {{ x.iter().map(|v| *v * s + T::from_f64({i}.0)).collect() }}")
            out.append(f"pub fn scale{i}_vjp<T: Real>(_x: &[T], s: T, g: &[T]) -> Vec<T> {{ g.iter().map(|v| *v * s).collect() }}")
            uses += [f"scale{i}::<{t}> as fn(&[{t}], {t}) -> Vec<{t}>" for t in ("f32", "f64")]
            uses += [f"scale{i}_vjp::<{t}> as fn(&[{t}], {t}, &[{t}]) -> Vec<{t}>" for t in ("f32", "f64")]
        elif kind == 1:  # reduction
            out.append(attr(f'#[op(name = "bench/sum{i}", version = 1, signature(x: f32[n] where n >= 1) -> f32[], category = reduction, tolerance = accum(2), backward = vjp(sum{i}_vjp))]'))
            out.append(f"pub fn sum{i}<T: Real>(x: &[T]) -> Vec<T> {{ let mut s = T::zero(); for v in x {{ s += *v; }} vec![s] }}")
            out.append(f"pub fn sum{i}_vjp<T: Real>(x: &[T], g: &[T]) -> Vec<T> {{ vec![g[0]; x.len()] }}")
            uses += [f"sum{i}::<{t}> as fn(&[{t}]) -> Vec<{t}>" for t in ("f32", "f64")]
            uses += [f"sum{i}_vjp::<{t}> as fn(&[{t}], &[{t}]) -> Vec<{t}>" for t in ("f32", "f64")]
        elif kind == 2:  # selection with integer constraints
            out.append(attr(f'#[op(name = "bench/median{i}", version = 1, signature(x: f32[n], w: u32 where w % 2 == 1, 1 <= w <= 31, w <= n) -> f32[n - w + 1], category = selection, tolerance = exact, backward = vjp(median{i}_vjp), subgradient = "routed to the selected element")]'))
            out.append(f"pub fn median{i}<T: Real>(x: &[T], w: u32) -> Vec<T> {{ let w = w as usize; (0..x.len() + 1 - w).map(|i| {{ let mut v = x[i..i + w].to_vec(); v.sort_by(|a, b| a.total_cmp(b)); v[w / 2] }}).collect() }}")
            out.append(f"pub fn median{i}_vjp<T: Real>(x: &[T], _w: u32, g: &[T]) -> Vec<T> {{ let mut d = vec![T::zero(); x.len()]; for (i, v) in g.iter().enumerate() {{ d[i] += *v; }} d }}")
            uses += [f"median{i}::<{t}> as fn(&[{t}], u32) -> Vec<{t}>" for t in ("f32", "f64")]
            uses += [f"median{i}_vjp::<{t}> as fn(&[{t}], u32, &[{t}]) -> Vec<{t}>" for t in ("f32", "f64")]
        elif kind == 3:  # integer op with two outputs
            out.append(attr(f'#[op(name = "bench/divmod{i}", version = 1, signature(x: u32[n], d: u32 where d >= 1) -> (q: u32[n], r: u32[n]), category = integer, tolerance = exact, backward = none)]'))
            out.append(f"pub fn divmod{i}(x: &[u32], d: u32) -> (Vec<u32>, Vec<u32>) {{ (x.iter().map(|v| v / d).collect(), x.iter().map(|v| v % d).collect()) }}")
            uses += [f"divmod{i} as fn(&[u32], u32) -> (Vec<u32>, Vec<u32>)"]
        else:  # clamp with float constraints, matrix-shaped
            out.append(attr(f'#[op(name = "bench/clamp{i}", version = 1, signature(x: f32[m, k], lo: f32, hi: f32 where lo <= hi) -> f32[m, k], category = selection, tolerance = exact, backward = none)]'))
            out.append(f"pub fn clamp{i}<T: Real>(x: &[T], lo: T, hi: T) -> Vec<T> {{ x.iter().map(|v| if *v < lo {{ lo }} else if *v > hi {{ hi }} else {{ *v }}).collect() }}")
            uses += [f"clamp{i}::<{t}> as fn(&[{t}], {t}, {t}) -> Vec<{t}>" for t in ("f32", "f64")]
        out.append("")
    if with_op:
        NAMES[:] = [l.split("pub fn ")[1].split("<")[0].split("(")[0] for l in out if l.startswith("pub fn ") and "_vjp" not in l]
    else:
        USES[:] = uses
    if inst:
        out.append("/// Every instantiation the ops would make, as function pointers.")
        out.append("pub fn instantiate() -> usize {")
        out.append("    let mut n = 0usize;")
        out += [f"    n ^= ({u}) as usize;" for u in uses]
        out.append("    n")
        out.append("}")
    return "\n".join(out)

for name, with_op, inst in [("with_op", True, False), ("plain", False, False), ("plain_inst", False, True)]:
    d = os.path.join(work, name)
    os.makedirs(os.path.join(d, "src"), exist_ok=True)
    open(os.path.join(d, "Cargo.toml"), "w").write(
        f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nop-runtime = {{ path = "{root}/op-runtime" }}\n')
    open(os.path.join(d, "src", "ops.rs"), "w").write(decls(with_op, inst))
    open(os.path.join(d, "src", "lib.rs"), "w").write("pub mod ops;\n")
# The crates that use them: one registers every op, one instantiates every plain function.
register = ["use op_runtime::Registry;", "", "/// Registers every op (instantiating its shims here).", "pub fn register_all(r: &Registry) -> usize {", "    let mut n = 0usize;"]
register += [f"    n += r.register(&with_op::ops::{f}::DECL).is_ok() as usize;" for f in NAMES] + ["    n", "}"]
instantiate = ["/// Every instantiation the ops make, as function pointers.", "pub fn instantiate() -> usize {", "    let mut n = 0usize;"]
instantiate += [f"    n ^= (plain::ops::{u}) as usize;" for u in USES] + ["    n", "}"]
for name, dep, text in [("use_op", "with_op", register), ("use_plain", "plain", instantiate)]:
    d = os.path.join(work, name)
    os.makedirs(os.path.join(d, "src"), exist_ok=True)
    open(os.path.join(d, "Cargo.toml"), "w").write(
        f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nop-runtime = {{ path = "{root}/op-runtime" }}\n{dep} = {{ path = "../{dep}" }}\n')
    open(os.path.join(d, "src", "lib.rs"), "w").write("\n".join(text) + "\n")
# A package declaring 30 ops (or the 30 plain functions) beside 20 sibling targets without any.
def sibling(i):
    fns = "\n".join(f"pub fn e{i}_f{k}(x: &[f32]) -> Vec<f32> {{ x.iter().map(|v| v * {k}.0 + {i}.0).collect() }}" for k in range(40))
    return f"//! Sibling target {i}: plain code, no `#[op]`.\n#![allow(dead_code)]\n{fns}\nfn main() {{ println!(\"{{}}\", e{i}_f0(&[1.0]).len()); }}\n"
for name, with_op in [("sib_op", True), ("sib_plain", False)]:
    d = os.path.join(work, name)
    os.makedirs(os.path.join(d, "src"), exist_ok=True)
    os.makedirs(os.path.join(d, "examples"), exist_ok=True)
    open(os.path.join(d, "Cargo.toml"), "w").write(
        f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nop-runtime = {{ path = "{root}/op-runtime" }}\n')
    text = decls(with_op).split("\n")
    # The first 30 declarations (a declaration ends at its blank line).
    blocks, cur = [], []
    for line in text[3:]:
        if line == "":
            blocks.append(cur)
            cur = []
        else:
            cur.append(line)
    open(os.path.join(d, "src", "lib.rs"), "w").write("\n".join(text[:3] + [l for b in blocks[:30] for l in b + [""]]))
    for i in range(20):
        open(os.path.join(d, "examples", f"sibling{i}.rs"), "w").write(sibling(i))
open(os.path.join(work, "Cargo.toml"), "w").write('[workspace]\nmembers = ["with_op", "plain", "plain_inst", "use_op", "use_plain", "sib_op", "sib_plain"]\nresolver = "2"\n')
PY
cp "$root/Cargo.lock" "$work/Cargo.lock" 2>/dev/null || true
cd "$work"
# Dependencies once, untimed (check and build artifacts both).
cargo check --offline --workspace -q 2>/dev/null || cargo check --workspace -q
cargo build --offline --workspace -q 2>/dev/null || cargo build --workspace -q

secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Times `cargo <cmd>` of each package <runs> times, the packages interleaved within each run
# (so a burst of load from elsewhere on the machine falls on all of them alike); prints each
# package's median, in order.
measure() { # measure <check|build> <clean|incremental> <pkg>...
    local cmd=$1 mode=$2 pkg src
    shift 2
    declare -A times=()
    for _ in $(seq "$runs"); do
        for pkg in "$@"; do
            src="$pkg/src/ops.rs"; [ -f "$src" ] || src="$pkg/src/lib.rs"
            if [ "$mode" = clean ]; then cargo clean -p "$pkg" -q 2>/dev/null; else cargo "$cmd" -p "$pkg" -q >/dev/null 2>&1; touch "$src"; fi
            times[$pkg]+=" $(secs cargo "$cmd" --offline -p "$pkg")"
        done
    done
    for pkg in "$@"; do
        # shellcheck disable=SC2086
        median ${times[$pkg]}
    done
}

# CPU seconds (user + system, cargo and the rustc it waits for) of `cargo <args>`.
cpu() { /usr/bin/time -f "%U %S" -o "$work/cpu" "$@" >/dev/null 2>&1; awk '{print $1 + $2}' "$work/cpu"; }
# Times `cargo <cmd> --lib` of each package from clean, CPU time, <runs> times interleaved;
# prints each package's median, in order.
measure_cpu() { # measure_cpu <check|build> <pkg>...
    local cmd=$1 pkg
    shift
    declare -A times=()
    for _ in $(seq "$runs"); do
        for pkg in "$@"; do
            cargo clean -p "$pkg" -q 2>/dev/null
            times[$pkg]+=" $(cpu cargo "$cmd" --offline -p "$pkg" --lib)"
        done
    done
    for pkg in "$@"; do
        # shellcheck disable=SC2086
        median ${times[$pkg]}
    done
}
siblings() {
    printf '\n%-34s %9s %9s %8s\n' "30 ops, 20 sibling targets (CPU)" "#[op]" "plain" "ratio"
    for cmd in check build; do
        read -r a b <<<"$(measure_cpu "$cmd" sib_op sib_plain | tr '\n' ' ')"
        printf '%-34s %8.2fs %8.2fs %7.2fx\n' "cargo $cmd --lib (clean)" "$a" "$b" "$(echo "$a / $b" | bc -l)"
    done
}
if [ "${CASES:-all}" = siblings ]; then
    siblings
    exit 0
fi

printf '%-26s %8s %8s %11s %8s %13s\n' "" "#[op]" "plain" "plain+inst" "ratio" "ratio (inst)"
for cmd in check build; do
    for mode in clean incremental; do
        read -r a b c <<<"$(measure "$cmd" "$mode" with_op plain plain_inst | tr '\n' ' ')"
        printf '%-26s %7.2fs %7.2fs %10.2fs %7.2fx %12.2fx\n' "cargo $cmd ($mode)" "$a" "$b" "$c" "$(echo "$a / $b" | bc -l)" "$(echo "$a / $c" | bc -l)"
    done
done
printf '\n%-26s %8s %11s %8s\n' "crate using the 50" "#[op]" "plain+inst" "ratio"
for mode in clean incremental; do
    read -r a c <<<"$(measure build "$mode" use_op use_plain | tr '\n' ' ')"
    printf '%-26s %7.2fs %10.2fs %7.2fx\n' "cargo build ($mode)" "$a" "$c" "$(echo "$a / $c" | bc -l)"
done
siblings
