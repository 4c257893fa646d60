"""Which reader reads which tool's results (``dataset.format: inspect | promptfoo | lm-eval | openai-evals``).

Each tool's reader is a module of its own, imported when its format is read; every one of them builds on what
``toolresults`` holds for all (``ToolReader``, ``ToolSample``), which therefore imports none of them.
"""

from __future__ import annotations

from pathlib import Path

from evalglass.engine.datasets.toollogs.toolresults import ToolReader


def open_tool_reader(
    tool: str, path: Path, *, id_field: str, output_field: str, hash_bytes: bool, answer_filter: str | None = None
) -> ToolReader:
    """The reader for ``tool``'s results (each in a module of its own, imported when used); ``answer_filter``: an
    lm-eval task's filter whose answer is the output (``dataset.answer_filter``)."""
    reader: type[ToolReader]
    if tool == "lm-eval":
        from evalglass.engine.datasets.toollogs.toollmeval import LmEvalReader

        return LmEvalReader(
            path, id_field=id_field, output_field=output_field, hash_bytes=hash_bytes, answer_filter=answer_filter
        )
    if tool == "inspect":
        from evalglass.engine.datasets.toollogs.toolinspect import InspectReader as reader
    elif tool == "promptfoo":
        from evalglass.engine.datasets.toollogs.toolpromptfoo import PromptfooReader as reader
    else:
        from evalglass.engine.datasets.toollogs.toolopenaievals import OpenAIEvalsReader as reader
    return reader(path, id_field=id_field, output_field=output_field, hash_bytes=hash_bytes)


__all__ = ["open_tool_reader"]
