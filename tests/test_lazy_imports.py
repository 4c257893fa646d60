"""Heavy modules load only when a command needs them (`evalglass --help` and `view` must start fast).

Each check runs in a fresh interpreter, so what another test imported cannot hide a regression.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.project import loaded_by_a_run

CASES = {
    "the CLI module (--help)": (
        "import evalglass.cli",
        ["numpy", "pydantic", "rich", "yaml", "jsonschema", "evalglass.engine.jobs.pipeline"],
    ),
    "what `view` loads": (
        "import evalglass.cli\n"
        "from evalglass.api import load_run\n"
        "from evalglass.engine.runs.artifacts import LAST_RUN_POINTER, load_runrecord, load_scorecard\n"
        "from evalglass.engine.decide.consistency import load_checked\n"
        "from evalglass.report.terminal import render_terminal",
        ["jsonschema", "evalglass.engine.jobs.pipeline", "evalglass.engine.spec.config", "evalglass.metrics", "yaml"],
    ),
    "the metric registry": ("import evalglass.metrics.registry", ["jsonschema"]),
    # The package itself is imported by the CLI, by `python -m evalglass` and by every pytest session (the plugin).
    "the package (import evalglass)": (
        "import evalglass",
        ["typing", "numpy", "pydantic", "rich", "yaml", "click", "orjson", "evalglass.api", "evalglass.core"],
    ),
    # pytest loads the plugin in every session of an environment where EvalGlass is installed.
    "the pytest plugin": (
        "import evalglass.pytest_plugin",
        ["numpy", "pydantic", "rich", "yaml", "click", "orjson", "evalglass.core", "evalglass.engine"],
    ),
}

# What a recorded run loads: a run whose outputs are in the dataset calls nothing, so none of the live machinery.
RECORDED_RUN_NEVER_LOADS = [
    "asyncio",
    "sqlite3",
    "aiohttp",
    "openai",
    "httpx",
    "jinja2",
    "scipy",
    "jsonschema",
    "rich.progress",
    "evalglass.lanes.executor",
    "evalglass.lanes.retry",
    # The chat call and the call cache (a recorded trajectory's finish reason is read with `core.finish`; the run
    # checks its cache mode with `engine.produce.cachemode`), a check's host files, another tool's sample failures.
    "evalglass.lanes.chatcall",
    "evalglass.lanes.callcache",
    "evalglass.engine.produce.cache",
    "evalglass.engine.produce.cachewriter",
    "evalglass.lanes.checkinputs",
    "evalglass.engine.datasets.toollogs.toolresults",
    # The message form's models (13 of them, never built by a run over recorded outputs): the readers and the
    # metrics' guard need only `core.notcaptured`.
    "evalglass.core.conversation",
    # Metric types the config does not declare (``metrics.registry.spec_class``): their modules, and what only they
    # use (the judge's scale).
    "evalglass.metrics.llm_judge",
    "evalglass.metrics.jury",
    "evalglass.metrics.host",
    "evalglass.metrics.check",
    "evalglass.metrics.schemas",
    "evalglass.metrics.recorded",
    "evalglass.lanes.judgespec",
    # A comparative gate's rules (baselines, paired differences), for a config with no `compare_to` gate.
    "evalglass.core.comparative",
    "evalglass.core.baselinesource",
    # What reads a run's failing examples back, for report.md's lists under active gates (none here), and when an
    # approval expires (an active approval's dates).
    "evalglass.engine.explore.failing",
    "evalglass.core.expiry",
    "difflib",  # only for "did you mean" after a wrong name
    "html",  # its entity table, for three replacements (`report.safetext.html_text`)
]

RECORDED_CONFIG = """\
version: 1
dataset: {name: bench, path: d.jsonl}
task: {type: recorded, field: output}
metrics:
  exact: {type: exact_match, field: answer, reference: expected}
  has_digits: {type: regex, field: answer, pattern: "\\\\d+"}
  latency_ok: {type: numeric_bounds, field: latency_ms, min: 0, max: 800}
"""


def _one_example_project(folder: Path) -> None:
    """The recorded config over a one-line dataset, with an empty ledger."""
    (folder / "evalglass.yaml").write_text(RECORDED_CONFIG)
    (folder / "authority.yaml").write_text("version: 1\n")
    (folder / "d.jsonl").write_text('{"id": "a", "expected": "1", "output": {"answer": "1", "latency_ms": 5}}\n')


@pytest.mark.parametrize("case", list(CASES))
def test_heavy_modules_are_not_imported_before_they_are_used(case: str) -> None:
    code, absent = CASES[case]
    probe = f"{code}\nimport sys\nprint(' '.join(name for name in {absent!r} if name in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == [], f"{case} imported {loaded}"


def test_a_json_schema_metric_still_loads_jsonschema_when_used() -> None:
    from pathlib import Path

    from evalglass.core.example import Example
    from evalglass.metrics import parse_metric_spec
    from evalglass.metrics.base import BuildContext

    spec = parse_metric_spec({"type": "json_schema", "schema": {"type": "object", "required": ["a"]}})
    function = spec.build(BuildContext(Path(".")))
    assert function(Example(id="x", line=1, fields={}, output={"a": 1})) == 1.0
    assert function(Example(id="y", line=2, fields={}, output={"b": 1})) != 1.0


def test_a_recorded_run_loads_no_live_machinery(tmp_path: Path) -> None:
    """The whole `evalglass run` command in a fresh interpreter, with the terminal's progress bar as the reporter."""
    (tmp_path / "evalglass.yaml").write_text(RECORDED_CONFIG)
    (tmp_path / "authority.yaml").write_text("version: 1\n")
    rows = [
        {"id": f"e{i}", "expected": "42", "output": {"answer": "42" if i % 2 else "x", "latency_ms": 10 * i}}
        for i in range(20)
    ]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "import evalglass.engine.produce.progress as progress\n"
        "from evalglass.cli import main\n"
        "progress.reporter_for = lambda stream=None: progress.RichReporter()\n"
        "try:\n"
        # The run history (SQLite through SQLAlchemy) is loaded after the run by design; its cost is its own
        # benchmark (BENCHMARKS.md, "Run history"), and the test below pins what it loads.
        "    main(['run', '--out', 'out', '--no-history'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        f"loaded = [name for name in {RECORDED_RUN_NEVER_LOADS!r} if name in sys.modules]\n"
        "Path('loaded.txt').write_text(' '.join(loaded))\n"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert (tmp_path / "out" / "scorecard.json").exists()
    loaded = (tmp_path / "loaded.txt").read_text().split()
    assert loaded == [], f"a recorded run imported {loaded}"


TRAJECTORY_CONFIG = """\
version: 1
dataset: {name: trajectories, path: t.jsonl}
task: {type: recorded, field: trajectory}
metrics:
  right_calls: {type: tool_calls, reference: expected_calls, mode: any_order}
  call_f1: {type: tool_calls, reference: expected_calls, measure: f1}
"""


def test_a_recorded_trajectory_replay_loads_neither_the_message_models_nor_the_live_machinery(tmp_path: Path) -> None:
    """Replaying recorded trajectories through `tool_calls` metrics reads each trajectory as plain JSON
    (`core.trajectory`): the message form's pydantic models are its declared schema, not what a run builds."""
    (tmp_path / "evalglass.yaml").write_text(TRAJECTORY_CONFIG)
    (tmp_path / "authority.yaml").write_text("version: 1\n")
    calls = [{"name": "search", "arguments": {"query": f"q{i}"}} for i in range(3)]
    rows = []
    for i in range(6):
        made = calls if i % 2 else calls[:2]
        messages: list[dict[str, object]] = [{"role": "user", "parts": [{"type": "text", "content": f"task {i}"}]}]
        for step, call in enumerate(made):
            messages.append({"role": "assistant", "parts": [{"type": "tool_call", "id": f"c{step}", **call}]})
            messages.append(
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{step}", "response": "ok"}]}
            )
        messages.append({"role": "assistant", "parts": [{"type": "text", "content": "done"}]})
        tool_calls = [{"id": f"c{step}", **call, "result": "ok"} for step, call in enumerate(made)]
        trajectory = {"messages": messages, "tool_calls": tool_calls, "finish": "stop", "steps": len(made) + 1}
        rows.append({"id": f"t{i}", "expected_calls": calls, "trajectory": trajectory})
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    # scipy is loaded here by design: the F1 metric's interval is a Student-t one.
    never = [name for name in RECORDED_RUN_NEVER_LOADS if name != "scipy"]
    loaded = loaded_by_a_run(tmp_path, never)
    card = json.loads((tmp_path / "out" / "scorecard.json").read_text())
    means = {metric["name"]: metric["estimate"]["point"] for metric in card["metrics"]}
    assert means["right_calls"] == 0.5, means  # the runs with two of the three expected calls fail any_order
    assert loaded == [], f"a recorded trajectory replay imported {loaded}"


def test_the_run_command_loads_the_pipeline_with_the_collector_paused(tmp_path: Path) -> None:
    """`evalglass run` imports the pipeline and everything below it with the cyclic collector off (and freezes it
    after): no collection starts while those modules are still loading."""
    _one_example_project(tmp_path)
    probe = (
        "import gc, sys\n"
        "from pathlib import Path\n"
        "during = []\n"
        "def loading(phase, info):\n"
        "    module = sys.modules.get('evalglass.engine.jobs.pipeline')\n"
        "    if phase == 'start' and module is not None and getattr(module.__spec__, '_initializing', False):\n"
        "        during.append(info['generation'])\n"
        "gc.callbacks.append(loading)\n"
        "from evalglass.cli import main\n"
        "try:\n"
        "    main(['run', '--out', 'out', '--no-history'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "assert 'evalglass.engine.jobs.pipeline' in sys.modules\n"
        "Path('during.txt').write_text(repr(during))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "during.txt").read_text() == "[]"


# What `evalglass preflight` reads (a config, a ledger, the dataset for its gold fingerprint) needs no statistics
# and no run machinery: numpy alone was a tenth of its time (BENCHMARKS.md, issue 19).
PREFLIGHT_NEVER_LOADS = [
    "numpy",
    "scipy",
    "evalglass.core.compare",
    "evalglass.core.columns",
    "evalglass.core.scorecard",
    "evalglass.engine.datasets.outputs",
    "evalglass.engine.jobs.pipeline",
    "evalglass.engine.produce.sink",
]


def test_preflight_loads_no_statistics(tmp_path: Path) -> None:
    """Every gate kind a ledger can approve, gold included, previewed through the engine and both renderers."""
    (tmp_path / "evalglass.yaml").write_text(
        RECORDED_CONFIG
        + "gates:\n"
        + "  exact_gate: {metric: exact, proposed_threshold: 0.5}\n"
        + "  latency_gate: {metric: latency_ok, direction: higher_is_better, min_n: 5}\n"
    )
    stale, edited = "sha256:" + "0" * 64, "sha256:" + "1" * 64
    (tmp_path / "authority.yaml").write_text(
        "version: 1\n"
        "gates:\n"
        f"  exact_gate: {{active: true, threshold: 0.5, fingerprint: '{stale}', expires_on: 2026-01-01}}\n"
        "  gone: {active: true, threshold: 0.5}\n"
        "datasets:\n"
        f"  bench: {{validated_gold: true, fingerprint: '{edited}'}}\n"
    )
    (tmp_path / "d.jsonl").write_text('{"id": "a", "expected": "1", "output": {"answer": "1", "latency_ms": 5}}\n')
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "import evalglass.cli\n"
        "from evalglass.engine.jobs.preflight import preflight\n"
        "from evalglass.report.preflight import preflight_json, preflight_text\n"
        "found = preflight(Path('evalglass.yaml'), today='2026-12-01')\n"
        "text = preflight_text(found) + str(preflight_json(found))\n"
        "assert 'gate_undeclared' in text and 'approval_expired' in text and 'gold' in text, text\n"
        f"loaded = [name for name in {PREFLIGHT_NEVER_LOADS!r} if name in sys.modules]\n"
        "Path('loaded.txt').write_text(' '.join(loaded))\n"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    loaded = (tmp_path / "loaded.txt").read_text().split()
    assert loaded == [], f"preflight imported {loaded}"


def test_the_statistics_package_names_every_export_where_it_lives() -> None:
    """``core.stats`` loads each name from its submodule on first use: every name it exports is one it can load,
    and is the submodule's own object."""
    import importlib
    import pkgutil

    import evalglass.core.stats as stats

    assert set(stats.__all__) == set(stats._HOME)
    # Importing a submodule binds its name on the package, so a name shared with a submodule would become that
    # module as soon as a sibling imported it.
    assert not set(stats._HOME) & {module.name for module in pkgutil.iter_modules(stats.__path__)}
    for name in stats.__all__:
        home = importlib.import_module(f"evalglass.core.stats.{stats._HOME[name]}")
        assert getattr(stats, name) is getattr(home, name), name
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = stats.no_such_name  # type: ignore[attr-defined]


def test_recording_into_a_history_at_its_schema_revision_loads_no_migration_machinery(tmp_path: Path) -> None:
    """Alembic (and its templates) load only when a database must be migrated, not on every run."""
    _one_example_project(tmp_path)
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from evalglass.cli import main\n"
        "try:\n"
        "    main(['run', '--out', sys.argv[1]])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "Path(sys.argv[1] + '.txt').write_text(' '.join(n for n in ('alembic', 'mako') if n in sys.modules))\n"
    )
    for name in ("first", "second"):  # the first creates the history, the second finds it at its revision
        subprocess.run([sys.executable, "-c", probe, name], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert (tmp_path / ".evalglass" / "history.sqlite").is_file()
    assert (tmp_path / "second.txt").read_text() == ""


def test_every_model_defers_its_build() -> None:
    """A model's validator is built on first use: a recorded run uses about 20 of the 65 models it imports."""
    import importlib
    import pkgutil

    from pydantic import BaseModel

    import evalglass

    for module in pkgutil.walk_packages(evalglass.__path__, "evalglass."):
        if module.name != "evalglass.__main__":
            importlib.import_module(module.name)
    models = [model for model in _subclasses(BaseModel) if model.__module__.startswith("evalglass.")]
    assert len(models) > 40
    eager = sorted(model.__qualname__ for model in models if not model.model_config.get("defer_build"))
    assert eager == [], f"add defer_build=True to the model_config of {eager}"


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


STUDENT_T_CONFIG = """\
version: 1
dataset: {name: bench, path: d.jsonl}
task: {type: recorded, field: output}
metrics:
  exact: {type: exact_match, field: answer, reference: expected, interval: {method: student_t}}
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads through /proc")
@pytest.mark.parametrize("interval", ["wilson", "student_t"])
def test_a_run_starts_no_blas_threads_and_leaves_the_environment_as_it_was(tmp_path: Path, interval: str) -> None:
    """numpy's OpenBLAS, and SciPy's own copy when a t quantile loads SciPy's ufuncs, start no worker threads."""
    _one_example_project(tmp_path)
    if interval == "student_t":
        (tmp_path / "evalglass.yaml").write_text(STUDENT_T_CONFIG)
        with (tmp_path / "d.jsonl").open("a") as dataset:
            dataset.write('{"id": "b", "expected": "1", "output": {"answer": "2", "latency_ms": 5}}\n')
    probe = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from evalglass.cli import main\n"
        "try:\n"
        "    main(['run', '--out', 'out'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "Path('probe.txt').write_text(f\"{len(os.listdir('/proc/self/task'))} {'OPENBLAS_NUM_THREADS' in os.environ}\")\n"
    )
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
    }
    subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert (tmp_path / "probe.txt").read_text() == "1 False"
    if interval == "student_t":  # the case loaded SciPy: its interval is a t interval
        card = json.loads((tmp_path / "out" / "scorecard.json").read_text())
        assert card["metrics"][0]["estimate"]["interval"]["method"] == "student_t"


def test_a_deferred_model_first_used_by_many_threads_at_once_validates_strictly() -> None:
    """Per-example checks build their first CheckResult and Score on a thread pool: the deferred build must hold."""
    probe = """
import threading
from pydantic import ValidationError
from evalglass.core.score import Diagnostic
barrier = threading.Barrier(16)
problems = []
def first_use():
    barrier.wait()
    try:
        assert Diagnostic(code="a_b", message="m").code == "a_b"
        Diagnostic.model_validate({"code": "a_b", "message": "m", "extra": 1})
        problems.append("an unknown key was accepted")
    except ValidationError:
        pass
    except Exception as exc:
        problems.append(repr(exc))
threads = [threading.Thread(target=first_use) for _ in range(16)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(problems)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_reading_a_run_folder_loads_no_history_database(tmp_path: Path) -> None:
    """A run named by its folder is read as it is (``history.named``): SQLAlchemy loads only for a reference that
    must be looked up in the history."""
    _one_example_project(tmp_path)
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from evalglass.cli import main\n"
        "for argv in (['run', '--out', 'out', '--no-history'], ['view', 'out'], ['verify', 'out']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as done:\n"
        "        assert done.code == 0, (argv, done.code)\n"
        "Path('loaded.txt').write_text(' '.join(n for n in ('sqlalchemy', 'evalglass.history.refs') if n in sys.modules))\n"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert (tmp_path / "loaded.txt").read_text() == ""
