"""The t and beta quantiles come from SciPy's own ufuncs, loaded without the rest of ``scipy.special``
(core/stats/_scipyfuncs.py), and the package SciPy users import afterwards is the whole one.

Each check runs in a fresh interpreter: the pytest process has imported ``scipy.special`` long before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# (p, df) pairs across the range the intervals use: small df (a few clusters), large df (10,000 examples), tails.
POINTS = [
    (0.975, 1.0),
    (0.975, 2.0),
    (0.95, 4.0),
    (0.995, 29.0),
    (0.9, 999.0),
    (0.975, 9999.0),
    (0.9995, 123456.0),
    (0.5, 7.0),
    (0.025, 50.0),
]

PROBE = f"""
import json, sys, threading
from evalglass.core.stats._common import beta_quantile, t_cdf, t_quantile

points = {POINTS!r}
ours = [t_quantile(p, df) for p, df in points] + [t_cdf(2.0, df) for _, df in points] + [
    beta_quantile(0.025, 3.0, 998.0), beta_quantile(0.975, 1.0, 1.0)]
light = {{
    "special_in_modules": "scipy.special" in sys.modules,
    "init_ran": "scipy.special._support_alternative_backends" in sys.modules,
    "array_api": "scipy._lib._array_api" in sys.modules,
}}
from scipy.special import _ufuncs as loaded

# Another thread reading the package while this one does: both see the whole of it, once.
seen = []
threads = [threading.Thread(target=lambda: seen.append(__import__("scipy.special").special.gammaln(3.0)))
           for _ in range(4)]
for thread in threads:
    thread.start()
import scipy.special
import scipy.stats
for thread in threads:
    thread.join()
theirs = [float(scipy.special.stdtrit(df, p)) for p, df in points] + [
    float(scipy.special.stdtr(df, 2.0)) for _, df in points] + [
    float(scipy.special.betaincinv(3.0, 998.0, 0.025)), float(scipy.special.betaincinv(1.0, 1.0, 0.975))]
print(json.dumps({{
    "light": light,
    "ours": [x.hex() for x in ours],
    "theirs": [x.hex() for x in theirs],
    "same_functions": scipy.special.stdtrit is loaded.stdtrit and scipy.special._ufuncs is loaded,
    "stats_ppf": float(scipy.stats.t.ppf(0.975, 9999)).hex(),
    "gammaln_in_threads": seen,
    "dir": sorted(dir(scipy.special)),
    "bound": scipy.special is sys.modules["scipy.special"] is sys.modules["scipy"].special,
}}))
"""


def _run(code: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded: dict[str, object] = json.loads(done.stdout)
    return loaded


def test_the_quantiles_are_scipys_own_bit_for_bit_without_its_package_init() -> None:
    found = _run(PROBE)
    # A t quantile needed only the compiled ufuncs: the package's __init__ (and SciPy's array-API layer) did not run.
    assert found["light"] == {"special_in_modules": True, "init_ran": False, "array_api": False}
    # The same floats, to the last bit, as scipy.special's functions called after the whole package loaded: they are
    # the same ufunc objects.
    assert found["ours"] == found["theirs"]
    assert found["same_functions"] is True
    assert found["stats_ppf"] == float.hex(1.960201263621357)
    assert found["gammaln_in_threads"] == [0.6931471805599453] * 4
    assert found["bound"] is True


def test_the_package_loaded_later_is_the_whole_package() -> None:
    found = _run(PROBE)
    fresh = _run("import json, scipy.special, scipy.stats; print(json.dumps({'dir': sorted(dir(scipy.special))}))")
    assert found["dir"] == fresh["dir"]
    assert "__getattr__" not in found["dir"]


def test_a_package_already_imported_is_used_as_it_is() -> None:
    code = (
        "import json, scipy.special\n"
        "from evalglass.core.stats._scipyfuncs import scipy_ufuncs\n"
        "print(json.dumps({'same': scipy_ufuncs() is scipy.special._ufuncs}))\n"
    )
    assert _run(code) == {"same": True}


def _with_scipy_at(folder: Path, code: str) -> dict[str, object]:
    """``code`` run where ``import scipy`` finds the package written under ``folder`` first."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    loaded: dict[str, object] = json.loads(done.stdout)
    return loaded


def test_another_scipy_layout_is_read_through_the_ordinary_import(tmp_path: Path) -> None:
    """A SciPy whose functions are not in ``scipy.special._ufuncs``: the public package, imported whole."""
    special = tmp_path / "scipy" / "special"
    special.mkdir(parents=True)
    (tmp_path / "scipy" / "__init__.py").write_text("")
    (special / "__init__.py").write_text(
        "LAYOUT = 'other'\n"
        "def stdtrit(df, p):\n    return 1.5\n"
        "def stdtr(df, x):\n    return 0.25\n"
        "def betaincinv(a, b, p):\n    return 0.125\n"
    )
    code = (
        "import json, sys\n"
        "from evalglass.core.stats._common import beta_quantile, t_cdf, t_quantile\n"
        "found = [t_quantile(0.975, 10.0), t_cdf(2.0, 10.0), beta_quantile(0.5, 2.0, 3.0)]\n"
        "package = sys.modules['scipy.special']\n"
        "print(json.dumps({'found': found, 'layout': package.LAYOUT, 'stub': '__getattr__' in vars(package)}))\n"
    )
    assert _with_scipy_at(tmp_path, code) == {"found": [1.5, 0.25, 0.125], "layout": "other", "stub": False}


def test_without_scipy_the_interval_says_how_to_install_it_and_leaves_no_half_package(tmp_path: Path) -> None:
    (tmp_path / "scipy").mkdir()
    (tmp_path / "scipy" / "__init__.py").write_text("raise ImportError('this SciPy cannot be imported')\n")
    code = (
        "import json, sys\n"
        "from evalglass.core.stats._common import StatsDependencyError, t_quantile\n"
        "try:\n    t_quantile(0.975, 10.0)\nexcept StatsDependencyError as exc:\n    said = str(exc)\n"
        "print(json.dumps({'said': said, 'left': sorted(m for m in sys.modules if m.startswith('scipy'))}))\n"
    )
    found = _with_scipy_at(tmp_path, code)
    assert found == {
        "said": "this interval method needs scipy; install it with: pip install 'evalglass[stats]'",
        "left": [],
    }
