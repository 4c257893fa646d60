"""A gated python metric's worker loads only the project files its gate binds (lanes/hostguard.py).

The gate binds the metric's file and the project modules it imports by statement. Each route below loads a file
of the project some other way; a pull request rewriting that file to answer 1.0 left the approval fresh and turned
an approved failing gate (0.75 against 0.9) into a pass, exit 0. Through the real command line: every route now
blocks the gate (``host_unbound_code``, naming the file and how to bind it), exit 1; the same metric with its code
bound, and imports of the machine's modules however made, still pass.
"""

from __future__ import annotations

import importlib.util
import json
import py_compile
import shutil
import sqlite3
from pathlib import Path

import pytest

from evalglass.core.exitcodes import ExitCode
from tests.e2e.project import Project, approve_as_is, make_project, run_cli

HONEST = "def grade(output, reference):\n    return 1.0 if output == reference else 0.0\n"
CHEAT = "def grade(output, reference):\n    return 1.0\n"

#: route: (the gated metric's file, the unbound file it loads, relative to the config folder)
ROUTES: dict[str, tuple[str, str]] = {
    "importlib.import_module": (
        "import importlib\ndef score(output, reference):\n"
        "    return importlib.import_module('rules').grade(output, reference)\n",
        "rules.py",
    ),
    "__import__": (
        "def score(output, reference):\n    return __import__('rules').grade(output, reference)\n",
        "rules.py",
    ),
    "exec of a file's text": (
        "import pathlib\ndef score(output, reference):\n"
        "    space = {}\n"
        "    exec(pathlib.Path(__file__).with_name('rules.py').read_text(), space)\n"
        "    return space['grade'](output, reference)\n",
        "rules.py",
    ),
    "runpy.run_path": (
        "import pathlib, runpy\ndef score(output, reference):\n"
        "    return runpy.run_path(str(pathlib.Path(__file__).with_name('rules.py')))['grade'](output, reference)\n",
        "rules.py",
    ),
    "a folder put on sys.path at run time": (
        "import pathlib, sys\nsys.path.insert(0, str(pathlib.Path(__file__).parent / 'plugins'))\n"
        "def score(output, reference):\n    import rules\n    return rules.grade(output, reference)\n",
        "plugins/rules.py",
    ),
    "import at module load": (
        "import importlib\n_rules = importlib.import_module('rules')\n"
        "def score(output, reference):\n    return _rules.grade(output, reference)\n",
        "rules.py",
    ),
    "a program it starts": (
        "import pathlib, subprocess, sys\ndef score(output, reference):\n"
        "    script = pathlib.Path(__file__).with_name('rules.py')\n"
        "    code = f'import runpy; print(runpy.run_path({str(script)!r})[\"grade\"]({output!r}, {reference!r}))'\n"
        "    return float(subprocess.run([sys.executable, '-c', code], capture_output=True, text=True).stdout)\n",
        "rules.py",
    ),
    "a file opened relative to a folder's descriptor": (
        "import os, pathlib\ndef score(output, reference):\n"
        "    folder = os.open(str(pathlib.Path(__file__).parent), os.O_RDONLY)\n"
        "    space = {}\n"
        "    exec(os.read(os.open('rules.py', os.O_RDONLY, dir_fd=folder), 1 << 20).decode(), space)\n"
        "    return space['grade'](output, reference)\n",
        "rules.py",
    ),
    # A link made in a folder of the machine's (whose paths are not resolved: none is the project's) to a project
    # file: the file is found through the link all the same.
    "a symbolic link in the machine's site-packages": (
        "import os, pathlib, sysconfig\ndef score(output, reference):\n"
        "    alias = os.path.join(sysconfig.get_paths()['purelib'], f'evalglass-test-alias-{os.getpid()}.py')\n"
        "    os.symlink(pathlib.Path(__file__).with_name('rules.py'), alias)\n"
        "    try:\n        space = {}\n        exec(pathlib.Path(alias).read_text(), space)\n"
        "    finally:\n        os.unlink(alias)\n"
        "    return space['grade'](output, reference)\n",
        "rules.py",
    ),
    "a refusal the metric catches": (
        "import importlib\ndef score(output, reference):\n"
        "    try:\n        return importlib.import_module('rules').grade(output, reference)\n"
        "    except PermissionError:\n        return 1.0\n",
        "rules.py",
    ),
}


#: What a judge looking modules up by name beside it does first (a python lane named by module does it too).
BESIDE = "import pathlib as _p, sys as _s\n_s.path.insert(0, str(_p.Path(__file__).parent))\n"


def _project(tmp_path: Path, judge: str, files: dict[str, str], **metric: object) -> Project:
    project = make_project(
        tmp_path,
        metrics={"mine": {"type": "python", "function": "judge.py:score", "reference": "expected", **metric}},
        gates={"mine": {"metric": "mine", "proposed_threshold": 0.9}},
    )
    (project.root / ".git").mkdir()  # the project is the repository: files outside the config folder are its own
    (project.evals / "judge.py").write_text(BESIDE + judge)
    for name, text in files.items():
        (project.evals / name).parent.mkdir(parents=True, exist_ok=True)
        (project.evals / name).write_text(text)
    return project


def _run(project: Project) -> tuple[str, int, list[dict[str, object]]]:
    shutil.rmtree(project.root / "run", ignore_errors=True)  # a run's folder is written once
    result = project.run("--format", "json", "--no-progress", "--no-history", "--out", "run")
    card = result.json()
    (gate,) = card["decision"]["gates"]
    diagnostics = []
    for line in (project.root / "run" / "scores.jsonl").read_text().splitlines():
        for value in json.loads(line)["scores"]["mine"]:
            if type(value) is dict:
                diagnostics += value["diagnostics"]
    return gate["outcome"], result.code, diagnostics


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_gated_metric_loading_a_file_its_gate_does_not_bind_blocks(tmp_path, route):
    judge, loaded = ROUTES[route]
    project = _project(tmp_path, judge, {loaded: HONEST})
    approve_as_is(project, 0.9, ["mine"])  # approved as reviewed: 6 of 8 right, 0.75
    (project.evals / loaded).write_text(CHEAT)  # the pull request: the approval stays fresh (it binds no such file)
    outcome, code, diagnostics = _run(project)
    assert (outcome, code) == ("blocked", ExitCode.FAILED), diagnostics  # on main: pass, exit 0
    assert len(diagnostics) == 8 and {item["code"] for item in diagnostics} == {"host_unbound_code"}, diagnostics
    message = str(diagnostics[0]["message"])
    if route == "a program it starts":
        assert "starts a program" in message and "check" in message, message
    elif route == "a file opened relative to a folder's descriptor":
        assert "it reads evals, which the gate does not bind" in message, message  # the folder: refused first
    else:
        assert f"{loaded}, which the gate does not bind" in message, message
        assert "import it with an `import` statement" in message, message


def test_a_data_file_the_metric_reads_blocks_until_data_files_binds_it(tmp_path):
    judge = (
        "import json, pathlib\ndef score(output, reference):\n"
        "    answers = json.loads(pathlib.Path(__file__).with_name('answers.json').read_text())\n"
        "    return answers.get(output, 0.0)\n"
    )
    project = _project(tmp_path, judge, {"answers.json": json.dumps({"yes": 0.5})})
    approve_as_is(project, 0.9, ["mine"])
    (project.evals / "answers.json").write_text(json.dumps({"yes": 1.0}))
    outcome, code, diagnostics = _run(project)
    assert (outcome, code) == ("blocked", ExitCode.FAILED), diagnostics  # on main: pass, exit 0
    assert "answers.json, which the gate does not bind; list it under the metric's `data_files:`" in str(
        diagnostics[0]["message"]
    )
    # Declared, the file is bound: the run decides, and a change to it makes the approval stale.
    (tmp_path / "bound").mkdir()
    bound = _project(tmp_path / "bound", judge, {"answers.json": json.dumps({"yes": 1.0})}, data_files=["answers.json"])
    approve_as_is(bound, 0.9, ["mine"])
    assert _run(bound)[:2] == ("pass", ExitCode.OK)
    (bound.evals / "answers.json").write_text(json.dumps({"yes": 0.99}))
    stale = bound.run("--format", "json", "--no-progress", "--no-history").json()
    (gate,) = stale["decision"]["gates"]
    assert gate["outcome"] == "blocked" and "approval_stale" in {reason["code"] for reason in gate["reasons"]}, gate


def test_a_cached_bytecode_file_in_the_checkout_does_not_replace_a_bound_module(tmp_path):
    """An unchecked-hash ``.pyc`` beside a bound module: Python runs it and never reads the source the gate binds."""
    judge = "import rules\ndef score(output, reference):\n    return rules.grade(output, reference)\n"
    project = _project(tmp_path, judge, {"rules.py": HONEST})
    approve_as_is(project, 0.9, ["mine"])
    cheat = tmp_path / "cheat.py"
    cheat.write_text(CHEAT)
    cached = importlib.util.cache_from_source(str(project.evals / "rules.py"))
    py_compile.compile(
        str(cheat), cfile=cached, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )
    outcome, code, diagnostics = _run(project)
    assert (outcome, code, diagnostics) == ("fail", ExitCode.FAILED, [])  # on main: pass, exit 0


JUDGE_WITH_HELPERS = "import helpers\ndef score(output, reference):\n    return helpers.grade(output, reference)\n"

HONEST_SETUPS = {
    "bound helpers, a machine module by name": (
        "import importlib\nimport helpers\n"
        "def score(output, reference):\n"
        "    json = importlib.import_module('json')\n"
        "    yaml = __import__('yaml')\n"
        "    assert json.loads('1') == yaml.safe_load('1') == 1\n"
        "    return helpers.grade(output, reference)\n",
        {"helpers.py": HONEST},
    ),
    "a bound module imported by name at run time": (
        "import importlib\ndef score(output, reference):\n"
        "    if False:\n        import helpers  # binds it: read, not run\n"
        "    return importlib.import_module('helpers').grade(output, reference)\n",
        {"helpers.py": HONEST},
    ),
}


@pytest.mark.parametrize("setup", sorted(HONEST_SETUPS))
def test_a_gated_metric_whose_code_is_bound_still_decides(tmp_path, setup):
    judge, files = HONEST_SETUPS[setup]
    rows = [{"id": f"ex-{i}", "expected": "yes", "output": "yes"} for i in range(1, 9)]
    project = _project(tmp_path, judge, files)
    project.write_rows(rows)
    approve_as_is(project, 0.9, ["mine"])
    assert _run(project) == ("pass", ExitCode.OK, [])


def test_an_ungated_metric_may_still_load_what_it_likes(tmp_path):
    judge, loaded = ROUTES["importlib.import_module"]
    project = _project(tmp_path, judge, {loaded: CHEAT})
    project.write_config(
        {
            "version": 1,
            "dataset": {"name": "suite", "path": "data.jsonl"},
            "task": {"type": "recorded", "field": "output"},
            "metrics": {"mine": {"type": "python", "function": "judge.py:score", "reference": "expected"}},
        }
    )
    result = project.run("--format", "json", "--no-progress", "--no-history", "--out", "run")
    assert result.code == ExitCode.OK, result
    values = [json.loads(line)["scores"]["mine"] for line in (project.root / "run" / "scores.jsonl").open()]
    assert [value for block in values for value in block] == [1.0] * 8


def test_a_project_module_the_environment_loaded_before_the_worker_blocks_the_gate(tmp_path):
    """A ``sitecustomize.py`` of the project on the ``PYTHONPATH`` evalglass runs with is imported by every Python
    that starts there, the worker's included, before any rule can watch it: the worker finds it loaded and refuses
    it all the same, until a bound file imports it by statement."""
    project = _project(tmp_path, JUDGE_WITH_HELPERS, {"helpers.py": HONEST})
    project.write_rows([{"id": f"ex-{i}", "expected": "yes", "output": "yes"} for i in range(1, 9)])
    (project.root / "site").mkdir()
    (project.root / "site" / "sitecustomize.py").write_text("LOADED = True\n")
    approve_as_is(project, 0.9, ["mine"])
    env = {"PYTHONPATH": str(project.root / "site")}
    result = run_cli("run", "--format", "json", "--no-progress", "--no-history", cwd=project.root, env=env)
    (gate,) = result.json()["decision"]["gates"]
    assert (gate["outcome"], result.code) == ("blocked", ExitCode.FAILED), result
    assert "site/sitecustomize.py, which the gate does not bind" in result.out, result.out


# ------------------------------------------------------------------------- what asks about a file without opening it
#: A file the pull request adds, ``lenient``: approved code that only *asks* whether it is there (lists a folder,
#: globs, looks a module up) turned a failing gate green. The folder it asks about, ``rules/``, held only bound files
#: when it was approved (``rules/base.json``, ``rules/sub/base.json``: data files). route: (the probe, the file added, what the change makes
#: of it: ``blocked``, the asking refused and named; ``fail``, the file unseen).
LENIENT = "    if {probe}:\n        return 1.0\n    return 1.0 if output == reference else 0.0\n"
HERE = "pathlib.Path(__file__).parent"
RULES = f"({HERE} / 'rules')"
ASKS: dict[str, tuple[str, str, str]] = {
    "os.listdir": (f"'lenient' in os.listdir({RULES})", "rules/lenient", "blocked"),
    "os.scandir": (f"any(entry.name == 'lenient' for entry in os.scandir({RULES}))", "rules/lenient", "blocked"),
    "os.walk": (f"any('lenient' in files for _, _, files in os.walk({RULES}))", "rules/lenient", "blocked"),
    "pathlib iterdir": (f"any(path.name == 'lenient' for path in {RULES}.iterdir())", "rules/lenient", "blocked"),
    "glob with a wildcard": (f"glob.glob(str({RULES} / 'len*'))", "rules/lenient", "blocked"),
    "glob of a literal name": (f"glob.glob(str({RULES} / 'lenient'))", "rules/lenient", "blocked"),
    "glob of a literal name below a wildcard": (
        f"glob.glob(str({RULES} / '*' / 'lenient'))",
        "rules/sub/lenient",
        "blocked",
    ),
    "pathlib glob of a literal name": (f"list({RULES}.glob('lenient'))", "rules/lenient", "blocked"),
    "pathlib rglob": (f"list({RULES}.rglob('lenient'))", "rules/lenient", "blocked"),
    "pkgutil.iter_modules": (
        f"any(module.name == 'lenient' for module in pkgutil.iter_modules([str({RULES})]))",
        "rules/lenient.py",
        "blocked",
    ),
    # The folder on sys.path (``BESIDE``): a lookup that only asks is refused as an import is.
    "importlib.util.find_spec": ("importlib.util.find_spec('lenient') is not None", "lenient.py", "blocked"),
    # The import system's own listing of a folder on sys.path, kept in its finder's cache: no longer made.
    "a finder's cache of a folder on sys.path": (
        f"importlib.machinery.PathFinder.find_spec('no_such_module', [str({HERE})]) is None and "
        f"'lenient' in set(sys.path_importer_cache[str({HERE})]._path_cache)",
        "lenient",
        "fail",
    ),
    # importlib.metadata lists each folder on sys.path for distributions: a project folder holds none in the worker.
    "a distribution importlib.metadata finds by its folder's name": (
        "next(iter(importlib.metadata.distributions(name='lenient')), None) is not None",
        "lenient-1.0.dist-info/METADATA",
        "fail",
    ),
    # ``os.open(name, dir_fd=...)``: the audit event carries the name, not the folder it is relative to.
    "a file opened relative to a descriptor of a folder outside the project": (
        "_peek('lenient')",
        "lenient",
        "blocked",
    ),
}
ASKING_IMPORTS = (
    "import glob, importlib.machinery, importlib.metadata, importlib.util, os, pathlib, pkgutil, sys\n"
    "def _peek(name):\n"
    "    outside = os.open(str(pathlib.Path(__file__).parents[2]), os.O_RDONLY)  # the project's parent\n"
    "    os.chdir('/')  # a relative name is not the working folder's\n"
    "    try:\n"
    "        found = os.open(f'{pathlib.Path(__file__).parents[1].name}/evals/{name}', os.O_RDONLY, dir_fd=outside)\n"
    "    except FileNotFoundError:\n"
    "        return False\n"
    "    return os.read(found, 1) == b'1'\n"
    "def score(output, reference):\n"
)


@pytest.mark.parametrize("route", sorted(ASKS))
def test_a_gated_metric_asking_about_a_file_its_gate_does_not_bind_is_not_answered(tmp_path, route):
    probe, added, outcome = ASKS[route]
    judge = ASKING_IMPORTS + LENIENT.format(probe=probe)
    bound = {"rules/base.json": "0", "rules/sub/base.json": "0"}
    project = _project(tmp_path, judge, bound, data_files=sorted(bound))
    approve_as_is(project, 0.9, ["mine"])  # approved as reviewed: 6 of 8 right, 0.75
    assert _run(project)[:2] == ("fail", ExitCode.FAILED)  # what it asks about holds only bound files: answered
    (project.evals / added).parent.mkdir(parents=True, exist_ok=True)
    (project.evals / added).write_text("1")  # the pull request: a file the approval does not bind
    got, code, diagnostics = _run(project)
    assert (got, code) == (outcome, ExitCode.FAILED), diagnostics  # on main: pass, exit 0
    if outcome == "blocked":
        assert len(diagnostics) == 8 and {item["code"] for item in diagnostics} == {"host_unbound_code"}, diagnostics
        message = str(diagnostics[0]["message"])
        assert ("lenient" in message or "it reads evals/rules," in message) and "does not bind" in message, message
    else:
        assert diagnostics == []


#: Honest metrics that list, glob, look modules up and read distributions: bound code only, so they decide.
HONEST_ASKING = (
    "import glob, importlib.metadata, json, os, pathlib, shutil, tempfile\n"
    "import helpers\n"
    "def score(output, reference):\n"
    f"    cases = sorted(path.name for path in ({HERE} / 'cases').iterdir())\n"
    f"    assert cases == sorted(os.listdir({HERE} / 'cases')) == ['a.json', 'b.json'], cases\n"
    f"    assert len(glob.glob(str({HERE} / 'cases' / '*.json'))) == 2\n"
    f"    assert [json.loads(path.read_text()) for path in sorted(({HERE} / 'cases').glob('*.json'))] == [1, 2]\n"
    "    assert importlib.metadata.version('PyYAML') and importlib.metadata.entry_points() is not None\n"
    "    with tempfile.TemporaryDirectory() as scratch:\n"
    "        os.makedirs(os.path.join(scratch, 'a', 'b'))\n"
    "        shutil.rmtree(os.path.join(scratch, 'a'))\n"
    "    return helpers.grade(output, reference)\n"
)


def test_a_gated_metric_listing_only_what_its_gate_binds_still_decides(tmp_path):
    rows = [{"id": f"ex-{i}", "expected": "yes", "output": "yes"} for i in range(1, 9)]
    files = {"helpers.py": HONEST, "cases/a.json": "1", "cases/b.json": "2"}
    project = _project(tmp_path, HONEST_ASKING, files, data_files=["cases/a.json", "cases/b.json"])
    project.write_rows(rows)
    approve_as_is(project, 0.9, ["mine"])
    assert _run(project) == ("pass", ExitCode.OK, [])
    (project.evals / "cases" / "c.json").write_text("3")  # the listing would now say more than the gate binds
    outcome, code, diagnostics = _run(project)
    assert (outcome, code) == ("blocked", ExitCode.FAILED), diagnostics
    assert "it lists the folder evals/cases, which holds c.json that the gate does not bind" in str(
        diagnostics[0]["message"]
    ), diagnostics[0]


# ---------------------------------------------------------------------- what asks about a file's metadata, not its text
#: A file the pull request adds, ``rules/lenient``, that approved code only *stats* (its size, whether it is there,
#: where a link leads): no audit event says so, and it turned a failing gate green. route: (the probe, what the pull
#: request adds: a file, ``NAME/`` an empty folder, ``NAME -> TARGET`` a symbolic link to a bound file).
RULE = f"str({RULES} / 'lenient')"
STATS: dict[str, tuple[str, str]] = {
    "os.stat": (f"_there(lambda: os.stat({RULE}))", "rules/lenient"),
    "os.lstat": (f"_there(lambda: os.lstat({RULE}))", "rules/lenient"),
    "os.path.getsize": (f"_there(lambda: os.path.getsize({RULE}))", "rules/lenient"),
    "os.path.getmtime": (f"_there(lambda: os.path.getmtime({RULE}))", "rules/lenient"),
    "os.path.exists": (f"os.path.exists({RULE})", "rules/lenient"),
    "os.path.isfile": (f"os.path.isfile({RULE})", "rules/lenient"),
    "os.path.lexists of a link": (f"os.path.lexists({RULE})", "rules/lenient -> base.json"),
    "pathlib Path.exists": (f"({RULES} / 'lenient').exists()", "rules/lenient"),
    "pathlib Path.stat": (f"_there(lambda: ({RULES} / 'lenient').stat().st_size)", "rules/lenient"),
    "os.access": (f"os.access({RULE}, os.F_OK)", "rules/lenient"),
    "os.statvfs": (f"_there(lambda: os.statvfs({RULE}))", "rules/lenient"),
    "os.readlink of a link to a bound file": (f"_there(lambda: os.readlink({RULE}))", "rules/lenient -> base.json"),
    "os.path.realpath through a link to a bound file": (
        f"os.path.realpath({RULE}) != {RULE}",
        "rules/lenient -> base.json",
    ),
    "os.stat of a name below it (ENOTDIR)": (
        f"_errno(lambda: os.stat({RULE} + '/x')) == errno.ENOTDIR",
        "rules/lenient",
    ),
    "os.stat relative to a descriptor of a folder outside the project": (
        "_there(lambda: os.stat(_below_parent('rules/lenient'), dir_fd=_parent()))",
        "rules/lenient",
    ),
    "os.stat through /proc/self/cwd": (
        f"_there(lambda: os.stat('/proc/self/cwd/' + os.path.relpath({RULE})))",
        "rules/lenient",
    ),
    "os.fstat of a descriptor opened for writing": (
        f"_there(lambda: os.fstat(os.open({RULE}, os.O_WRONLY | os.O_APPEND)).st_size)",
        "rules/lenient",
    ),
    "os.chmod (its error says whether it is there)": (f"_there(lambda: os.chmod({RULE}, 0o644))", "rules/lenient"),
    "os.listdir of an empty folder": (f"_there(lambda: os.listdir({RULE}))", "rules/lenient/"),
    # No audit event: ENOTDIR (a file there) or ENOENT, before any permission is checked.
    "os.chroot (its error says whether it is there)": (f"_there(lambda: os.chroot({RULE}))", "rules/lenient"),
}
STAT_IMPORTS = (
    "import errno, os, pathlib\n"
    "def _errno(ask):\n"
    "    try:\n        ask()\n    except OSError as error:\n        return error.errno\n    return 0\n"
    "def _there(ask):\n    return _errno(ask) != errno.ENOENT\n"
    "def _parent():\n    return os.open(str(pathlib.Path(__file__).parents[2]), os.O_RDONLY)  # the project's parent\n"
    "def _below_parent(name):\n    return f'{pathlib.Path(__file__).parents[1].name}/evals/{name}'\n"
    "def score(output, reference):\n"
)


def _add(root: Path, added: str) -> None:
    name, _, target = added.partition(" -> ")
    place = root / name
    place.parent.mkdir(parents=True, exist_ok=True)
    if target:
        place.symlink_to(target)
    elif name.endswith("/"):
        place.mkdir()
    else:
        place.write_text("1")


@pytest.mark.parametrize("route", sorted(STATS))
def test_a_gated_metric_asking_about_an_unbound_files_metadata_is_not_answered(tmp_path, route):
    probe, added = STATS[route]
    judge = STAT_IMPORTS + LENIENT.format(probe=probe)
    bound = {"rules/base.json": "0", "rules/sub/base.json": "0"}
    project = _project(tmp_path, judge, bound, data_files=sorted(bound))
    approve_as_is(project, 0.9, ["mine"])  # approved as reviewed: 6 of 8 right, 0.75
    assert _run(project)[:2] == ("fail", ExitCode.FAILED)  # nothing unbound there: answered "absent"
    _add(project.evals, added)  # the pull request: a file (a folder, a link) the approval does not bind
    outcome, code, diagnostics = _run(project)
    assert (outcome, code) == ("blocked", ExitCode.FAILED), diagnostics  # on main: pass, exit 0
    assert len(diagnostics) == 8 and {item["code"] for item in diagnostics} == {"host_unbound_code"}, diagnostics
    message = str(diagnostics[0]["message"])
    assert "it asks about evals/rules/lenient, which the gate does not bind" in message, message


#: An honest metric that stats its bound files, the folders on their way and a name that is not there, and loads a
#: bound module by its path (Alembic's migrations): it decides, and a file added elsewhere changes nothing.
HONEST_STATS = (
    "import importlib.metadata, importlib.util, os, pathlib, sys\n"
    "def score(output, reference):\n"
    f"    here = {HERE}\n"
    "    base = here / 'cases' / 'a.json'\n"
    "    assert base.exists() and base.stat().st_size == os.path.getsize(base) == 1 and os.path.isfile(base)\n"
    "    assert os.path.isdir(here / 'cases') and os.access(base, os.R_OK) and os.path.exists(here.parent)\n"
    "    assert os.path.realpath(here / 'data' / 'a.json') == str((here / 'cases' / 'a.json').resolve())\n"
    "    assert not os.path.exists(here / 'cases' / 'missing.json') and not (here / 'nothing').exists()\n"
    # A folder of the project on sys.path that holds nothing bound (a ``src`` on ``PYTHONPATH``): importlib.metadata
    # looks every folder there up (pydantic's plugin search does, on each model class it builds).
    "    sys.path.insert(0, str(here / 'tools'))\n"
    "    assert importlib.metadata.version('PyYAML')\n"
    "    spec = importlib.util.spec_from_file_location('m0001', here / 'migrations' / 'm0001.py')\n"
    "    module = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(module)\n"
    "    return module.grade(output, reference)\n"
)


def test_a_gated_metric_asking_about_its_bound_files_still_decides(tmp_path):
    rows = [{"id": f"ex-{i}", "expected": "yes", "output": "yes"} for i in range(1, 9)]
    files = {"cases/a.json": "1", "migrations/m0001.py": HONEST, "tools/unbound.py": ""}
    project = _project(tmp_path, HONEST_STATS, files, data_files=["cases/a.json", "data/a.json", "migrations/m0001.py"])
    (project.evals / "data").symlink_to("cases")  # a bound file named through a link: the name is bound too
    project.write_rows(rows)
    approve_as_is(project, 0.9, ["mine"])
    assert _run(project) == ("pass", ExitCode.OK, [])
    (project.evals / "cases" / "b.json").write_text("2")  # a file it never asks about: nothing changes
    (project.evals / "migrations" / "m0002.py").write_text(CHEAT)
    assert _run(project) == ("pass", ExitCode.OK, [])


def test_a_gated_metric_loading_an_unbound_module_by_its_path_blocks(tmp_path):
    """Alembic's way: ``spec_from_file_location`` and ``exec_module`` of a migration the gate does not bind."""
    judge = (
        "import importlib.util, pathlib\ndef score(output, reference):\n"
        "    spec = importlib.util.spec_from_file_location('m0002', pathlib.Path(__file__).parent / 'm0002.py')\n"
        "    module = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(module)\n"
        "    return module.grade(output, reference)\n"
    )
    project = _project(tmp_path, judge, {"m0002.py": HONEST})
    approve_as_is(project, 0.9, ["mine"])
    (project.evals / "m0002.py").write_text(CHEAT)
    outcome, code, diagnostics = _run(project)
    assert (outcome, code) == ("blocked", ExitCode.FAILED), diagnostics
    assert "m0002.py, which the gate does not bind" in str(diagnostics[0]["message"]), diagnostics[0]


SQLITE_JUDGE = (
    "import pathlib, sqlite3\ndef score(output, reference):\n"
    "    name = pathlib.Path(__file__).with_name('rules.db')\n"
    "    with sqlite3.connect(f'file:{name}?mode=ro', uri=True) as db:\n"
    "        (lenient,) = db.execute('select lenient from rules').fetchone()\n"
    "    return 1.0 if lenient or output == reference else 0.0\n"
)


def _rules_db(path: Path, lenient: int) -> None:
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("create table rules (lenient integer)")
        db.execute("insert into rules values (?)", (lenient,))
    db.close()


def test_a_database_the_metric_opens_with_sqlite_blocks_until_data_files_binds_it(tmp_path):
    """SQLite opens the file itself (no ``open`` event): only its ``sqlite3.connect`` event names it."""
    project = _project(tmp_path, SQLITE_JUDGE, {})
    _rules_db(project.evals / "rules.db", 0)
    approve_as_is(project, 0.9, ["mine"])
    _rules_db(project.evals / "rules.db", 1)  # the pull request: the approval binds no such file
    outcome, code, diagnostics = _run(project)
    assert (outcome, code) == ("blocked", ExitCode.FAILED), diagnostics  # on main: pass, exit 0
    assert "it reads evals/rules.db, which the gate does not bind; list it under the metric's `data_files:`" in str(
        diagnostics[0]["message"]
    ), diagnostics[0]
    (tmp_path / "bound").mkdir()
    bound = _project(tmp_path / "bound", SQLITE_JUDGE, {}, data_files=["rules.db"])
    _rules_db(bound.evals / "rules.db", 0)
    approve_as_is(bound, 0.9, ["mine"])
    assert _run(bound)[:2] == ("fail", ExitCode.FAILED)  # bound: it decides on what it read


def test_a_file_the_metric_reads_through_readline_blocks(tmp_path):
    """``readline`` reads a history or init file in C (no ``open`` event): its history then holds the file's lines."""
    judge = (
        "import pathlib, readline\ndef score(output, reference):\n"
        "    readline.clear_history()\n"
        "    readline.read_history_file(str(pathlib.Path(__file__).with_name('rules.txt')))\n"
        "    return 1.0 if readline.get_history_item(1) == 'lenient' or output == reference else 0.0\n"
    )
    project = _project(tmp_path, judge, {"rules.txt": "strict\n"})
    approve_as_is(project, 0.9, ["mine"])
    (project.evals / "rules.txt").write_text("lenient\n")  # the pull request: the approval binds no such file
    outcome, code, diagnostics = _run(project)
    assert (outcome, code) == ("blocked", ExitCode.FAILED), diagnostics  # on main: pass, exit 0
    assert "it reads evals/rules.txt, which the gate does not bind" in str(diagnostics[0]["message"]), diagnostics[0]
