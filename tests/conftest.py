"""Suite-wide pytest set-up."""

# `pytester` runs pytest on generated test files: tests/test_pytest_plugin.py drives the evalglass plugin with it.
# (pytest only accepts `pytest_plugins` in the top-level conftest.)
pytest_plugins = ["pytester"]
