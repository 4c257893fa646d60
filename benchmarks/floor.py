"""The floor: the simplest Python program doing the same work as the benchmark's `evalglass run`.

It reads the JSONL with orjson, reads the same fields the run reads (the id, the reference and the two output
fields), applies the same three comparisons (exact match, regex search, numeric bounds) and counts. It writes
nothing and checks nothing, so EvalGlass's overhead is measured against bare work.
Usage: python benchmarks/floor.py DATASET.jsonl
"""

from __future__ import annotations

import re
import sys

import orjson


def main(path: str) -> None:
    pattern = re.compile(r"\d+")
    exact = regex = bounds = n = 0
    ids = 0
    with open(path, "rb") as handle:
        for raw in handle:
            record = orjson.loads(raw)
            ids += record["id"] is not None
            answer = record["output"]["answer"]
            exact += answer == record["expected"]
            regex += pattern.search(answer) is not None
            latency = record["output"]["latency_ms"]
            bounds += 0 <= latency <= 800
            n += 1
    print(f"n={n} ids={ids} exact={exact / n:.4f} regex={regex / n:.4f} bounds={bounds / n:.4f}")


if __name__ == "__main__":
    if "--with-imports" in sys.argv[2:]:
        import click  # noqa: F401
        import numpy  # noqa: F401
        import pydantic  # noqa: F401
        import rich.console  # noqa: F401
        import yaml  # noqa: F401
    main(sys.argv[1])
