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
    cache_read: int = 0
    cache_write: int = 0
    cached_cache_read: int = 0
    cached_cache_write: int = 0
    calls_without_usage: int = 0

    def add(self, usage: object | None, *, cached: bool) -> None:
        """One call's usage (a ``lanes.chatcall.Usage`` or None), counted as fresh or cached."""
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
        read = getattr(usage, "cache_read_tokens", None) or 0
        write = getattr(usage, "cache_write_tokens", None) or 0
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
            self.cached_cache_read += read
            self.cached_cache_write += write
        else:
            self.prompt_tokens += prompt
            self.completion_tokens += completion
            self.cache_read += read
            self.cache_write += write

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
            prompt_cache_read_tokens=self.cache_read,
            prompt_cache_write_tokens=self.cache_write,
            cached_prompt_cache_read_tokens=self.cached_cache_read,
            cached_prompt_cache_write_tokens=self.cached_cache_write,
            calls_without_usage=self.calls_without_usage,
            cost=(
                price.cost(self.prompt_tokens, self.completion_tokens, self.cache_read, self.cache_write)
                if price is not None
                else None
            ),
            cached_original_cost=(
                price.cost(
                    self.cached_prompt_tokens,
                    self.cached_completion_tokens,
                    self.cached_cache_read,
                    self.cached_cache_write,
                )
                if price is not None
                else None
            ),
        )
