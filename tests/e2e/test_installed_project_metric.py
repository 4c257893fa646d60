"""A gated python metric in the project's own package, installed from the checkout (`pip install .`), is bound.

CI commonly installs the project before running its evals, non-editable: the package's files are then copied into
``site-packages``, and everything there counted as the machine's (third-party code a lock file pins), so a pull
request rewriting the metric in its own package kept the approval fresh and turned a failing gate green. A
distribution whose PEP 610 ``direct_url.json`` says it came from a local folder or file is the project's code: its
files are bound (labelled ``<installed NAME>/path``, the same wherever ``site-packages`` lies).

The installs are made by hand (a ``site-packages`` folder on ``PYTHONPATH`` with the files pip writes), and each run
is a real ``python -m evalglass`` process, whose ``sys.path`` (and its metric workers') takes that folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

RIGHT = 'def score(example):\n    return 1.0 if example.output == example.record.get("expected") else 0.0\n'
ALWAYS = "def score(example):\n    return 1.0\n"


def install(site: Path, source: str, *, url: str | None) -> None:
    """``myproj`` as pip installs it into ``site``: the package, its dist-info, and ``direct_url.json`` when ``url``
    says where it was installed from (None: from an index, which writes none)."""
    (site / "myproj").mkdir(parents=True)
    (site / "myproj" / "__init__.py").write_text("")
    (site / "myproj" / "evals.py").write_text(source)
    info = site / "myproj-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myproj\nVersion: 0.1\n")
    files = ["myproj/__init__.py", "myproj/evals.py", "myproj-0.1.dist-info/METADATA"]
    if url is not None:
        (info / "direct_url.json").write_text(json.dumps({"url": url, "dir_info": {}}))
        files.append("myproj-0.1.dist-info/direct_url.json")
    (info / "RECORD").write_text("".join(f"{name},,\n" for name in files))


def evalglass(root: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The site folder first, then the path this test runs with (the checkout's ``src`` when it runs from one).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "evalglass", *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def project(root: Path) -> None:
    evals = root / "evals"
    evals.mkdir(parents=True)
    config = {
        "version": 1,
        "dataset": {"name": "suite", "path": "data.jsonl"},
        "task": {"type": "recorded", "field": "output"},
        "metrics": {"mine": {"type": "python", "function": "myproj.evals:score", "scale": {"min": 0, "max": 1}}},
        "gates": {"g": {"metric": "mine", "proposed_threshold": 0.9}},
    }
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    rows = [{"id": "a", "expected": "x", "output": "x"}, {"id": "b", "expected": "y", "output": "n"}]
    (evals / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (evals / "authority.yaml").write_text("{}\n")


def approve(root: Path, site: Path) -> None:
    """The host's ledger: the gate at 0.9 on its definition as preflight prints it, on validated gold."""
    shown = evalglass(root, site, "preflight", "--config", "evals/evalglass.yaml", "--format", "json")
    gate = next(gate for gate in json.loads(shown.stdout)["gates"] if gate["name"] == "g")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.e2e.project import validated_gold

    ledger = {
        "gates": {"g": {"active": True, "threshold": 0.9, "fingerprint": gate["fingerprint"]}},
        "datasets": validated_gold(root / "evals"),
    }
    (root / "evals" / "authority.yaml").write_text(yaml.safe_dump(ledger, sort_keys=False))


def verdict(root: Path, site: Path) -> tuple[int, str, list[str]]:
    done = evalglass(root, site, "run", "--config", "evals/evalglass.yaml", "--no-progress", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    (gate,) = json.loads(done.stdout)["decision"]["gates"]
    return done.returncode, gate["outcome"], [reason["code"] for reason in gate["reasons"]]


def test_a_metric_rewritten_in_the_installed_project_makes_its_approval_stale(tmp_path: Path) -> None:
    root, site = tmp_path / "repo", tmp_path / "venv" / "lib" / "site-packages"
    project(root)
    install(site, RIGHT, url=root.as_uri())
    approve(root, site)
    assert verdict(root, site) == (1, "fail", ["below_threshold"])  # one of two right: 0.5 < 0.9

    (site / "myproj" / "evals.py").write_text(ALWAYS)  # the pull request's metric, installed by CI's `pip install .`
    code, outcome, reasons = verdict(root, site)
    assert (code, outcome) == (1, "blocked") and "approval_stale" in reasons, reasons


def test_the_binding_does_not_depend_on_where_site_packages_lies(tmp_path: Path) -> None:
    """Approved on one machine, run on another (another virtual environment's path): the same fingerprint."""
    root = tmp_path / "repo"
    project(root)
    laptop, ci = tmp_path / "laptop" / "site-packages", tmp_path / "ci" / "env" / "site-packages"
    install(laptop, RIGHT, url=root.as_uri())
    install(ci, RIGHT, url=root.as_uri())
    approve(root, laptop)
    assert verdict(root, ci) == (1, "fail", ["below_threshold"])


def test_a_package_from_an_index_stays_the_machines(tmp_path: Path) -> None:
    """Installed from an index (no direct_url.json): third-party code, pinned by the lock file the host reviews."""
    root, site = tmp_path / "repo", tmp_path / "site-packages"
    project(root)
    install(site, RIGHT, url=None)
    approve(root, site)
    (site / "myproj" / "evals.py").write_text(ALWAYS)
    assert verdict(root, site)[:2] == (0, "pass")


def test_a_committed_helper_in_a_folder_named_site_packages_is_bound(tmp_path: Path) -> None:
    """A folder's name does not make committed code the machine's: a helper the metric imports through a symlink
    into ``vendor/site-packages/`` was left out of the binding, so rewriting it kept the approval fresh."""
    evals = tmp_path / "repo" / "evals"
    project(tmp_path / "repo")
    config = yaml.safe_load((evals / "evalglass.yaml").read_text())
    config["metrics"]["mine"]["function"] = "graders:score"
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (evals / "graders.py").write_text(
        "from helper import judge\n\n\ndef score(example):\n    return judge(example.output, example.record)\n"
    )
    vendored = evals / "vendor" / "site-packages"
    vendored.mkdir(parents=True)
    (vendored / "helper.py").write_text("def judge(output, record):\n    return float(output == record['expected'])\n")
    (evals / "helper.py").symlink_to("vendor/site-packages/helper.py")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=tmp_path / "repo", check=True, capture_output=True)
    # `python -m evalglass` from the evals folder: the working folder is first on the path (docs/config.md).
    approve_here = evalglass(evals, tmp_path / "none", "preflight", "--format", "json")
    fingerprint = next(g for g in json.loads(approve_here.stdout)["gates"] if g["name"] == "g")["fingerprint"]
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.e2e.project import validated_gold

    ledger = {"gates": {"g": {"active": True, "threshold": 0.9, "fingerprint": fingerprint}}}
    (evals / "authority.yaml").write_text(yaml.safe_dump({**ledger, "datasets": validated_gold(evals)}))
    done = evalglass(evals, tmp_path / "none", "run", "--no-progress", "--format", "json")
    assert done.returncode == 1 and json.loads(done.stdout)["decision"]["verdict"] == "fail", done.stderr

    (vendored / "helper.py").write_text("def judge(output, record):\n    return 1.0\n")
    done = evalglass(evals, tmp_path / "none", "run", "--no-progress", "--format", "json")
    (gate,) = json.loads(done.stdout)["decision"]["gates"]
    assert done.returncode == 1 and gate["outcome"] == "blocked", gate
    assert "approval_stale" in [reason["code"] for reason in gate["reasons"]]


DYNAMIC = (
    'import importlib\n\n\ndef score(example):\n    return importlib.import_module("myproj.lenient").score(example)\n'
)


def test_a_gated_installed_metric_may_not_load_an_unbound_module_of_its_own_package(tmp_path: Path) -> None:
    """The worker's guard watches the installed copy too: a module of the project's installed package that no
    ``import`` statement binds, loaded by name, is refused (the gate blocks on ``host_unbound_code``), as it would be
    in the checkout. Before, only the repository folder was watched and this passed."""
    root, site = tmp_path / "repo", tmp_path / "venv" / "lib" / "site-packages"
    project(root)
    install(site, DYNAMIC, url=root.as_uri())
    (site / "myproj" / "lenient.py").write_text(ALWAYS)
    record = site / "myproj-0.1.dist-info" / "RECORD"
    record.write_text(record.read_text() + "myproj/lenient.py,,\n")
    approve(root, site)
    done = evalglass(root, site, "run", "--config", "evals/evalglass.yaml", "--no-progress", "--format", "json")
    (gate,) = json.loads(done.stdout)["decision"]["gates"]
    assert (done.returncode, gate["outcome"]) == (1, "blocked"), done.stderr
    assert "incomplete_measurement" in [reason["code"] for reason in gate["reasons"]]
    (run,) = (root / ".evalglass" / "runs").iterdir()
    scores = (run / "scores.jsonl").read_text()
    assert "host_unbound_code" in scores and "<installed myproj>/myproj/lenient.py" in scores, scores[:2000]


def test_a_gated_installed_metric_with_static_imports_loads_its_bound_modules(tmp_path: Path) -> None:
    """The bound set names the installed files by their real paths: a helper imported by statement is bound and
    loads (its labels are not rebuilt as paths under the config folder, where nothing is). Other distributions'
    metadata stays readable, and every distribution's entry points (``importlib.metadata.entry_points()``, which
    pydantic's plugin lookup reads on each model class it builds), the project's own included."""
    root, site = tmp_path / "repo", tmp_path / "venv" / "lib" / "site-packages"
    project(root)
    install(
        site, "from myproj.helper import judge\n\n\ndef score(example):\n    return judge(example)\n", url=root.as_uri()
    )
    (site / "myproj" / "helper.py").write_text(
        "from importlib.metadata import entry_points, version\n\n\ndef judge(example):\n"
        '    assert [point.name for point in entry_points(group="myproj.graders")] == ["exact"]\n'
        '    return float(version("PyYAML") > "0")\n'
    )
    (site / "myproj-0.1.dist-info" / "entry_points.txt").write_text("[myproj.graders]\nexact = myproj.helper:judge\n")
    record = site / "myproj-0.1.dist-info" / "RECORD"
    record.write_text(record.read_text() + "myproj/helper.py,,\nmyproj-0.1.dist-info/entry_points.txt,,\n")
    approve(root, site)
    assert verdict(root, site) == (0, "pass", [])


def test_a_gated_metric_reading_the_installed_projects_metadata_blocks(tmp_path: Path) -> None:
    """The installed copy's metadata is the pull request's text (its version, its requirements), and no gate binds
    it: a metric that read ``importlib.metadata.version`` of its own project turned green when the pull request
    bumped the version (on main: pass, exit 0). Reading it is refused, naming the file."""
    root, site = tmp_path / "repo", tmp_path / "venv" / "lib" / "site-packages"
    project(root)
    install(
        site,
        "from importlib.metadata import version\n\n\ndef score(example):\n"
        '    if version("myproj") == "0.2":\n        return 1.0\n'
        '    return 1.0 if example.output == example.record.get("expected") else 0.0\n',
        url=root.as_uri(),
    )
    approve(root, site)
    metadata = site / "myproj-0.1.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text().replace("Version: 0.1", "Version: 0.2"))  # the pull request's release
    code, outcome, reasons = verdict(root, site)
    assert (code, outcome) == (1, "blocked") and "incomplete_measurement" in reasons, reasons
    (run,) = (root / ".evalglass" / "runs").iterdir()
    scores = (run / "scores.jsonl").read_text()
    assert "it reads <installed myproj>/myproj-0.1.dist-info/METADATA, which the gate does not bind" in scores, scores


def test_a_gated_metric_looking_up_a_module_the_installed_project_adds_blocks(tmp_path: Path) -> None:
    """The import system lists ``site-packages`` and answers a lookup of a module there without opening it: a
    metric asking whether its installed project ships a module turned green when the pull request added one (on
    main: pass, exit 0). The project's ``site-packages`` is searched by name, and a module of the project the gate
    does not bind is refused when found."""
    root, site = tmp_path / "repo", tmp_path / "venv" / "lib" / "site-packages"
    project(root)
    install(
        site,
        "import importlib.util\n\n\ndef score(example):\n"
        '    if importlib.util.find_spec("lenient") is not None:\n        return 1.0\n'
        '    return 1.0 if example.output == example.record.get("expected") else 0.0\n',
        url=root.as_uri(),
    )
    approve(root, site)
    assert verdict(root, site) == (1, "fail", ["below_threshold"])
    (site / "lenient.py").write_text("")  # the pull request's new top-level module, installed by CI
    record = site / "myproj-0.1.dist-info" / "RECORD"
    record.write_text(record.read_text() + "lenient.py,,\n")
    code, outcome, reasons = verdict(root, site)
    assert (code, outcome) == (1, "blocked") and "incomplete_measurement" in reasons, reasons


#: How approved code in the installed project asks ``site-packages`` whether the pull request added a module there
#: without importing it (on main each turned a failing gate green: pass, exit 0).
SITE = "os.path.dirname(os.path.dirname(__file__))"
ASKS_SITE = {
    "os.listdir": f'"lenient.py" in os.listdir({SITE})',
    "pkgutil.iter_modules": f'any(module.name == "lenient" for module in pkgutil.iter_modules([{SITE}]))',
    "glob": f'bool(glob.glob(os.path.join({SITE}, "len*")))',
    "os.path.exists": f'os.path.exists(os.path.join({SITE}, "lenient.py"))',
}


@pytest.mark.parametrize("route", sorted(ASKS_SITE))
def test_a_gated_metric_asking_site_packages_about_a_module_the_installed_project_adds_blocks(
    tmp_path: Path, route: str
) -> None:
    root, site = tmp_path / "repo", tmp_path / "venv" / "lib" / "site-packages"
    project(root)
    install(
        site,
        "import glob, os, pkgutil\n\n\ndef score(example):\n"
        f"    if {ASKS_SITE[route]}:\n        return 1.0\n"
        '    return 1.0 if example.output == example.record.get("expected") else 0.0\n',
        url=root.as_uri(),
    )
    approve(root, site)
    code, outcome, _ = verdict(root, site)
    # A name that is not there is answered; a listing of ``site-packages`` names the installed copy's
    # ``.dist-info`` folder (its version: the pull request's) whatever the module: refused already.
    assert (code, outcome) == (1, "fail" if route == "os.path.exists" else "blocked")
    (site / "lenient.py").write_text("")  # the pull request's new top-level module, installed by CI
    record = site / "myproj-0.1.dist-info" / "RECORD"
    record.write_text(record.read_text() + "lenient.py,,\n")
    code, outcome, reasons = verdict(root, site)
    assert (code, outcome) == (1, "blocked") and "incomplete_measurement" in reasons, reasons
    run = max((root / ".evalglass" / "runs").iterdir(), key=lambda folder: folder.stat().st_mtime)  # the last
    scores = (run / "scores.jsonl").read_text()
    assert "host_unbound_code" in scores and "lenient" in scores, scores[:2000]


def test_a_pth_file_the_installed_project_adds_blocks_its_gated_metric(tmp_path: Path) -> None:
    """A ``.pth`` file in ``site-packages`` runs its ``import`` lines when any Python starts, the metric's worker
    included, before its guard: the installed project's is the pull request's code, which no gate can bind."""
    root, site = tmp_path / "repo", tmp_path / "venv" / "lib" / "site-packages"
    project(root)
    install(site, RIGHT, url=root.as_uri())
    approve(root, site)
    assert verdict(root, site) == (1, "fail", ["below_threshold"])
    (site / "myproj_hooks.pth").write_text("import os\n")
    record = site / "myproj-0.1.dist-info" / "RECORD"
    record.write_text(record.read_text() + "myproj_hooks.pth,,\n")
    code, outcome, reasons = verdict(root, site)
    assert (code, outcome) == (1, "blocked") and "incomplete_measurement" in reasons, reasons
    run = max((root / ".evalglass" / "runs").iterdir(), key=lambda folder: folder.stat().st_mtime)  # the last
    assert "puts <installed myproj>/myproj_hooks.pth in site-packages" in (run / "scores.jsonl").read_text()
