"""Optional C accelerators of pure-Python hot paths; the pure functions stay the reference and the fallback.

``_calls`` (``_calls.c``) holds two, for a recorded tool-call replay's per-trajectory work:

* ``own_calls(value, ABSENT)``: :func:`evalglass.core.trajectory.own_calls` for the usual record (EvalGlass's own
  calls; messages of one part each that add up, as ``_adds_up`` proves them), or None, and the caller runs the pure
  function, which decides every other case and words every refusal;
* ``pair_flat(names, arguments, wanted_names, wanted_arguments)``: ``callmatch._pairing_by_key`` of two own-form
  call lists whose arguments are flat objects (text keys; text, 64-bit integer, boolean or null values), or None.

``_scan`` (``_scan.c``) holds one, for the reader's exactness checks (``readers/jsonsource.py``):

* ``exact(lines)``: True when the lines (each one document orjson parsed) hold no key repeated in one object, no
  integer beyond 64 bits and no nesting deeper than ``jsonsource.MAX_DEPTH``, proven by one tokenizing pass over
  their bytes; False for anything else, and the pure checks decide (and word every refusal);
* ``exact_kept(lines, key)``: the same proof, and for a proven batch the bytes orjson writes for the column of
  ``key`` copied from the lines without their white space, when that copy is provably orjson's (no backslash, float
  or ``-0`` in it: ``jsonsource.proven_exact_written``); True when it took none.

``calls`` and ``scan`` are those modules, each None when it was not built (``pip install`` builds it where a C
compiler and the Python headers are; it is optional) or when ``EVALGLASS_PURE`` is set to anything but ``0`` or
empty (the pure path forced: to compare the two, or to rule the extension out).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def _loaded(name: str) -> ModuleType | None:
    if os.environ.get("EVALGLASS_PURE", "") not in ("", "0"):
        return None
    try:  # by name: a compiled module, which an import statement would show the import graph as this package itself
        return importlib.import_module(f"evalglass._native.{name}")
    except ImportError:
        return None


calls: ModuleType | None = _loaded("_calls")
scan: ModuleType | None = _loaded("_scan")

__all__ = ["calls", "scan"]
