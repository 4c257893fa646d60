"""``safetext.html_text`` is the standard library's ``html.escape(text, quote=False)``, character for character."""

from __future__ import annotations

import html

from hypothesis import given
from hypothesis import strategies as st

from evalglass.report.safetext import html_text, markdown_text

SPECIALS = st.lists(st.sampled_from(["&", "<", ">", '"', "'", "&amp;", "&lt;", "a", " ", "\n", "é"])).map("".join)


@given(text=st.one_of(st.text(), SPECIALS))
def test_html_text_is_html_escape_without_quotes(text: str) -> None:
    assert html_text(text) == html.escape(text, quote=False)


def test_markdown_text_escapes_html_specials_once() -> None:
    assert markdown_text("a <b> & 'c'") == "a &lt;b&gt; &amp; 'c'"
