"""What both lane benchmarks share: the fake OpenAI-compatible server in its own process, and the verdict line."""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: Issue 5's target: calls complete within 15 % of calls × latency ÷ concurrency.
TARGET = 1.15


@contextmanager
def fake_server(latency: float, provider: str = "openai") -> Iterator[str]:
    """Start `python -m evalglass.testing.fake_<provider>` on an ephemeral loopback port; yield its base URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", f"evalglass.testing.fake_{provider}", "--port", "0", "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().split()[-1]
    finally:
        server.terminate()
        server.wait(timeout=10)


def report(ratios: list[float]) -> None:
    best, median = min(ratios), statistics.median(ratios)
    verdict = "within" if median <= TARGET else "NOT within"
    print(f"best ratio {best:.3f}, median {median:.3f}: {verdict} the {TARGET:.2f} target")
