"""Where a judge is served, as one comparable text: the identity a gate approval and a calibration bind.

A judge's answers depend on the server that gives them as much as on its rubric: a pull request that points an
approved judge at a server it controls could have every call answered "pass". So the API a judge speaks
(``provider``) and the URL its calls go to (``base_url``) are bound by the ledger (``judge_endpoint`` in a gate
approval) and recorded with a calibration. This module turns both spellings (the config's and the ledger's) into
one canonical text, ``"<provider> <scheme>://<host>[:<port>]<path>[?<query>]"``, so that equivalent spellings never
cause a false red:

- scheme and host are lower-cased (DNS names are case-insensitive), a host's trailing dot is dropped, a Unicode
  host is written in its IDNA (punycode) form;
- the scheme's default port (80 for http, 443 for https) is dropped, any other port kept;
- trailing slashes of the path are dropped (every client appends its route to the base URL without one);
- a fragment is dropped (it is never sent); a query is kept as written.

What is not folded, on purpose: the path's case and its percent-encoding (servers may treat them as different
routes), ``localhost`` against ``127.0.0.1`` (two names can reach two servers), and a user name in the URL (kept;
a password is dropped: a secret never reaches a ledger or a record, and it does not change which server answers).

Limits: the identity names a server, it does not prove one. A DNS name the attacker cannot change is as good as the
DNS behind it; an address of the CI machine (``127.0.0.1:PORT``) is bound only as far as the port is.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping

#: A judge's serving identity: one text for a single judge (``llm_judge``, pairwise included), one per member
#: name for a jury.
JudgeEndpoint = str | dict[str, str]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_PROVIDER = re.compile(r"^[a-z][a-z0-9_-]*$")


#: RFC 3986, appendix B: the regular expression that splits any URI reference into its five parts (core/ does no
#: I/O and imports no ``urllib``; this is all of ``urlsplit`` that is needed here).
_URI = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$")
#: The authority part: ``[userinfo@]host[:port]``, the host a bracketed IPv6 address or a name without ``:``.
_AUTHORITY = re.compile(r"^(?:([^@]*)@)?(\[[^\]]*\]|[^:]*)(?::([^:]*))?$")


def serving_origin(provider: str, base_url: str) -> str:
    """The canonical identity of an endpoint that speaks ``provider`` at ``base_url`` (see the module docstring).
    Raises ValueError for a URL that is not http(s) with a host, or a port that is not a number."""
    name = provider.strip().lower()
    if not _PROVIDER.match(name):
        raise ValueError(f"{provider!r} is not an API name (openai, anthropic, gemini)")
    parts = _URI.match(base_url.strip())
    assert parts is not None  # every string matches appendix B's expression
    scheme, authority, path, query = (parts.group(1) or "").lower(), parts.group(2), parts.group(3), parts.group(4)
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"{base_url!r} is not an http:// or https:// URL")
    found = _AUTHORITY.match(authority or "")
    if found is None or not found.group(2):
        raise ValueError(f"{base_url!r} names no host")
    userinfo, host, port_text = found.groups()
    port = _port(port_text, base_url)
    host = _host_text(host)
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    user = (userinfo or "").split(":", 1)[0]
    if user:
        netloc = f"{user}@{netloc}"
    return f"{name} {scheme}://{netloc}{path.rstrip('/')}{f'?{query}' if query else ''}"


def _port(text: str | None, base_url: str) -> int | None:
    if not text:  # absent, or ``host:`` (RFC 3986: an empty port is the scheme's default)
        return None
    if not text.isascii() or not text.isdigit() or int(text) > 65535:
        raise ValueError(f"{base_url!r} has a port that is not a number from 0 to 65535")
    return int(text)


def _host_text(host: str) -> str:
    host = host.lower()
    if host.startswith("["):  # an IPv6 address, kept in its brackets
        return host
    host = host.rstrip(".")
    if not host.isascii():
        # A name IDNA cannot write is kept as it is (it then matches only itself).
        with contextlib.suppress(UnicodeError):
            host = host.encode("idna").decode("ascii")
    return host


def parse_endpoint(text: str) -> str:
    """An endpoint as a ledger spells it (``"openai https://api.openai.com/v1"``), in canonical form. Raises
    ValueError, saying the form, for anything else."""
    words = text.split()
    if len(words) != 2:
        raise ValueError(
            f"{text!r} is not a judge endpoint: write the API and the base URL, e.g. "
            "'openai https://api.openai.com/v1' (as `evalglass explain` prints it)"
        )
    return serving_origin(words[0], words[1])


def parse_judge_endpoint(value: str | Mapping[str, str]) -> JudgeEndpoint:
    """A ledger's ``judge_endpoint`` in canonical form: one endpoint, or one per jury member."""
    if isinstance(value, str):
        return parse_endpoint(value)
    return {name: parse_endpoint(text) for name, text in value.items()}


def endpoint_differences(approved: JudgeEndpoint, served: JudgeEndpoint, *, bound: str = "approved") -> list[str]:
    """What differs between the endpoint(s) approved (or calibrated: ``bound`` says which) and those the judge is
    served from, one phrase each (empty: the same). A jury's members are named; a single judge's endpoint is not."""
    if isinstance(approved, str) and isinstance(served, str):
        return [] if approved == served else [f"served from {served}, {bound} {approved}"]
    if isinstance(approved, str) or isinstance(served, str):
        shape = "one endpoint" if isinstance(approved, str) else "one endpoint per jury member"
        return [f"{bound} with {shape}; the judge is served from {shown_endpoint(served)}"]
    found: list[str] = []
    for name in sorted(approved.keys() | served.keys()):
        if name not in served:
            found.append(f"member '{name}' is {bound} ({approved[name]}) but the jury has no such member")
        elif name not in approved:
            found.append(f"member '{name}' is served from {served[name]}, which was not {bound}")
        elif approved[name] != served[name]:
            found.append(f"member '{name}' is served from {served[name]}, {bound} {approved[name]}")
    return found


def shown_endpoint(value: JudgeEndpoint) -> str:
    """A judge endpoint in one line of prose: the text, or ``member: text`` per jury member."""
    if isinstance(value, str):
        return value
    return ", ".join(f"{name}: {text}" for name, text in sorted(value.items()))


__all__ = [
    "JudgeEndpoint",
    "endpoint_differences",
    "parse_endpoint",
    "parse_judge_endpoint",
    "serving_origin",
    "shown_endpoint",
]
