"""Plain text folded to a terminal's width without cutting a word, for the commands that print prose (`explain`,
`view --examples`): a CI log shows lines as they are, so a long line is one the reader scrolls sideways for."""

from __future__ import annotations

import re
import textwrap

#: Where a bullet's text starts: a wrapped bullet continues under its text, not under its dash.
_BULLETS = ("- ", "· ")
#: A span in backticks (a command to copy, a config key): folded as one word, so a command is never split.
_CODE = re.compile(r"`[^`\n]*`")
#: Stands in for a space inside a code span while folding (textwrap splits only on ASCII whitespace).
_HELD = "\ue000"


def fold(line: str, width: int) -> list[str]:
    """``line`` as lines of at most ``width`` characters, each continuation indented under the line's text (under a
    bullet's text for ``- `` items). A single word longer than the room (a long path, a fingerprint) stays whole
    on a line of its own rather than being broken: a cut fingerprint or id cannot be copied. A span in backticks
    counts as one word, so a command to copy is never split across lines (a longer one overflows instead)."""
    if len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    indent = " " * (len(line) - len(body))
    hanging = indent + next(("  " for bullet in _BULLETS if body.startswith(bullet)), "  " if indent else "")
    held = _HELD not in line
    if held:
        line = _CODE.sub(lambda span: span.group().replace(" ", _HELD), line)
    folded = textwrap.wrap(
        line,
        width=width,
        subsequent_indent=hanging,
        break_long_words=False,
        break_on_hyphens=False,
        drop_whitespace=True,
    ) or [line]
    return [part.replace(_HELD, " ") for part in folded] if held else folded


def fold_text(text: str, width: int, verbatim_after: str | None = None) -> str:
    """Every line of ``text`` folded to ``width``; from the first line that starts with ``verbatim_after`` on, lines
    are kept as they are (a YAML block to paste must keep its lines: a folded one would not parse)."""
    out: list[str] = []
    verbatim = False
    for line in text.split("\n"):
        if verbatim_after is not None and line.startswith(verbatim_after):
            verbatim = True
        out.extend([line] if verbatim else fold(line, width))
    return "\n".join(out)
