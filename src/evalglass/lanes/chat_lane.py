"""``type: chat``: a model endpoint as the task lane (OpenAI-compatible, or a native API by ``provider``), its
messages rendered from Jinja2 templates over the example's fields (StrictUndefined: a missing field fails that
example, it never renders as an empty string).

Every call goes through the run's executor (the endpoint's limits), the retrier and the call cache
(:func:`evalglass.lanes.chatcall.answer`); the provider's client (``chatclients.open_chat_client``: the ``openai`` SDK
and aiohttp, or aiohttp alone for a native API) is imported when the lane is built, so a config that declares one
loads without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from evalglass.core.fingerprint import content_address
from evalglass.core.outputparse import UnparsedOutput
from evalglass.lanes.base import DECLARED_JSON, LaneContext, TaskLane
from evalglass.lanes.callcache import CallStore, cache_key
from evalglass.lanes.executor import Executor
from evalglass.lanes.ports import LaneFailure, LaneOutcome, LaneOutput
from evalglass.lanes.retry import Retrier
from evalglass.lanes.specs import OPERATIONAL_FIELDS, ChatLaneSpec, Provider
from evalglass.lanes.templating import TemplateFailure, compile_template, render, template_context

if TYPE_CHECKING:
    from evalglass.lanes.chatcall import TransportChoice


class ChatLane(TaskLane):
    spec: ChatLaneSpec

    @classmethod
    def build(cls, spec: ChatLaneSpec, context: LaneContext) -> ChatLane:
        return cls(
            spec,
            executor=context.executor,
            cache=context.cache,
            env=context.env,
            retrier=context.retrier,
            transport=context.transport,
        )

    def __init__(
        self,
        spec: ChatLaneSpec,
        *,
        executor: Executor,
        cache: CallStore | None,
        env: Mapping[str, str] | None,
        retrier: Retrier | None,
        transport: TransportChoice,
    ) -> None:
        self.spec = spec
        self.executor = executor
        self.cache = cache if spec.cache else None
        self.templates = [(role, compile_template(source)) for role, source in spec.message_templates()]
        self.retrier = retrier or Retrier(spec.retry)
        from evalglass.lanes import chatcall
        from evalglass.lanes.chatclients import open_chat_client

        self._chat = chatcall
        self.client = open_chat_client(spec, env=env, transport=transport)
        self.fingerprint = content_address(chat_lane_definition(spec))

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        context = template_context(fields, example_id, sample)
        messages: list[tuple[str, str]] = []
        try:
            for role, template in self.templates:
                messages.append((role, render(template, context, what=f"the {role} prompt", example_id=example_id)))
        except TemplateFailure as failure:
            return LaneFailure(failure.code, failure.message, sample)
        request = self._chat.ChatRequest.build(self.spec, messages)
        key = cache_key(self.fingerprint, request.body(), sample)
        made = await self._chat.answer(
            self.client,
            request,
            key=key,
            cache=self.cache,
            kind="chat",
            executor=self.executor,
            retrier=self.retrier,
        )
        reply, cached, attempts, tries, replayed = made.reply, made.cached, made.attempts, made.tries, made.replayed
        if reply is None:
            fault = made.fault
            assert fault is not None
            return LaneFailure(fault.code, fault.message, sample, fault.detail, attempts, key, tries)
        cut = reply.finish_reason if self._chat.truncated(reply.finish_reason) else None
        if self.spec.output == "text":
            return LaneOutput(reply.content, sample, cached, attempts, reply.usage, key, tries, replayed, truncated=cut)
        try:
            value = orjson.loads(reply.content)
        except orjson.JSONDecodeError as exc:
            # A wrong answer, measured (core.outputparse, metrics.invalid): not a failure of the evaluator.
            value = UnparsedOutput(reply.content, str(exc), declared=DECLARED_JSON)
        return LaneOutput(value, sample, cached, attempts, reply.usage, key, tries, replayed, truncated=cut)

    async def aclose(self) -> None:
        await self.client.aclose()


def chat_lane_definition(spec: ChatLaneSpec) -> dict[str, Any]:
    """What the lane's cached answers are keyed by: where it is served and what it asks. ``provider`` only when it
    is not the default, so the keys of lanes declared before providers existed stay as they were."""
    left_out = set(OPERATIONAL_FIELDS)
    if spec.provider is Provider.OPENAI:
        left_out.add("provider")
    return spec.model_dump(mode="json", exclude=left_out)


__all__ = ["ChatLane", "chat_lane_definition"]
