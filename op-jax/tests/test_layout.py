"""The `#[repr(C)]` mirrors in src/xla.rs against the installed jaxlib's c_api.h: a C program
compiled with gcc prints every size and offset the Rust side reports (`_op_jax.layout()`), and
they must agree. gcc is used by this test only, never by the build."""

import os
import shutil
import subprocess

import jax.ffi
import pytest

from op_jax import _op_jax


def _c_expr(key: str) -> str:
    # Keys are C expressions already (`sizeof(T)`, `offsetof(T, f)`) or constants.
    return key if "(" in key else f"(long long){key}"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_mirrors_match_the_header(tmp_path):
    rows = _op_jax.layout()
    assert len(rows) > 80
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "xla/ffi/api/c_api.h"', "int main(void) {"]
    for key, _ in rows:
        lines.append(f'  printf("%lld\\n", (long long)({_c_expr(key)}));')
    lines += ["  return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run(["gcc", "-std=c11", "-I", jax.ffi.include_dir(), str(src), "-o", str(exe)], check=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    mismatches = [(k, rust, int(c)) for (k, rust), c in zip(rows, got) if rust != int(c)]
    assert not mismatches, f"(key, rust, header): {mismatches}"
    assert len(got) == len(rows)
