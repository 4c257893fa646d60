"""What the HTML pages share (the run's report.html and ``compare --html``'s page): the one Jinja2 environment of
``templates/report`` and the hash a Content-Security-Policy allows an inline script or style by.

Everything the artifacts contain is attacker-controlled text: the environment autoescapes every value and shows
control characters and bidirectional overrides as escapes first (:func:`printable`).
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2


#: Control characters and the bidirectional overrides that can make text display as something it is not
#: ("Trojan Source"): shown as escapes, so the page holds only printable text and shows what the bytes are.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def printable(value: Any) -> Any:
    """Every interpolated value passes here before autoescaping; markup the template itself made is left alone."""
    if type(value) is not str:
        return value
    return _UNPRINTABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", value)


@cache
def template_environment() -> jinja2.Environment:
    """The report templates' one environment: autoescape on, every value through :func:`printable`."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("evalglass", "templates/report"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=printable,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def csp_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


__all__ = ["csp_hash", "printable", "template_environment"]
