"""Native model APIs beside OpenAI-compatible endpoints (docs/providers.md).

Each provider's wire translation is a module of its own with the same functions (:class:`~.wire.Wire`):
``endpoint`` (the URL of one model call), ``auth_headers``, ``request_body`` (EvalGlass's message form, ``{role,
parts}``, tool definitions and the chat-completions names of sampling parameters → the API's body), ``parse_answer``
(the API's body → :class:`~.wire.WireAnswer`: text, tool calls, usage) and ``read_error`` (the API's error body →
how the retry policy treats it). :class:`~.client.NativeClient` sends them over aiohttp; no provider SDK is needed.
The chat lane and the judge use the client through ``lanes/chatcall.py``; a model-step client for the agent lane
wraps the same module functions (a request's messages and tools are already in the form ``request_body`` takes, and
``WireAnswer`` carries what an assistant turn needs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalglass.lanes.specs import Provider

if TYPE_CHECKING:
    from evalglass.lanes.providers.wire import Wire


def wire_of(provider: Provider) -> Wire:
    """The wire-translation module of a native provider."""
    if provider is Provider.ANTHROPIC:
        from evalglass.lanes.providers import anthropic

        return anthropic
    if provider is Provider.GEMINI:
        from evalglass.lanes.providers import gemini

        return gemini
    raise ValueError(f"provider {provider.value} has no native wire module: lanes/chat.py speaks it")


__all__ = ["wire_of"]
