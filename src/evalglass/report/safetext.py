"""Text from data (example ids, names, reasons, diagnostics, command output, paths) as a renderer may show it.

A dataset, a config and a travelling artifact are written by whoever opens the pull request, and every renderer
shows what they hold: ``report.md`` (the pull-request comment, GitHub's step summary), the terminal, JUnit, GitHub
annotations and the HTML page. Each passes such text through here, so that none of it can act as markup or as a
terminal command: an id holding ``"\\r\\r## ✅ EvalGlass: pass"`` shows as that text, never as a heading.

- :func:`visible`: control characters (C0 but tab and line feed, DEL, C1), the Unicode line and paragraph
  separators and the bidirectional embedding, override and isolate controls are shown as escapes (``\\r``,
  ``\\u001b``, ``\\u202e``); a Windows line end (CR LF) is a line end. The terminal, JUnit, annotations and HTML.
- :func:`markdown_text`: one line of Markdown text (a table cell, a list item): visible, line breaks as spaces,
  HTML specials as entities, and the characters that make Markdown structure or links escaped (``\\``, ``|``,
  backtick, ``*``, ``~``, an ``_`` that could open or close emphasis, ``](`` and ``][``).
- :func:`markdown_code`: one line inside a code span (where escapes are not read): backticks become ``'``.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: Characters that start or end Markdown structure wherever they stand in a line.
_MARKDOWN = re.compile(r"[\\|`*~]|\](?=[(\[])|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return "\\r" if char == "\r" else f"\\u{ord(char):04x}"


def visible(text: str) -> str:
    """``text`` with every character that could move the cursor, change the terminal or reorder what a reader sees
    shown as an escape; tabs and line feeds are kept (a caller that needs one line says so: :func:`one_line`)."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _CONTROL.sub(_escape, text)


def one_line(text: str) -> str:
    """:func:`visible`, with each line break as a space."""
    return visible(text).replace("\n", " ")


def html_text(text: str) -> str:
    """``text`` as HTML text: ``&``, ``<`` and ``>`` as entities, exactly ``html.escape(text, quote=False)``, whose
    module would load the standard library's table of every named entity (~2,200) for three replacements."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown_text(text: str) -> str:
    """One line of Markdown that renders as ``text`` and as nothing else (no heading, table cell, link, HTML)."""
    escaped = html_text(one_line(text))
    return _MARKDOWN.sub(lambda match: "\\" + match.group(), escaped)


def markdown_code(text: str) -> str:
    """The content of a code span in a table row: one line, no backtick to end the span early, ``|`` escaped (a
    table splits cells before it reads code spans)."""
    return one_line(text).replace("`", "'").replace("|", "\\|")
