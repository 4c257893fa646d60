"""What ``lanes.hostimports`` finds of the host code a metric runs: every import statement of the project's own
files, transitively, resolved as the run's import would and without importing anything; and what it cannot find
(the limits docs/config.md states), pinned so a change to either is seen."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.lanes.hostimports import imported_host_files, is_host_file, module_host_files, reference_host_files


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def names(found: tuple[Path, ...], root: Path) -> set[str]:
    return {path.relative_to(root.resolve()).as_posix() for path in found}


def test_every_import_statement_counts_wherever_it_stands(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "metric.py": "def score(output):\n    import lazy\n    try:\n        import maybe\n"
            "    except ImportError:\n        pass\n    return 1.0\n",
            "lazy.py": "from pkg import *\n",
            "maybe.py": "",
            "pkg/__init__.py": "",
            "pkg/other.py": "",
        },
    )
    found = imported_host_files(tmp_path / "metric.py", (str(tmp_path),))
    assert names(found, tmp_path) == {"lazy.py", "maybe.py", "pkg/__init__.py"}  # not pkg/other.py: never imported


def test_relative_imports_resolve_in_their_package_and_a_cycle_ends(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "app/__init__.py": "from . import a\n",
            "app/a.py": "from .sub.b import thing\n",
            "app/sub/__init__.py": "",
            "app/sub/b.py": "from ..a import *\nfrom ... import beyond_the_top\nthing = 1\n",
        },
    )
    found = module_host_files("app.sub.b", (str(tmp_path),))
    assert names(found, tmp_path) == {"app/__init__.py", "app/a.py", "app/sub/__init__.py", "app/sub/b.py"}


def test_a_namespace_package_is_looked_through(tmp_path: Path) -> None:
    write(tmp_path, {"space/mod.py": "import space.helper\n", "space/helper.py": ""})
    assert names(module_host_files("space.mod", (str(tmp_path),)), tmp_path) == {"space/mod.py", "space/helper.py"}


def test_the_machines_code_and_evalglass_are_not_host_code(tmp_path: Path) -> None:
    write(tmp_path, {"metric.py": "import json, yaml, evalglass.core.score\nimport not_installed_anywhere\n"})
    assert imported_host_files(tmp_path / "metric.py", (str(tmp_path),)) == ()
    assert not is_host_file(Path(sys.modules["json"].__file__ or ""))


def test_what_a_static_scan_cannot_see(tmp_path: Path) -> None:
    """The limits: a dynamic import, and a file the code reads, are not bound."""
    write(
        tmp_path,
        {
            "metric.py": "import importlib\nfrom pathlib import Path\nWORDS = Path('words.txt')\n\n"
            "def score(output):\n    return importlib.import_module('hidden').value(output)\n",
            "hidden.py": "def value(output):\n    return 1.0\n",
            "words.txt": "yes\n",
        },
    )
    assert imported_host_files(tmp_path / "metric.py", (str(tmp_path),)) == ()


def test_a_file_that_does_not_parse_imports_nothing(tmp_path: Path) -> None:
    write(tmp_path, {"metric.py": "import broken\n", "broken.py": "def (:\n"})
    assert names(imported_host_files(tmp_path / "metric.py", (str(tmp_path),)), tmp_path) == {"broken.py"}


def test_a_reference_binds_its_module_but_not_a_named_file_twice(tmp_path: Path) -> None:
    write(tmp_path, {"metric.py": "import helper\n", "helper.py": "", "pkg/__init__.py": "", "pkg/m.py": ""})
    by_file = reference_host_files("metric.py:score", tmp_path, search_base=True)
    assert names(by_file, tmp_path) == {"helper.py"}
    by_module = reference_host_files("pkg.m:score", tmp_path, search_base=True)
    assert names(by_module, tmp_path) == {"pkg/__init__.py", "pkg/m.py"}


def test_more_host_code_than_a_gate_can_bind_is_refused_not_bound_in_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalglass.engine.spec.config import Config, definition_file_hashes
    from evalglass.errors import SetupError
    from evalglass.lanes import hostimports

    write(tmp_path, {"metric.py": "import a\n", "a.py": "import b\n", "b.py": "import c\n", "c.py": ""})
    config = Config.model_validate(
        {
            "dataset": {"name": "d", "path": "data.jsonl"},
            "task": {"type": "recorded"},
            "metrics": {"host": {"type": "python", "function": "metric.py:score"}},
        }
    )
    assert set(definition_file_hashes(config, tmp_path)["imports:host"]) == {"a.py", "b.py", "c.py"}
    monkeypatch.setattr(hostimports, "MAX_HOST_FILES", 2)
    with pytest.raises(SetupError, match="metric 'host': it imports more than 2 of the project's files"):
        definition_file_hashes(config, tmp_path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edges=st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 5), st.sampled_from(["import", "from", "relative", "lazy"])),
        max_size=14,
    ),
    roots=st.sets(st.integers(0, 5), max_size=3),
)
def test_the_bound_files_are_exactly_what_the_metric_reaches(
    tmp_path_factory: pytest.TempPathFactory, edges: list[tuple[int, int, str]], roots: set[int]
) -> None:
    """Over any import graph of a package's modules (absolute, ``from`` and relative imports, imports inside a
    function), the files bound are the package's ``__init__`` and exactly the modules reachable from the metric."""
    root = tmp_path_factory.mktemp("graph")
    lines: dict[int, list[str]] = {index: [] for index in range(6)}
    spelled = {
        "import": "import gpkg.m{0}",
        "from": "from gpkg import m{0}",
        "relative": "from .m{0} import *",
        "lazy": "def later():\n    import gpkg.m{0}",
    }
    for source, target, kind in edges:
        lines[source].append(spelled[kind].format(target))
    files = {f"gpkg/m{index}.py": "\n".join(text) + "\n" for index, text in lines.items()}
    write(root, {"gpkg/__init__.py": "", "metric.py": "".join(f"import gpkg.m{index}\n" for index in roots), **files})
    reached: set[int] = set()
    pending = list(roots)
    while pending:
        index = pending.pop()
        if index not in reached:
            reached.add(index)
            pending.extend(target for source, target, _ in edges if source == index)
    expected = {f"gpkg/m{index}.py" for index in reached} | ({"gpkg/__init__.py"} if reached else set())
    assert names(imported_host_files(root / "metric.py", (str(root),)), root) == expected
