"""Optional C accelerators of pure-Python hot paths; the pure functions stay the reference and the fallback.

``_calls`` (``_calls.c``) holds two, for a recorded tool-call replay's per-trajectory work:

* ``own_calls(value, ABSENT)``: :func:`evalglass.core.trajectory.own_calls` for the usual record (EvalGlass's own
  calls; messages of one part each that add up, as ``_adds_up`` proves them), or None, and the caller runs the pure
  function, which decides every other case and words every refusal;
* ``pair_flat(names, arguments, wanted_names, wanted_arguments)``: ``callmatch._pairing_by_key`` of two own-form
  call lists whose arguments are flat objects (text keys; text, 64-bit integer, boolean or null values), or None.

``calls`` is that module, or None when it was not built (``pip install`` builds it where a C compiler and the
Python headers are; it is optional) or when ``EVALGLASS_PURE`` is set to anything but ``0`` or empty (the pure
path forced: to compare the two, or to rule the extension out).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def _loaded() -> ModuleType | None:
    if os.environ.get("EVALGLASS_PURE", "") not in ("", "0"):
        return None
    try:  # by name: a compiled module, which an import statement would show the import graph as this package itself
        return importlib.import_module("evalglass._native._calls")
    except ImportError:
        return None


calls: ModuleType | None = _loaded()

__all__ = ["calls"]
