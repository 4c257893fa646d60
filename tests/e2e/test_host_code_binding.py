"""A gate on a ``python`` metric is bound to all the host code the metric runs, not only to the file the config
names: the module a ``package.module:function`` reference resolves to (its packages' ``__init__`` files too) and
the project's own modules the metric imports, transitively (relative imports included). A pull request that
changes any of them, and not the ledger, cannot keep the approved gate green: the approval is stale and the
reason names the file. Untouched host code keeps the approval fresh; the standard library and installed packages
are not bound.

Through the real CLI; the CLI's working directory (the project root) is ``sys.path[0]``, as ``python -m`` sets it,
so ``hostlib`` is importable by the run exactly as the scan finds it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.project import Project, base_config, make_project

#: Every output is "yes"; the dataset expects "yes" 6 times in 8: the approved rate 0.75 meets the threshold 0.7.
PACKAGE = {
    "hostlib/__init__.py": "",
    "hostlib/text.py": "import json\nimport re\n\nfrom .rules import KEEP\n\n\ndef normalise(text):\n"
    "    return re.sub(KEEP, '', str(text)).strip().lower()\n",
    "hostlib/rules.py": "KEEP = r'[^a-z ]'\n",
    "hostlib/scoring.py": "from hostlib.text import normalise\n\n\ndef score(output, record):\n"
    "    return 1.0 if normalise(output) == normalise(record['expected']) else 0.0\n",
    "hostlib/unused.py": "VALUE = 1\n",
}
FILE_METRIC = "import os\n\nfrom hostlib.text import normalise\n\n\ndef score(output, record):\n" + (
    "    return 1.0 if normalise(output) == normalise(record['expected']) else 0.0\n"
)
#: A change a pull request could make: every answer now matches.
LENIENT_RULES = "KEEP = r'.'\n"


def host_project(tmp_path: Path, function: str) -> Project:
    project = make_project(tmp_path)
    for name, text in PACKAGE.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    (project.evals / "scorer.py").write_text(FILE_METRIC)
    project.write_config(
        base_config(
            metrics={"host": {"type": "python", "function": function, "scale": {"min": 0, "max": 1}}},
            gates={"accuracy": {"metric": "host", "proposed_threshold": 0.7}},
        )
    )
    return project


def approve(project: Project) -> dict[str, Any]:
    """The host pastes explain's entry (its fingerprint and its definition) with the threshold it approves."""
    assert project.run().code == 0
    entry = yaml.safe_load(project.cli("explain", "accuracy", "--format", "json").json()[0]["ledger_entry"])
    gate = entry["gates"]["accuracy"]
    gate.update(threshold=0.7, approved_by="host")
    project.write_ledger({"version": 1, "gates": {"accuracy": gate}, "datasets": entry["datasets"]})
    return dict(gate["definition"])


def decided(project: Project) -> tuple[int, dict[str, Any]]:
    result = project.run("--format", "json")
    assert result.code in (0, 1), result.err
    return result.code, next(g for g in result.json()["decision"]["gates"] if g["name"] == "accuracy")


def stale_reason(gate: dict[str, Any]) -> str:
    assert gate["outcome"] == "blocked", gate
    (message,) = [reason["message"] for reason in gate["reasons"] if reason["code"] == "approval_stale"]
    return str(message)


def test_a_module_a_file_metric_imports_is_bound_transitively(tmp_path: Path) -> None:
    project = host_project(tmp_path, "scorer.py:score")
    definition = approve(project)
    # The project's modules the metric runs, relative imports included; not json, re or os (the machine's), nor
    # a module of the package nothing imports.
    assert sorted(definition["imports"]) == ["../hostlib/__init__.py", "../hostlib/rules.py", "../hostlib/text.py"]
    assert definition["files"] == {"scorer.py": definition["files"]["scorer.py"]}
    code, gate = decided(project)
    assert code == 0 and gate["outcome"] == "pass"

    (tmp_path / "hostlib/unused.py").write_text("VALUE = 2\n")  # not run by the metric: the approval holds
    assert decided(project)[0] == 0

    rules = tmp_path / "hostlib/rules.py"
    rules.write_text(LENIENT_RULES)  # two imports away from the named file
    code, gate = decided(project)
    assert code == 1
    reason = stale_reason(gate)
    assert "imports.../hostlib/rules.py" in reason and "scorer.py" not in reason
    assert project.cli("verify", str(project.last_run())).code == 0  # the blocked run re-derives as recorded

    rules.write_text(PACKAGE["hostlib/rules.py"])  # undone: the same bytes, the same approval
    assert decided(project)[0] == 0


def test_a_metric_named_by_import_path_is_bound_to_the_module_it_resolves_to(tmp_path: Path) -> None:
    project = host_project(tmp_path, "hostlib.scoring:score")
    definition = approve(project)
    assert sorted(definition["imports"]) == [
        "../hostlib/__init__.py",
        "../hostlib/rules.py",
        "../hostlib/scoring.py",
        "../hostlib/text.py",
    ]
    assert decided(project)[0] == 0
    record = json.loads((project.last_run() / "runrecord.json").read_text())
    assert sorted(record["definition_files"]["imports:host"]) == sorted(definition["imports"])

    for name, edit in [
        ("hostlib/scoring.py", "def score(output):\n    return 1.0\n"),  # the function itself
        ("hostlib/__init__.py", "print('imported')\n"),  # a package the import runs
        ("hostlib/rules.py", LENIENT_RULES),  # what it imports
    ]:
        original = (tmp_path / name).read_text()
        (tmp_path / name).write_text(edit)
        code, gate = decided(project)
        assert code == 1, name
        assert f"imports.../{name}" in stale_reason(gate)
        (tmp_path / name).write_text(original)
    assert decided(project)[0] == 0


def test_an_approval_from_before_imports_were_bound_is_stale_and_says_so(tmp_path: Path) -> None:
    """The upgrade's cost: a gate whose metric imports host code was approved for the fingerprint without it.
    That approval is stale (the imported code was never reviewed), and the reason says why and what to review."""
    from evalglass.engine.spec.config import load_config

    project = host_project(tmp_path, "scorer.py:score")
    assert project.run().code == 0
    config = load_config(project.evals / "evalglass.yaml").config
    # The files as the run found them (its sys.path, not this process's), less the imports: the old fingerprint.
    files = json.loads((project.last_run() / "runrecord.json").read_text())["definition_files"]
    legacy = {key: value for key, value in files.items() if not key.startswith("imports:")}
    old = config.gate_fingerprint("accuracy", legacy)
    assert old != config.gate_fingerprint("accuracy", files)
    project.write_ledger({"version": 1, "gates": {"accuracy": {"active": True, "threshold": 0.7, "fingerprint": old}}})
    code, gate = decided(project)
    assert code == 1
    reason = stale_reason(gate)
    assert "approved before EvalGlass bound the host code its python metric imports" in reason
    assert "../hostlib/rules.py" in reason and "../hostlib/text.py" in reason


def test_a_metric_that_imports_no_host_code_keeps_its_fingerprint(tmp_path: Path) -> None:
    """A file metric importing only the standard library binds what it always bound: its own file."""
    project = host_project(tmp_path, "scorer.py:score")
    (project.evals / "scorer.py").write_text("import json\n\n\ndef score(output):\n    return 1.0\n")
    definition = approve(project)
    assert "imports" not in definition and list(definition["files"]) == ["scorer.py"]
    record = json.loads((project.last_run() / "runrecord.json").read_text())
    assert not any(key.startswith("imports:") for key in record["definition_files"])


def test_a_module_beside_the_config_is_bound_as_a_python_lane_makes_it_importable(tmp_path: Path) -> None:
    """A python lane puts the config folder first on ``sys.path`` once it is built (after the metrics): a metric
    that imports a module there when it is called runs that module, though its own folder is not on the path."""
    project = host_project(tmp_path, "scorer.py:score")
    (project.evals / "scorer.py").write_text(
        "def score(output, record):\n    from evalhelpers import same\n\n    return same(output, record['expected'])\n"
    )
    (project.evals / "evalhelpers.py").write_text("def same(a, b):\n    return 1.0 if a == b else 0.0\n")
    (project.evals / "app.py").write_text("def answer(example):\n    return 'yes'\n")
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["task"] = {"type": "python", "function": "app:answer"}  # a module: the folder goes on sys.path
    project.write_config(config)
    definition = approve(project)
    assert list(definition["imports"]) == ["evalhelpers.py"]
    code, gate = decided(project)
    assert code == 0, (gate["outcome"], gate["reasons"])
    (project.evals / "evalhelpers.py").write_text("def same(a, b):\n    return 1.0\n")
    code, gate = decided(project)
    assert code == 1 and "imports.evalhelpers.py" in stale_reason(gate)
