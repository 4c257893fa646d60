"""Counting a live run's tokens as calls complete (see ``core.usage``)."""

from __future__ import annotations

from dataclasses import dataclass

from evalglass.core.usage import Price, TokenUsage


@dataclass
class Tally:
    source: str
    model: str | None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_calls: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    calls_without_usage: int = 0

    def add(self, usage: object | None, *, cached: bool) -> None:
        """One call's usage (a ``lanes.chat.Usage`` or None), counted as fresh or cached."""
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
        if cached:
            self.cached_calls += 1
        else:
            self.calls += 1
        if not isinstance(prompt, int) and not isinstance(completion, int):
            self.calls_without_usage += 1
            return
        prompt = prompt if isinstance(prompt, int) else 0
        completion = completion if isinstance(completion, int) else 0
        if cached:
            self.cached_prompt_tokens += prompt
            self.cached_completion_tokens += completion
        else:
            self.prompt_tokens += prompt
            self.completion_tokens += completion

    def summary(self, prices: dict[str, Price]) -> TokenUsage:
        price = prices.get(self.model) if self.model is not None else None
        return TokenUsage(
            source=self.source,
            model=self.model,
            calls=self.calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cached_calls=self.cached_calls,
            cached_prompt_tokens=self.cached_prompt_tokens,
            cached_completion_tokens=self.cached_completion_tokens,
            calls_without_usage=self.calls_without_usage,
            cost=price.cost(self.prompt_tokens, self.completion_tokens) if price is not None else None,
            cached_original_cost=(
                price.cost(self.cached_prompt_tokens, self.cached_completion_tokens) if price is not None else None
            ),
        )
