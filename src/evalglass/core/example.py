"""One example as the metrics see it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Example:
    """A dataset record and the output a lane produced for it.

    ``fields`` is the parsed JSON object from the dataset line; ``output`` is what the system under test produced
    (for recorded datasets, the value of the configured output field). ``line`` is 1-based, for diagnostics.
    """

    id: str
    line: int
    fields: Mapping[str, Any]
    output: Any
    sample: int = 0
