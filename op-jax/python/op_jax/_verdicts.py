"""Verdicts from Python: the project's own conformance and gradcheck on an op of the process
registry, returned as plain (JSON-able) dicts and lists. The checks are op-runtime's own
(``op_runtime::conformance::conform``, ``op_runtime::gradcheck::gradcheck_with``), run in Rust
with the GIL released; this module only parses what they return.

A verdict is returned, never raised (a rejected kernel, a skipped backend, a backward that
disagrees with central differences). A check that cannot run raises: ``UnknownOpError`` for an
op not registered, ``VerificationError`` for an unknown backend, a backend named that runs no
instance of the op here, an op gradcheck has nothing to check on (``backward = none``), or a
kernel the verifier could not start in its child process.
"""

from __future__ import annotations

import json

from . import _op_jax as _native


def conformance(name: str, backend: str | None = None) -> list[dict]:
    """Conforms op ``name``'s kernels against its reference on the engine's generated cases:
    on ``backend`` (``"reference"``, ``"cpu"``, ``"wgpu"``, ``"cuda"``), or on every backend kind
    when ``None``, each instance of an op with dtype variables. One dict per (instance,
    backend), with ``op``, ``dtypes`` (the instance, ``"T = f32"``; empty without variables),
    ``backend``, ``content_hash`` and ``verdict``:

    - ``"conformed"``: ``digest`` (the receipt's), ``corpus_digest``, ``cases``, ``tolerance``,
      ``device`` (the adapter or CPU model), ``receipt`` (the whole receipt as its JSON);
    - ``"rejected"``: ``class`` and ``classes`` (the defect classes, the one explaining the most
      failing cases first), ``case`` (the smallest case showing the first class: its text,
      symbols, parameters and input values), ``defects`` (each class with its case, fault and
      one-line explanation), ``failed``/``cases``/``passed_before``, ``device``, ``message``
      (the full report);
    - ``"skipped"``: the backend cannot run the op here (``failure`` ``"unavailable"`` or
      ``"unsupported"``, ``reason``, ``message``);
    - ``"contract_defect"``: the reference itself failed on an admissible case (``failure``,
      ``case``, ``reason``, ``message``): a defect of the declaration, no kernel judged.

    A rejection is also recorded in the process registry: default backend selection passes
    over the rejected kernel from then on (op-runtime's own rule).
    """
    return json.loads(_native.conformance(name, backend))


def gradcheck(name: str) -> dict:
    """Checks op ``name``'s declared backward against central differences of its reference in
    f64 (op-runtime's gradcheck with its default options, seeded from the op's content hash).
    Returns ``{"op", "passed": True, "report", "summary"}`` or ``{"op", "passed": False,
    "kind", "message", "rejection", ...}`` with the error's own fields: for ``"mismatch"`` the
    probe's ``at``, ``analytic``, ``numeric``, ``diff``, ``allowed``, ``failing``/``checked`` and
    the ``locus`` that reproduces it (input, element, shape, bindings, content hash, salt);
    ``"kink_convention"``, ``"inconsistent"``, ``"inconclusive"`` and
    ``"negative_control_accepted"`` carry theirs."""
    return json.loads(_native.gradcheck(name))
