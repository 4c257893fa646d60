"""The layers hold: the import contracts in pyproject.toml, and no circle in any import statement."""

from __future__ import annotations

import ast
import itertools
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    result = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" in result.stdout and "0 broken" in result.stdout


def test_the_engine_dispatches_on_no_metric_or_lane_type():
    """Every metric type builds through ``spec.build(context)`` and every lane type through its class in
    ``LANE_TYPES``; what the engine needs beyond that (live, shippable, parallel, the checks a metric runs, the
    model a lane's tokens are counted for) the spec declares. So no engine module tests whether a spec is of a given
    metric or lane type (issue 12: pipeline, liverun and config special-cased llm_judge, check and chat)."""
    import typing

    from evalglass.lanes.specs import LaneSpec
    from evalglass.metrics.registry import METRIC_TYPES

    spec_classes = {cls.__name__ for cls in METRIC_TYPES.values()}
    spec_classes |= {cls.__name__ for cls in typing.get_args(LaneSpec)}
    found = []
    for path in sorted((ROOT / "src" / "evalglass" / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
                names = {sub.id for sub in ast.walk(node.args[1]) if isinstance(sub, ast.Name)}
                found += [f"{path.name}:{node.lineno} {name}" for name in sorted(names & spec_classes)]
    assert found == []


#: What only the run sink does (engine/produce/sink.py), or (the metric threads) only engine/produce/scoring.py: called anywhere else
#: in the engine, a producer has taken back part of the run's output (issue 28: blocks were written from five
#: places, the cluster key computed four times, the thread pool chosen twice, repeated ids found two ways).
_OWNED_CALLS = {
    "write_block": "sink.py",
    "cluster_key": "sink.py",
    "SeenIds": "sink.py",
    "RowShape": "sink.py",
    "ThreadPoolExecutor": "scoring.py",
    "DaemonThreadPool": "scoring.py",
}


def test_the_run_sink_alone_writes_blocks_reads_clusters_and_checks_ids():
    import ast

    found = []
    for path in sorted((ROOT / "src" / "evalglass" / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            owner = _OWNED_CALLS.get(name or "")
            if owner is not None and path.name != owner:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {name} (only {owner} may)")
    assert found == []


# ------------------------------------------------------------------------------ the import graph, circles refused
# grimp (what import-linter builds its graph with) sees every import statement: top-level, inside a function, and
# under `if TYPE_CHECKING:` once the graph is built with them, so a circle through a lazy import or a type-only
# name is refused as much as a top-level one.


def import_graph(package: str) -> grimp.ImportGraph:
    return grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)


def circles(graph: grimp.ImportGraph) -> list[str]:
    """Each import that closes a circle of modules, as the circle: the importer, then the chain that leads back."""
    found = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                found.append(" → ".join((importer, *back)))
    return found


def package_circles(graph: grimp.ImportGraph) -> list[str]:
    """Pairs of sibling modules or packages (children of one package) that each import the other, counting what
    their submodules import: two packages in a circle are one package in two folders."""
    found = []
    for package in sorted(module for module in graph.modules if graph.find_children(module)):
        for one, other in itertools.combinations(sorted(graph.find_children(package)), 2):
            if graph.chain_exists(one, other, as_packages=True) and graph.chain_exists(other, one, as_packages=True):
                found.append(f"{one} ↔ {other}")
    return found


def layer_contract(pyproject: Path) -> dict[str, Any]:
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [contract for contract in contracts if contract["type"] == "layers" and "containers" not in contract]
    return layers


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    """No circle of modules, however the imports are written (issue 28: lanes/judge ↔ metrics/llm_judge,
    engine/explorer ↔ report/html ↔ report/comparison_html, engine/pipeline ↔ evalglass/__init__)."""
    assert circles(import_graph("evalglass")) == []


def test_no_two_packages_import_each_other() -> None:
    """Nor a circle between sibling packages or modules through their submodules (lanes ↔ metrics was one)."""
    assert package_circles(import_graph("evalglass")) == []


def test_the_layers_are_strict_and_count_type_only_imports() -> None:
    """The layer contract import-linter keeps (test_import_contracts_hold) puts no two packages in one layer (``:``
    lets them import each other) and counts imports under ``TYPE_CHECKING`` (names from a higher layer are a
    dependency on it)."""
    layers = layer_contract(ROOT / "pyproject.toml")
    assert not any(":" in layer for layer in layers["layers"]), "two packages in one layer may import each other"
    assert (
        "exclude_type_checking_imports"
        not in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    )


def test_every_module_of_the_package_is_in_a_layer() -> None:
    """A module outside the layer contract could import from any layer unseen: each child of the package (the
    package's own ``__init__``, which names the public API, aside) is one of the contract's layers."""
    layered = {
        name.strip()
        for layer in layer_contract(ROOT / "pyproject.toml")["layers"]
        for name in layer.replace("|", ":").split(":")
    }
    assert sorted(import_graph("evalglass").find_children("evalglass") - layered) == []


def test_the_graph_counts_lazy_and_type_only_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph these tests read sees a name imported under ``TYPE_CHECKING`` and a relative import inside a
    function: each closes a circle here, and an upward import hidden in a function breaks a layer."""
    package = tmp_path / "circled"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "high.py").write_text("def g():\n    return 1\n")
    (package / "low" / "base.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circled.low.other import Thing\n"
    )
    (package / "low" / "other.py").write_text("def f():\n    from . import base\n    from ..high import g\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = import_graph("circled")
    assert circles(graph) == [
        "circled.low.base → circled.low.other → circled.low.base",
        "circled.low.other → circled.low.base → circled.low.other",
    ]
    assert package_circles(graph) == ["circled.low.base ↔ circled.low.other"]
    upward = graph.find_illegal_dependencies_for_layers(layers=["circled.high", "circled.low"])
    assert [(dependency.importer, dependency.imported) for dependency in upward] == [("circled.low", "circled.high")]


def test_the_engine_is_forbidden_every_metric_type_module() -> None:
    """The contract that keeps the engine off metric types lists each one (a new type's module joins it)."""
    from evalglass.metrics.registry import METRIC_TYPES

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [item for item in contracts if item["name"] == "the engine imports no metric type's module"]
    missing = sorted({cls.__module__ for cls in METRIC_TYPES.values()} - set(contract["forbidden_modules"]))
    assert missing == [], f"add {missing} to the contract's forbidden_modules in pyproject.toml"


def test_the_architecture_doc_names_every_engine_module_where_it_is() -> None:
    """docs/architecture.md's engine tables are drawn from the code: each names exactly the modules of its package."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc[doc.index("### engine/\n") :]
    section = section[: section.index("\n### ")]
    engine = ROOT / "src" / "evalglass" / "engine"
    tables = re.split(r"^#### engine/(\S+)/$", section, flags=re.M)[1:]
    named_packages = set()
    for package, body in zip(tables[::2], tables[1::2], strict=True):
        named_packages.add(package)
        named = {
            name
            for row in body.splitlines()
            if row.startswith("| `")
            for name in re.findall(r"`([a-z_]+)\.py`", row.split(" | ")[0])
        }
        present = {path.stem for path in (engine / package).glob("*.py") if path.stem != "__init__"}
        assert named == present, package
    packages = {str(path.parent.relative_to(engine)) for path in engine.rglob("__init__.py") if path.parent != engine}
    assert named_packages == packages


def test_the_engine_is_rooms_in_layers() -> None:
    """engine/ holds no module of its own: each is in a sub-package named for what it holds, and each sub-package is
    in the engine's layer contract (issue 28: a flat 40-file engine/ was a room you could not find things in)."""
    engine = ROOT / "src" / "evalglass" / "engine"
    assert sorted(path.name for path in engine.glob("*.py")) == ["__init__.py"]
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (rooms,) = [contract for contract in contracts if contract.get("containers") == ["evalglass.engine"]]
    layered = {name.strip() for layer in rooms["layers"] for name in layer.split("|")}
    packages = {path.parent.name for path in engine.glob("*/__init__.py")}
    assert packages == layered
    assert not any(":" in layer for layer in rooms["layers"])


def test_every_file_the_architecture_doc_names_exists() -> None:
    """Every path docs/architecture.md names (``pkg/module.py``) is a file of the repository, and each package
    section's module table names modules of that package: the page is drawn from the code, and stays so."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    package = ROOT / "src" / "evalglass"
    missing = [
        path
        for path in sorted(set(re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)`", doc)))
        if not any((base / path).is_file() for base in (ROOT, ROOT / "src", package, ROOT / "tests"))
        and not any(package.glob(f"*/{path}"))  # named inside its package's section: core's stats/alpha.py
    ]
    assert missing == []
    for section in re.split(r"^### ", doc, flags=re.M)[1:]:
        folder = package / section.split("/")[0]
        if not folder.is_dir():
            continue
        named = set(re.findall(r"^\| `([a-z_]+)\.py`", section, flags=re.M))
        absent = sorted(name for name in named if not any(folder.rglob(f"{name}.py")))
        assert absent == [], section.split("\n")[0]
