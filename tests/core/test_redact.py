"""The one redactor: whole secrets and the pieces a cut leaves at an edge never survive, whatever the cut."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.redact import REDACTED, Redactor, redact_env, secret_values

SECRET = "Qm7Vr2XkLpTz4Nw8YbHc3Jd6Fs1Gu5AeRoWq9Zt0Ei3Kv"
OTHER = "uplink-Hy6Pq0Lw3Ns8Dm1Rf5Tb7Vc2Xg4Zj9Ka8Me6Qo"
REDACTOR = Redactor.of([SECRET, OTHER])
filler = st.text(alphabet=" .-_\n#", max_size=120)
texts = st.lists(st.one_of(filler, st.sampled_from([SECRET, OTHER])), max_size=8).map("".join)


def pieces(text: str, size: int = 4) -> list[str]:
    return [s[i : i + size] for s in (SECRET, OTHER) for i in range(len(s) - size + 1) if s[i : i + size] in text]


@given(texts, st.integers(min_value=0, max_value=400))
def test_no_piece_of_four_characters_survives_a_head_or_a_tail(text: str, limit: int) -> None:
    assert pieces(REDACTOR.head(text, limit)) == []
    assert pieces(REDACTOR.tail(text, limit)) == []
    assert pieces(REDACTOR.tail_bytes(text, limit)) == []


@given(filler, st.integers(min_value=4, max_value=len(SECRET) - 1), filler)
def test_a_piece_an_earlier_cut_left_at_an_edge_is_redacted(before: str, size: int, after: str) -> None:
    assert pieces(REDACTOR.edges(before + SECRET[:size])) == []
    assert pieces(REDACTOR.edges(SECRET[-size:] + after)) == []


@given(texts)
def test_nothing_without_a_secret_changes(text: str) -> None:
    plain = text.replace(SECRET, "").replace(OTHER, "")
    assert REDACTOR.text(plain) == plain
    assert REDACTOR.head(plain, 10_000) == plain


@given(st.lists(st.one_of(filler, st.just(SECRET), st.just('a"b\\c\n' + OTHER)), max_size=6))
def test_json_bytes_stay_valid_json_and_hold_no_secret(parts: list[str]) -> None:
    data = orjson.dumps({"k": "".join(parts), "list": parts})
    redacted = Redactor.of([SECRET, 'a"b\\c\n' + OTHER]).json_bytes(data)
    assert orjson.loads(redacted) is not None
    assert SECRET.encode() not in redacted and OTHER.encode() not in redacted


def test_which_environment_values_are_secrets() -> None:
    env = {
        "MY_SERVICE_TOKEN": "token-value-1",
        "ACME_UPLINK": "declared-value",
        "PLAIN": "plain-value",
        "SHORT_KEY": "abc",  # too short to redact without mangling ordinary text
        "ANY_NAME": "sk-" + "a1" * 20,
        "DATABASE_URL": "postgres://app:pa55word-xyz@db/x",
    }
    found = set(secret_values(env, declared=["ACME_UPLINK"]))
    assert found == {"token-value-1", "declared-value", "sk-" + "a1" * 20, "pa55word-xyz"}
    assert redact_env(env, ["ACME_UPLINK"])["ACME_UPLINK"] == REDACTED
    assert redact_env(env)["ACME_UPLINK"] == "declared-value"


def test_bearer_credentials_and_url_passwords_are_redacted_without_being_known() -> None:
    assert Redactor().text("Authorization: Bearer abc.def-123") == f"Authorization: Bearer {REDACTED}"
    assert Redactor().text("see https://me:hunter2@host/x") == f"see https://me:{REDACTED}@host/x"


def test_a_natural_end_that_looks_like_a_piece_of_a_secret_is_left_alone() -> None:
    path_secret = Redactor.of(["/home/ci/credentials.json"])
    assert path_secret.head("json_valid needs text", 100) == "json_valid needs text"
    assert path_secret.tail("read from /home", 100) == "read from /home"
    # ... but at a cut edge the same piece goes.
    assert path_secret.head("read from /home/ci/cre", 20) == f"read from {REDACTED}…"
