"""The one place the version is written: the package metadata (pyproject.toml), ``evalglass --version``, every run
record's ``tool_version`` and ``evalglass.__version__`` read it here.

A module of its own, below every layer, so the modules that stamp the version import it downwards; from the package
itself (which names the public API) they would import upwards, in a circle.
"""

__version__ = "0.1.0"
