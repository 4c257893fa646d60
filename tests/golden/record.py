"""Re-record the golden outputs of every builtin evaluator: ``python -m tests.golden.record [KEY...]``.

Run it only after bumping the evaluator's version in ``evalglass.metrics.versions`` (or adding an evaluator): the
recorded version is what ``test_golden.py`` holds a changed output against.
"""

from __future__ import annotations

import json
import sys

from evalglass.metrics.versions import registry
from tests.golden.cases import compute, inputs, path_of


def record(keys: list[str]) -> None:
    for key, item in registry().items():
        if keys and key not in keys:
            continue
        cases = inputs(item.kind, item.name)
        document = {
            "evaluator": key,
            "version": item.version,
            "cases": [{"input": case, "output": compute(item.kind, item.name, case)} for case in cases],
        }
        path = path_of(item.kind, item.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=1, ensure_ascii=False, allow_nan=True) + "\n")
        print(f"recorded {item.label}: {path}")


if __name__ == "__main__":
    record(sys.argv[1:])
