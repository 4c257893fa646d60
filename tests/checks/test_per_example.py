"""Per-example checks: an example's output becomes files in a private folder that is the bound target."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from evalglass.core.checks import BindingStatus, CheckOutcome, CheckReason, CheckResult, to_score
from evalglass.core.score import Status
from evalglass.lanes.checkrun import (
    EXAMPLE_TARGET,
    CheckConfigError,
    CheckSpec,
    OutputRefused,
    materialise_output,
    run_checks,
    run_example_check,
)

from .helpers import py, spec

# A checker in the spirit of "run the candidate's code": import solution.py from the target and test it.
SOLUTION_CHECK = """
    import os, sys
    sys.path.insert(0, os.environ["EVALGLASS_TARGET"])
    sys.dont_write_bytecode = True
    try:
        from solution import add
    except SyntaxError as exc:
        print(f"cannot parse the solution: {exc.msg}", file=sys.stderr)
        sys.exit(2)
    sys.exit(0 if add(2, 3) == 5 else 1)
"""


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


def _solution_spec(**fields: Any) -> CheckSpec:
    return spec(
        SOLUTION_CHECK, output_file="solution.py", policy={"id": "solution-v1", "inconclusive_codes": [2]}, **fields
    )


# --- materialising ----------------------------------------------------------------------------------------------


def test_text_becomes_one_file_and_a_mapping_several() -> None:
    assert materialise_output("print(1)", "solution.py") == {"solution.py": b"print(1)"}
    assert materialise_output(b"\x00\x01", "blob.bin") == {"blob.bin": b"\x00\x01"}
    assert materialise_output({"a.py": "x", "pkg/b.py": b"y"}, "ignored.txt") == {"a.py": b"x", "pkg/b.py": b"y"}


@pytest.mark.parametrize(
    "output",
    [
        {"../evil.py": "x"},
        {"/etc/evil": "x"},
        {"a/../../evil": "x"},
        {"./a": "x"},
        {"a//b": "x"},
        {"": "x"},
        {"dir/": "x"},
        {"back\\slash": "x"},
        {"a": "x", "a/b": "y"},
        {"a.py": 3},
        {7: "x"},
        {},
        None,
        42,
        ["a"],
    ],
)
def test_unsafe_or_unusable_outputs_are_refused(output: object) -> None:
    with pytest.raises(OutputRefused):
        materialise_output(output, "solution.py")


# --- running ----------------------------------------------------------------------------------------------------


def test_the_example_folder_is_the_bound_target(base: Path, scratch: Path) -> None:
    good = run_example_check(
        _solution_spec(),
        base,
        "def add(a, b):\n    return a + b\n",
        check_id="adds",
        example_id="ex-1",
        tmp_root=scratch,
    )
    assert good.outcome is CheckOutcome.PASS and good.binding is BindingStatus.BOUND
    assert good.requested_fingerprint == good.observed_fingerprint == good.observed_after_fingerprint
    assert good.target == EXAMPLE_TARGET and good.example_id == "ex-1"
    assert good.env["EVALGLASS_TARGET"] == EXAMPLE_TARGET
    assert to_score(good).value == 1.0 and to_score(good).evidence == ("check:adds:ex-1",)

    wrong = run_example_check(
        _solution_spec(),
        base,
        "def add(a, b):\n    return a - b\n",
        check_id="adds",
        example_id="ex-2",
        tmp_root=scratch,
    )
    assert wrong.outcome is CheckOutcome.FAIL and to_score(wrong).value == 0.0

    garbled = run_example_check(
        _solution_spec(), base, "def add(:\n", check_id="adds", example_id="ex-3", tmp_root=scratch
    )
    assert garbled.outcome is CheckOutcome.INCONCLUSIVE and "cannot parse the solution" in (garbled.detail or "")
    assert to_score(garbled).status is Status.NON_EVALUABLE
    assert list(scratch.iterdir()) == []


def test_same_content_same_binding_across_examples(base: Path, scratch: Path) -> None:
    one = run_example_check(_solution_spec(), base, "x = 1\n", check_id="c", example_id="a", tmp_root=scratch)
    two = run_example_check(_solution_spec(), base, "x = 1\n", check_id="c", example_id="b", tmp_root=scratch)
    three = run_example_check(_solution_spec(), base, "x = 2\n", check_id="c", example_id="c", tmp_root=scratch)
    assert one.observed_fingerprint == two.observed_fingerprint != three.observed_fingerprint


def test_the_folder_is_private_and_removed_whatever_happens(base: Path, scratch: Path) -> None:
    report = """
        import os, stat
        target = os.environ["EVALGLASS_TARGET"]
        print(target)
        print(oct(stat.S_IMODE(os.stat(target).st_mode)))
        print(sorted(os.listdir(target)))
    """
    result = run_example_check(
        spec(report), base, {"a.txt": "1", "sub/b.txt": "2"}, check_id="c", example_id="e", tmp_root=scratch
    )
    folder, mode, listing = result.stdout_tail.splitlines()
    assert Path(folder).parent == scratch.resolve() or Path(folder).parent == scratch
    assert mode == "0o700" and listing == "['a.txt', 'sub']"
    assert not Path(folder).exists()

    # a command that times out, or that leaves a read-only folder behind, does not leave its target behind
    lock = """
        import os, time
        target = os.environ["EVALGLASS_TARGET"]
        os.makedirs(os.path.join(target, "ro", "deep"))
        open(os.path.join(target, "ro", "deep", "f"), "w").write("x")
        os.chmod(os.path.join(target, "ro", "deep"), 0o500)
        os.chmod(os.path.join(target, "ro"), 0o500)
        time.sleep(30)
    """
    timed_out = run_example_check(
        spec(lock, timeout=1, writes_target=True), base, "x", check_id="c", example_id="e", tmp_root=scratch
    )
    assert timed_out.reason is CheckReason.TIMEOUT
    assert list(scratch.iterdir()) == []


def test_the_default_temp_folder_is_cleaned_too(base: Path) -> None:
    result = run_example_check(
        spec("import os; print(os.environ['EVALGLASS_TARGET'])"), base, "x", check_id="c", example_id="e"
    )
    folder = Path(result.stdout_tail.strip())
    assert folder.name.startswith("evalglass-check-") and not folder.exists()


def test_example_content_is_never_interpolated_into_a_shell(base: Path, scratch: Path) -> None:
    hostile = "'; touch pwned1; echo '\n$(touch pwned2)\n`touch pwned3`\n{target}\n"
    shell_check = CheckSpec(command='cat "$EVALGLASS_TARGET/output.txt"', shell=True)
    result = run_example_check(shell_check, base, hostile, check_id="c", example_id="e", tmp_root=scratch)
    assert result.outcome is CheckOutcome.PASS and result.stdout_tail == hostile
    argv_check = CheckSpec(command=[*py("import sys; print(open(sys.argv[1]).read(), end='')"), "{target}/output.txt"])
    again = run_example_check(argv_check, base, hostile, check_id="c", example_id="e", tmp_root=scratch)
    assert again.stdout_tail == hostile and again.command[-1] == "{target}/output.txt"
    assert not any(base.glob("pwned*")) and not any(Path.cwd().glob("pwned*"))


def test_a_traversing_name_is_an_error_and_writes_nothing(base: Path, scratch: Path) -> None:
    marker = base / "ran.marker"
    result = run_example_check(
        spec(f"open({str(marker)!r}, 'w').write('ran')"),
        base,
        {"ok.py": "x", "../escaped.py": "x"},
        check_id="c",
        example_id="e",
        tmp_root=scratch,
    )
    CheckResult.model_validate_json(result.model_dump_json())
    assert result.outcome is CheckOutcome.ERROR and result.reason is CheckReason.OUTPUT_UNUSABLE
    assert result.binding is BindingStatus.UNAVAILABLE and not result.command_started
    assert not marker.exists() and not (scratch / "escaped.py").exists() and list(scratch.iterdir()) == []
    assert to_score(result).status is Status.ERROR


def test_a_check_that_writes_into_the_example_is_an_error(base: Path, scratch: Path) -> None:
    touch = "import os; open(os.path.join(os.environ['EVALGLASS_TARGET'], 'out.log'), 'w').write('x')"
    result = run_example_check(spec(touch), base, "x", check_id="c", example_id="e", tmp_root=scratch)
    assert result.reason is CheckReason.TARGET_MODIFIED
    tolerated = run_example_check(
        spec(touch, target={"exclude": ["*.log"]}), base, "x", check_id="c", example_id="e", tmp_root=scratch
    )
    assert tolerated.outcome is CheckOutcome.PASS


def test_a_per_example_check_cannot_be_bound_to_a_declared_path(base: Path) -> None:
    with pytest.raises(CheckConfigError, match="per-example"):
        run_example_check(spec("pass", target="src"), base, "x", check_id="c", example_id="e")


# --- in parallel ------------------------------------------------------------------------------------------------

_TIMING = {"started_at", "duration_s"}


def run_example_checks(
    check: CheckSpec, base: Path, outputs: list[tuple[str, object]], *, check_id: str, max_workers: int, tmp_root: Path
) -> list[CheckResult]:
    """Per-example checks over a thread pool, as a run scores a parallel metric (``scoring.call_metric``)."""
    with ThreadPoolExecutor(max_workers=max_workers) as pool:
        return list(
            pool.map(
                lambda pair: run_example_check(
                    check, base, pair[1], check_id=check_id, example_id=pair[0], tmp_root=tmp_root
                ),
                outputs,
            )
        )


def test_parallel_results_equal_sequential_ones_in_input_order(base: Path, scratch: Path) -> None:
    outputs: list[tuple[str, object]] = [
        ("e0", "def add(a, b):\n    return a + b\n"),
        ("e1", "def add(a, b):\n    return a * b\n"),
        ("e2", "def add(:\n"),
        ("e3", {"solution.py": "def add(a, b):\n    return b + a\n", "notes.md": "extra file"}),
        ("e4", {"../solution.py": "x"}),
        ("e5", "import sys; sys.exit(9)\n"),
        ("e6", "def add(a, b):\n    return 5\n"),
        ("e7", b"\xff\xfe not python"),
    ]
    check = _solution_spec()
    sequential = run_example_checks(check, base, outputs, check_id="adds", max_workers=1, tmp_root=scratch)
    parallel = run_example_checks(check, base, outputs, check_id="adds", max_workers=4, tmp_root=scratch)
    assert [r.example_id for r in parallel] == [eid for eid, _ in outputs]
    assert [r.model_dump(exclude=_TIMING) for r in parallel] == [r.model_dump(exclude=_TIMING) for r in sequential]
    assert [r.outcome for r in parallel] == [
        CheckOutcome.PASS,
        CheckOutcome.FAIL,
        CheckOutcome.INCONCLUSIVE,
        CheckOutcome.PASS,
        CheckOutcome.ERROR,
        CheckOutcome.FAIL,
        CheckOutcome.PASS,
        CheckOutcome.INCONCLUSIVE,
    ]
    assert list(scratch.iterdir()) == []


def test_checks_really_run_concurrently_up_to_the_limit(base: Path, tmp_path: Path, scratch: Path) -> None:
    # Each check announces itself and succeeds only if it sees all four running at once.
    rendezvous = tmp_path / "rendezvous"
    rendezvous.mkdir()
    code = f"""
        import os, sys, time
        folder = {str(rendezvous)!r}
        open(os.path.join(folder, os.urandom(8).hex()), "w").close()
        deadline = time.monotonic() + 5
        while len(os.listdir(folder)) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        sys.exit(0 if len(os.listdir(folder)) >= 4 else 1)
    """
    outputs: list[tuple[str, object]] = [(f"e{i}", str(i)) for i in range(4)]
    results = run_example_checks(spec(code, timeout=10), base, outputs, check_id="c", max_workers=4, tmp_root=scratch)
    assert [r.outcome for r in results] == [CheckOutcome.PASS] * 4


def test_the_worker_limit_must_be_positive(base: Path) -> None:
    with pytest.raises(CheckConfigError, match="max_workers"):
        run_checks({"a": spec("pass"), "b": spec("pass")}, base, max_workers=0)


def test_stat_of_written_files_is_private(base: Path, scratch: Path) -> None:
    code = "import os, stat; print(oct(stat.S_IMODE(os.stat(os.environ['EVALGLASS_TARGET'] + '/output.txt').st_mode)))"
    result = run_example_check(spec(code), base, "x", check_id="c", example_id="e", tmp_root=scratch)
    assert result.stdout_tail.strip() == oct(stat.S_IRUSR | stat.S_IWUSR)
