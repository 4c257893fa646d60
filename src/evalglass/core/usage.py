"""Tokens (and, with a price table, cost) of a live run's calls, per lane and per judge metric.

Fresh calls are counted apart from calls answered from the cache: a cached call costs nothing now, but the tokens
its original call used (kept in the cache with the reply) are known, and so is what it cost then. Counts come from
each API's own usage fields (docs/providers.md); a call whose endpoint reports none is counted in
``calls_without_usage``, so a total is never presented as complete when it is not.

Prompt tokens count every input token. Of them, those the provider read from its prompt cache
(``prompt_cache_read_tokens``) and wrote to it (``prompt_cache_write_tokens``, Anthropic's cache creation) are
counted apart, and priced apart when the price table says how (else at the prompt price).
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from pydantic import BaseModel, ConfigDict, Field


class Price(BaseModel):
    """What one model's tokens cost, per million (in whatever currency the host writes; shown as written)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    prompt_per_million: float = Field(ge=0)
    completion_per_million: float = Field(ge=0)
    cache_read_per_million: float | None = Field(
        default=None,
        ge=0,
        description="Prompt tokens read from the provider's prompt cache (default: the prompt price).",
    )
    cache_write_per_million: float | None = Field(
        default=None,
        ge=0,
        description="Prompt tokens written to the provider's prompt cache (default: the prompt price).",
    )

    def cost(self, prompt_tokens: int, completion_tokens: int, cache_read: int = 0, cache_write: int = 0) -> float:
        """``prompt_tokens`` includes the cache's: those are priced at their own rates when declared."""
        read = self.prompt_per_million if self.cache_read_per_million is None else self.cache_read_per_million
        write = self.prompt_per_million if self.cache_write_per_million is None else self.cache_write_per_million
        fresh = max(0, prompt_tokens - cache_read - cache_write)
        return (
            fresh * self.prompt_per_million
            + cache_read * read
            + cache_write * write
            + completion_tokens * self.completion_per_million
        ) / 1e6


class TokenUsage(BaseModel):
    """One lane's or judge's calls in a run."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    source: str = Field(description="`task` for the lane, else the judge metric's name.")
    model: str | None = None
    calls: int = Field(default=0, ge=0, description="Calls made now.")
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cached_calls: int = Field(default=0, ge=0, description="Calls answered from the cache (no cost now).")
    cached_prompt_tokens: int = Field(default=0, ge=0, description="What the cached calls used originally.")
    cached_completion_tokens: int = Field(default=0, ge=0)
    prompt_cache_read_tokens: int = Field(
        default=0, ge=0, description="Of the prompt tokens, those the provider read from its prompt cache."
    )
    prompt_cache_write_tokens: int = Field(
        default=0, ge=0, description="Of the prompt tokens, those the provider wrote to its prompt cache."
    )
    cached_prompt_cache_read_tokens: int = Field(default=0, ge=0, description="The same, of the cached calls.")
    cached_prompt_cache_write_tokens: int = Field(default=0, ge=0)
    calls_without_usage: int = Field(default=0, ge=0, description="Calls whose endpoint reported no usage.")
    cost: float | None = Field(default=None, description="Cost of the calls made now (with a price table).")
    cached_original_cost: float | None = Field(default=None, description="What the cached calls cost originally.")

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def total_usage(usages: tuple[TokenUsage, ...]) -> TokenUsage:
    """The run's sum over its lane and judges (a cost only when every part has one)."""
    costs = [usage.cost for usage in usages]
    originals = [usage.cached_original_cost for usage in usages]
    known = bool(usages) and None not in costs
    return TokenUsage(
        source="run",
        calls=sum(usage.calls for usage in usages),
        prompt_tokens=sum(usage.prompt_tokens for usage in usages),
        completion_tokens=sum(usage.completion_tokens for usage in usages),
        cached_calls=sum(usage.cached_calls for usage in usages),
        cached_prompt_tokens=sum(usage.cached_prompt_tokens for usage in usages),
        cached_completion_tokens=sum(usage.cached_completion_tokens for usage in usages),
        prompt_cache_read_tokens=sum(usage.prompt_cache_read_tokens for usage in usages),
        prompt_cache_write_tokens=sum(usage.prompt_cache_write_tokens for usage in usages),
        cached_prompt_cache_read_tokens=sum(usage.cached_prompt_cache_read_tokens for usage in usages),
        cached_prompt_cache_write_tokens=sum(usage.cached_prompt_cache_write_tokens for usage in usages),
        calls_without_usage=sum(usage.calls_without_usage for usage in usages),
        cost=sum(c for c in costs if c is not None) if known else None,
        cached_original_cost=sum(c for c in originals if c is not None) if known else None,
    )
