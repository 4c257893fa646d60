"""Where a judge is served, as the ledger binds it: equivalent spellings of one server are one endpoint (no false
red), and anything that can reach another server or speak another API is another endpoint (no false green)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.authority import (
    AgreementInterval,
    CalibrationRecord,
    GateApproval,
    GateIdentity,
    JudgeRequirement,
    JudgeStanding,
    Ledger,
    declared_gate_authority,
    resolve_authority,
)
from evalglass.core.endpoint import endpoint_differences, parse_endpoint, serving_origin
from evalglass.core.fingerprint import fingerprint_of

GATE_FP = fingerprint_of({"gate": "g"})
TODAY = "2026-12-01"
SERVED = "openai http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    "spelling",
    [
        "http://127.0.0.1:8000/v1",
        "http://127.0.0.1:8000/v1/",
        "http://127.0.0.1:8000/v1///",
        "HTTP://127.0.0.1:8000/v1",
        "http://127.0.0.1:8000/v1#fragment",
        " http://127.0.0.1:8000/v1 ",
    ],
)
def test_equivalent_spellings_are_one_endpoint(spelling: str) -> None:
    assert serving_origin("openai", spelling) == SERVED
    assert serving_origin("OpenAI", spelling) == SERVED


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("https://API.OpenAI.com/v1", "https://api.openai.com:443/v1"),
        ("http://api.example.com/v1", "http://api.example.com:80/v1/"),
        ("https://api.example.com./v1", "https://api.example.com/v1"),
        ("http://[::1]:80/v1", "http://[::1]/v1"),
        ("http://host:/v1", "http://host/v1"),
        ("https://user:secret@host/v1", "https://user:other@host/v1"),  # a password names no other server
        ("https://bücher.example/v1", "https://xn--bcher-kva.example/v1"),
    ],
)
def test_default_ports_case_and_dots_fold(first: str, second: str) -> None:
    assert serving_origin("openai", first) == serving_origin("openai", second)
    assert "secret" not in serving_origin("openai", first)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"),  # another port, another server
        ("http://127.0.0.1:8000/v1", "http://localhost:8000/v1"),  # two names may reach two servers
        ("http://api.example.com/v1", "https://api.example.com/v1"),
        ("http://api.example.com:443/v1", "https://api.example.com/v1"),
        ("https://api.example.com/v1", "https://api.example.com/V1"),  # a path's case may be another route
        ("https://api.example.com/v1", "https://api.example.com/v1/proxy"),
        ("https://api.example.com/v1", "https://api.example.com/v1?route=b"),
        ("https://api.example.com/v1", "https://evil.example/v1"),
        ("https://a@api.example.com/v1", "https://api.example.com/v1"),
    ],
)
def test_another_server_or_route_is_another_endpoint(first: str, second: str) -> None:
    assert serving_origin("openai", first) != serving_origin("openai", second)


def test_the_api_spoken_is_part_of_the_endpoint() -> None:
    url = "https://gateway.example/v1"
    assert len({serving_origin(p, url) for p in ("openai", "anthropic", "gemini")}) == 3


@pytest.mark.parametrize("bad", ["ftp://host/v1", "http:///v1", "http://host:99999/v1", "http://host:8o/v1", "host"])
def test_a_url_that_names_no_server_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        serving_origin("openai", bad)


_host = st.from_regex(r"[a-z][a-z0-9-]{0,12}(\.[a-z][a-z0-9-]{0,8}){0,3}", fullmatch=True)
_path = st.from_regex(r"(/[A-Za-z0-9_.~-]{1,8}){0,3}", fullmatch=True)
_scheme = st.sampled_from(["http", "https"])
_port = st.one_of(st.none(), st.integers(1, 65535))


def _url(scheme: str, host: str, port: int | None, path: str) -> str:
    return f"{scheme}://{host}{'' if port is None else f':{port}'}{path}"


@given(_scheme, _host, _port, _path, st.integers(0, 3), st.booleans(), st.booleans())
def test_every_respelling_of_a_url_is_the_same_endpoint(
    scheme: str, host: str, port: int | None, path: str, slashes: int, upper: bool, dot: bool
) -> None:
    plain = serving_origin("openai", _url(scheme, host, port, path))
    default = {"http": 80, "https": 443}[scheme]
    respelt = _url(
        scheme.upper() if upper else scheme,
        (host.upper() if upper else host) + ("." if dot else ""),
        default if port is None else port,
        path + "/" * slashes,
    )
    assert serving_origin("openai", respelt) == plain
    assert parse_endpoint(f"openai {respelt}") == plain  # the ledger's spelling reads the same


@given(_scheme, _host, st.integers(1, 65535), st.integers(1, 65535), _path)
def test_two_ports_are_two_endpoints_unless_one_is_the_default(
    scheme: str, host: str, first: int, second: int, path: str
) -> None:
    default = {"http": 80, "https": 443}[scheme]
    one, two = (serving_origin("openai", _url(scheme, host, port, path)) for port in (first, second))
    assert (one == two) == (first == second)
    assert (serving_origin("openai", _url(scheme, host, None, path)) == one) == (first == default)


def test_a_ledger_endpoint_must_name_the_api() -> None:
    with pytest.raises(ValueError, match=r"openai https://api\.openai\.com/v1"):
        parse_endpoint("https://api.openai.com/v1")


# ---------------------------------------------------------------------- the approval binds it
def _identity(served: str | dict[str, str] | None) -> GateIdentity:
    return GateIdentity(
        name="g", fingerprint=GATE_FP, dataset="d", dataset_fingerprint="x", needs_gold=False, judge_endpoint=served
    )


def _codes(approved: object, served: str | dict[str, str] | None) -> dict[str, str]:
    entry = {"active": True, "threshold": 0.5, "fingerprint": GATE_FP}
    if approved is not None:
        entry["judge_endpoint"] = approved
    ledger = Ledger.model_validate({"gates": {"g": entry}})
    return {r.code.value: r.message for r in resolve_authority(_identity(served), ledger, today=TODAY).reasons}


def test_an_approval_spelt_otherwise_covers_the_same_server() -> None:
    assert _codes("openai HTTP://127.0.0.1:8000/v1/", SERVED) == {}


def test_a_judge_served_elsewhere_blocks_naming_both_servers() -> None:
    message = _codes("openai http://127.0.0.1:8000/v1", "openai http://127.0.0.1:9999/v1")["judge_endpoint_changed"]
    assert "http://127.0.0.1:9999/v1" in message and "http://127.0.0.1:8000/v1" in message
    assert 'judge_endpoint: "openai http://127.0.0.1:9999/v1"' in message  # what the host approves to move it
    assert "judge_endpoint_changed" in _codes("anthropic http://127.0.0.1:8000/v1", SERVED)


def test_an_approval_without_an_endpoint_blocks_a_judge_gate_only() -> None:
    message = _codes(None, SERVED)["judge_endpoint_unbound"]
    assert f'judge_endpoint: "{SERVED}"' in message
    assert _codes(None, None) == {}  # a metric that calls no judge


def test_a_jury_binds_every_member() -> None:
    served = {"a": SERVED, "b": "openai https://api.example.com/v1"}
    assert _codes({"a": "openai http://127.0.0.1:8000/v1/", "b": "openai https://API.example.com/v1"}, served) == {}
    moved = _codes({"a": SERVED, "b": SERVED}, served)["judge_endpoint_changed"]
    assert "member 'b'" in moved and "member 'a'" not in moved
    assert "member 'c'" in _codes({**served, "c": SERVED}, served)["judge_endpoint_changed"]
    assert "judge_endpoint_changed" in _codes(SERVED, served)  # one endpoint does not approve a jury


def test_a_comparative_gate_on_a_judge_binds_its_endpoint_too() -> None:
    ledger = Ledger.model_validate(
        {"gates": {"g": {"active": True, "margin": 0.1, "fingerprint": GATE_FP, "judge_endpoint": SERVED}}}
    )

    def codes(served: str) -> set[str]:
        authority = declared_gate_authority(
            ledger,
            today=TODAY,
            name="g",
            fingerprint=GATE_FP,
            check=False,
            dataset="d",
            dataset_fingerprint="x",
            uses_reference=False,
            comparative=True,
            baseline="main",
            judge_endpoint=served,
        )
        return {reason.code.value for reason in authority.reasons}

    assert codes(SERVED) == set()
    assert codes("openai https://evil.example/v1") == {"judge_endpoint_changed"}


# ---------------------------------------------------------------------- a calibration certifies one server
def _record(endpoint: str | None) -> CalibrationRecord:
    return CalibrationRecord(
        judge="q",
        judge_fingerprint="fp",
        judge_endpoint=endpoint,
        created_at="2026-11-30T10:00:00Z",
        tool_version="0",
        model="m",
        rubric="r.md",
        labels_file="l.jsonl",
        labels_sha256="sha256:0",
        n=10,
        excluded=0,
        categories=(0, 1),
        confusion=((5, 0), (0, 5)),
        agreed=10,
        agreement=1.0,
        agreement_interval=AgreementInterval(low=0.72, high=1.0, confidence=0.95),
        kappa=1.0,
        ordinal=True,
    )


def _calibration_reasons(record: CalibrationRecord, served: str | None) -> list[str]:
    standing = JudgeStanding(metric="q", fingerprint="fp", calibration=record, endpoint=served)
    identity = GateIdentity(
        name="g",
        fingerprint=GATE_FP,
        dataset="d",
        dataset_fingerprint="x",
        needs_gold=False,
        judge=standing,
        judge_endpoint=served,
    )
    ledger = Ledger(
        gates={"g": GateApproval(active=True, threshold=0.5, fingerprint=GATE_FP, judge_endpoint=served)},
        # The record approved, so that what is tested is the endpoint check alone.
        judges={"q": JudgeRequirement(min_agreement=0.5, calibration=record.digest)},
    )
    return [r.message for r in resolve_authority(identity, ledger, today=TODAY).reasons]


def test_a_calibration_certifies_only_the_server_it_measured() -> None:
    assert _calibration_reasons(_record(SERVED), SERVED) == []
    (moved,) = _calibration_reasons(_record(SERVED), "openai https://evil.example/v1")
    assert "measured another server" in moved and "evil.example" in moved
    (unknown,) = _calibration_reasons(_record(None), SERVED)
    assert "does not say which server it measured" in unknown
    # A run recorded before endpoints were kept is re-derived as it was decided: without the check.
    assert _calibration_reasons(_record(None), None) == []


def test_differences_name_what_moved() -> None:
    assert endpoint_differences(SERVED, SERVED) == []
    assert endpoint_differences({"a": SERVED}, {"a": SERVED}) == []
    (found,) = endpoint_differences(SERVED, "openai https://x.example/v1", bound="calibrated")
    assert found == f"served from openai https://x.example/v1, calibrated {SERVED}"


def test_records_and_ledgers_without_an_endpoint_keep_their_bytes() -> None:
    """A run record snapshots the ledger and the calibration records; verify re-dumps them and compares bytes, so
    a run made before endpoints were bound must dump exactly as it did (no `judge_endpoint: null`)."""
    assert "judge_endpoint" not in GateApproval(active=True, threshold=0.5, fingerprint=GATE_FP).model_dump(mode="json")
    # ... nor, for a ledger from before calibration records were approved, `calibration: null`.
    assert JudgeRequirement(min_agreement=0.5).model_dump(mode="json") == {
        "min_agreement": 0.5,
        "expires_on": None,
        "approved_by": None,
        "approved_on": None,
        "note": None,
    }
    assert "judge_endpoint" not in _record(None).model_dump(mode="json")
    assert _record(SERVED).model_dump(mode="json")["judge_endpoint"] == SERVED
