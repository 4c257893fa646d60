"""One declared check over four situations: PASS, FAIL, INCONCLUSIVE and ERROR stay apart.

The check looks for an unresolved ``FIXME`` in a release note. It cannot read binary content as prose and says so
with exit 2, which this check's policy (declared before anything runs) calls inconclusive. A fourth target changes
after its state was requested, so nothing may be measured against it.
"""

from __future__ import annotations

from pathlib import Path

from evalglass.core.authority import Authority
from evalglass.core.checks import (
    BindingStatus,
    CheckOutcome,
    CheckReason,
    Repair,
    check_exit_code,
    to_score,
)
from evalglass.core.gates import Outcome, evaluate_check_gate
from evalglass.core.gatespec import GateSpec
from evalglass.core.score import Status
from evalglass.lanes.checkrun import CheckSpec, run_check
from evalglass.lanes.targetstate import fingerprint_target

from .helpers import PY

FINGERPRINT = "sha256:" + "0" * 64

CHECKER = """\
import pathlib, sys

note = pathlib.Path(sys.argv[1]) / "release-note.txt"
data = note.read_bytes()
try:
    text = data.decode("utf-8")
except UnicodeDecodeError:
    print("binary content: this check cannot read it as prose", file=sys.stderr)
    sys.exit(2)
if "FIXME" in text:
    print("unresolved FIXME in the release note", file=sys.stderr)
    sys.exit(1)
print("release note is clean")
"""


def _declare(base: Path, target: str) -> CheckSpec:
    return CheckSpec.model_validate(
        {
            "command": [PY, "tools/no_fixme.py", "{target}"],
            "target": target,
            "timeout": 5,
            "policy": {"id": "no-fixme-v1", "pass_codes": [0], "inconclusive_codes": [2]},
        },
        context={"base_dir": base},
    )


def test_four_situations_four_outcomes_three_repairs(tmp_path: Path) -> None:
    base = tmp_path / "repo"
    (base / "tools").mkdir(parents=True)
    (base / "tools" / "no_fixme.py").write_text(CHECKER)
    contents = {
        "clean": b"Fixed the login bug.\n",
        "dirty": b"Fixed the login bug. FIXME: mention the migration.\n",
        "binary": b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x00",
        "moving": b"Draft one.\n",
    }
    for name, data in contents.items():
        (base / name).mkdir()
        (base / name / "release-note.txt").write_bytes(data)

    # Each request names the state it wants measured, taken before anything runs.
    requested = {name: fingerprint_target(base / name).fingerprint for name in contents}
    (base / "moving" / "release-note.txt").write_bytes(b"Draft two, edited after the request.\n")

    results = {
        name: run_check(_declare(base, name), base, check_id=f"note-{name}", expected_fingerprint=requested[name])
        for name in contents
    }
    clean, dirty, binary, moving = (results[n] for n in ("clean", "dirty", "binary", "moving"))

    assert (clean.outcome, clean.binding, clean.repair, clean.exit_code) == (
        CheckOutcome.PASS,
        BindingStatus.BOUND,
        Repair.ACCEPT_WORK,
        0,
    )
    assert (dirty.outcome, dirty.binding, dirty.repair, dirty.exit_code) == (
        CheckOutcome.FAIL,
        BindingStatus.BOUND,
        Repair.INVESTIGATE_WORK,
        1,
    )
    assert (binary.outcome, binary.binding, binary.repair, binary.exit_code) == (
        CheckOutcome.INCONCLUSIVE,
        BindingStatus.BOUND,
        Repair.GATHER_EVIDENCE,
        2,
    )
    assert binary.detail == (
        "exit code 2 is declared inconclusive by no-fixme-v1: binary content: this check cannot read it as prose"
    )
    assert (moving.outcome, moving.binding, moving.repair, moving.reason) == (
        CheckOutcome.ERROR,
        BindingStatus.MISMATCH,
        Repair.REPAIR_MEASUREMENT,
        CheckReason.BINDING_MISMATCH,
    )

    # Which checks actually reached the verifier, and the policy each result was judged by.
    assert binary.command_started is True
    assert moving.command_started is False and moving.exit_code is None
    assert moving.observed_fingerprint == fingerprint_target(base / "moving").fingerprint
    assert moving.requested_fingerprint == requested["moving"]
    assert binary.policy.id == "no-fixme-v1" and binary.policy.inconclusive_codes == (2,)
    assert len({r.policy_fingerprint for r in results.values()}) == 1

    # The same four as scores, as gate outcomes and as standalone exit codes.
    assert [to_score(r).status for r in results.values()] == [
        Status.SCORED,
        Status.SCORED,
        Status.NON_EVALUABLE,
        Status.ERROR,
    ]
    assert [to_score(r).value for r in results.values()] == [1.0, 0.0, None, None]
    gate = GateSpec(check="no_fixme")
    active = Authority(active=True)
    assert [evaluate_check_gate("g", gate, FINGERPRINT, active, r).outcome for r in results.values()] == [
        Outcome.PASS,
        Outcome.FAIL,
        Outcome.BLOCKED,
        Outcome.BLOCKED,
    ]
    assert [check_exit_code([r]) for r in results.values()] == [0, 1, 3, 4]
