"""The client of an endpoint's API: the one place that knows which module speaks which ``provider``.

Apart from ``chatcall`` (what every client takes and gives) so that the clients import it and it imports none of
them at module level: a run whose endpoints are all native never imports the ``openai`` SDK, and one whose endpoints
are all OpenAI-compatible never imports the native modules.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalglass.lanes.chatcall import ChatCaller, TransportChoice
from evalglass.lanes.specs import EndpointSpec, Provider


def open_chat_client(
    spec: EndpointSpec, *, env: Mapping[str, str] | None = None, transport: TransportChoice = "auto"
) -> ChatCaller:
    """The client of the API ``spec.provider`` names (create it inside the event loop that uses it). ``transport``
    chooses between the OpenAI client's two HTTP stacks; the native clients have one."""
    if spec.provider is Provider.OPENAI:
        from evalglass.lanes.chat import ChatClient

        return ChatClient(spec, env=env, transport=transport)
    from evalglass.lanes.providers.client import NativeClient

    return NativeClient(spec, env=env)


__all__ = ["open_chat_client"]
