"""SciPy's special-function ufuncs (``stdtrit``, ``stdtr``, ``betaincinv``) without importing ``scipy.special``.

Why: importing ``scipy.special`` costs about 0.15-0.2 s CPU (0.8 G instructions), most of it not in the functions
but in its ``__init__``, which loads SciPy's array-API layer (its vendored ``array_api_compat`` clones numpy's
namespace, importing ``numpy.f2py``, ``testing``, ``random``, ``polynomial`` and ``ma``). A run that needs one t
quantile paid all of it: a third of the run's fixed cost. The three functions live in the compiled module
``scipy.special._ufuncs``, which needs none of that; loading it alone costs about 10 ms.

How: ``scipy.special`` is created from its own spec as the import system would create it (same module object, same
``__path__``), put in ``sys.modules`` *unexecuted*, and only ``scipy.special._ufuncs`` is imported into it. The
package's ``__init__`` runs later, in that same object, the first time anything reads a name the package does not
have yet (a PEP 562 module ``__getattr__``): ``scipy.special.gammaln``, ``from scipy.special import x`` and
``import scipy.stats`` all see the whole package, with the same ``_ufuncs`` module. So the functions are SciPy's own
ufuncs, bit for bit, not a reimplementation: an interval computed here has the bytes it had, which ``evalglass
verify`` needs to re-derive runs recorded before (a t quantile of our own, even within 1e-15, would move the last
bit of some interval ends and make those runs fail to verify).

Limits: this leans on two private things, the module name ``scipy.special._ufuncs`` and the package's ``__init__``
tolerating a module that already holds some of its submodules (it does: importing a submodule binds it the same
way). Anything unexpected (another SciPy layout, a failed load) falls back to ``import scipy.special``, which costs
the time but gives the same functions. ``dir(scipy.special)`` before the first attribute read lists only what is
loaded. Whoever first reads a missing attribute runs the package's ``__init__``; another thread reading one meanwhile
waits for it (a lock), and reads inside the ``__init__`` (``from . import _basic`` checks for ``_basic`` first) get
AttributeError, as they would during an ordinary import.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from types import ModuleType

_PACKAGE = "scipy.special"
_UFUNCS = "scipy.special._ufuncs"

# One lock for loading the ufuncs and for running the package's deferred __init__ (re-entered by the thread that runs
# it, through the attribute checks of the __init__'s own imports).
_LOCK = threading.RLock()

# Entered while SciPy's compiled modules load. SciPy's wheels bundle an OpenBLAS of their own, which starts a worker
# per core as it loads unless the environment says otherwise; core reads and sets no environment, so the command line
# hands in the guard that does (``evalglass.blasthreads.one_blas_thread``).
_loading: Callable[[], AbstractContextManager[object]] = nullcontext


def guard_loading(guard: Callable[[], AbstractContextManager[object]]) -> None:
    """Enter ``guard()`` around every later load of SciPy's compiled modules here."""
    global _loading
    _loading = guard


def scipy_ufuncs() -> ModuleType:
    """A module holding ``stdtrit``, ``stdtr`` and ``betaincinv``: SciPy's own, loaded at the least cost (the compiled
    ufuncs module, or ``scipy.special`` itself when it is already imported or the ufuncs cannot be loaded alone).

    Raises what ``import scipy.special`` raises (ModuleNotFoundError without SciPy).
    """
    with _LOCK:
        loaded = sys.modules.get(_UFUNCS)
        if loaded is not None:
            return loaded
        with _loading():
            if _PACKAGE not in sys.modules:
                try:
                    return _load_ufuncs_alone()
                except Exception:  # another layout, a failed load, no SciPy: the ordinary import below says
                    _forget_deferred_package()
            # The public package holds the same functions under the same names, whatever module they live in.
            return importlib.import_module(_PACKAGE)


class _DeferredInit:
    """The package's ``__init__``, run once, at the first read of a name the package does not hold."""

    def __init__(self, package: ModuleType) -> None:
        self.package = package
        self.running = False

    def __call__(self, name: str) -> object:
        with _LOCK:
            if self.running:  # the __init__'s own imports checking for a submodule: not there yet
                raise AttributeError(name)
            if self.package.__dict__.get("__getattr__") is self:
                self.running = True
                try:
                    spec = self.package.__spec__
                    assert spec is not None and spec.loader is not None
                    spec.loader.exec_module(self.package)
                    if self.package.__dict__.get("__getattr__") is self:
                        del self.package.__dict__["__getattr__"]
                except BaseException:
                    # As a failed import does: the package is gone from sys.modules, the next import starts anew.
                    _forget_deferred_package(self.package)
                    raise
                finally:
                    self.running = False
        try:
            return self.package.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {_PACKAGE!r} has no attribute {name!r}") from None


def _load_ufuncs_alone() -> ModuleType:
    spec = importlib.util.find_spec(_PACKAGE)  # imports the parent `scipy` (lazy, cheap), not scipy.special
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        raise ImportError(f"{_PACKAGE} is not a package here")
    package = importlib.util.module_from_spec(spec)
    package.__dict__["__getattr__"] = _DeferredInit(package)
    sys.modules[_PACKAGE] = package
    sys.modules["scipy"].__dict__["special"] = package  # as the import system binds a loaded submodule
    importlib.import_module(_UFUNCS)
    ufuncs = sys.modules[_UFUNCS]
    for name in ("stdtrit", "stdtr", "betaincinv"):
        getattr(ufuncs, name)  # an AttributeError here: another layout, take the ordinary import
    return ufuncs


def _forget_deferred_package(package: ModuleType | None = None) -> None:
    """Our unexecuted (or failed) ``scipy.special`` out of ``sys.modules`` and ``scipy``, so an import starts anew."""
    found = sys.modules.get(_PACKAGE)
    if found is None or not isinstance(found.__dict__.get("__getattr__"), _DeferredInit):
        return
    if package is not None and found is not package:
        return
    del sys.modules[_PACKAGE]
    scipy = sys.modules.get("scipy")
    if scipy is not None and scipy.__dict__.get("special") is found:
        del scipy.__dict__["special"]
