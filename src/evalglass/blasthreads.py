"""OpenBLAS held to one thread while a library that bundles it loads (numpy's, and SciPy's own copy).

EvalGlass does no linear algebra, but OpenBLAS starts a worker per core as it loads, and each spins for work that
never comes (~80 ms of CPU for numpy's, 10-30 ms for SciPy's when a t quantile first loads its ufuncs), taken from
the run itself on a 2-CPU CI machine. The library reads the variable once, when it loads; it is removed again
afterwards so that checks and lanes started later do not inherit it. Host metrics and lanes running in this
process get one BLAS thread too. Setting one of the variables keeps the caller's choice.

Limit: the variable is in the process environment while the library loads (tens of milliseconds); a subprocess a
host thread starts in that window inherits it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

_BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Inside the block, a BLAS library that loads starts no worker threads (unless the environment says how many)."""
    if any(name in os.environ for name in _BLAS_THREAD_VARIABLES):
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
