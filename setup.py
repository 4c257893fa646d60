"""The optional C extensions (src/evalglass/_native/_calls.c, _scan.c); everything else is in pyproject.toml.

``optional=True``: where it cannot compile (no compiler, no Python headers), the build goes on without it and
EvalGlass runs its pure-Python path (evalglass/_native/__init__.py). A wheel that holds it is for one Python and
platform (``cp311-cp311-linux_x86_64``); ``EVALGLASS_PURE=1`` at build time leaves it out, for a wheel that
installs anywhere (``py3-none-any``).
"""

import os

from setuptools import Extension, setup

pure = os.environ.get("EVALGLASS_PURE", "") not in ("", "0")
setup(
    ext_modules=[]
    if pure
    else [
        Extension(f"evalglass._native.{name}", sources=[f"src/evalglass/_native/{name}.c"], optional=True)
        for name in ("_calls", "_scan")
    ]
)
