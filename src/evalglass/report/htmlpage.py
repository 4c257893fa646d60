"""What the HTML pages share (the run's report.html and ``compare --html``'s page): the one Jinja2 environment of
``templates/report`` and the hash a Content-Security-Policy allows an inline script or style by.

The templates, script and style are read when a page is rendered, which in ``evalglass run --html`` is after host
code ran: each is refused when changed since host code could start (``hostwatch.refuse_changed_data``).

Everything the artifacts contain is attacker-controlled text: the environment autoescapes every value and shows
control characters and bidirectional overrides as escapes first (:func:`printable`).
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from typing import TYPE_CHECKING, Any

from evalglass.report.safetext import visible

if TYPE_CHECKING:
    import jinja2


def printable(value: Any) -> Any:
    """Every interpolated value passes here before autoescaping (``report.safetext.visible``: control characters
    and the bidirectional overrides that can make text display as something it is not, "Trojan Source", shown as
    escapes); markup the template itself made is left alone."""
    if type(value) is not str:
        return value
    return visible(value)


@cache
def template_environment() -> jinja2.Environment:
    """The report templates' one environment: autoescape on, every value through :func:`printable`."""
    import jinja2

    from evalglass.hostwatch import refuse_changed_data

    class HeldLoader(jinja2.PackageLoader):
        """The package's templates, each held to its state at the freeze once read (``hostwatch``): a python lane
        runs as the same user before the deciding process renders, and a template it rewrote (a template is code
        the page runs, and what it shows) would otherwise decide what the report people read in PRs says."""

        def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:
            source, filename, uptodate = super().get_source(environment, template)
            if filename is not None:
                refuse_changed_data(filename)
            return source, filename, uptodate

    return jinja2.Environment(
        loader=HeldLoader("evalglass", "templates/report"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=printable,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def csp_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


__all__ = ["csp_hash", "printable", "template_environment"]
