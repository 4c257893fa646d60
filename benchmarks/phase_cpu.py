"""`python benchmarks/phase_cpu.py OUT.json run ...`: the `evalglass` command, with the CPU and wall time of its
scoring phase written to OUT.json (benchmarks only).

The scoring phase is ``engine.produce.liverun._score_all``: from the first example started to the last one written,
after the imports, the config, the manifest and the lane's clients are ready, before the decision and the report. Its
CPU is ``time.process_time()`` (user + system, every thread of the process: the event loop, the call cache's writer,
the dataset reader), so start-up, which is the same whatever the dataset's size, is not in the figure and no
difference of two runs is needed.
"""

from __future__ import annotations

import json
import runpy
import sys
import time
from pathlib import Path
from typing import Any

import evalglass.engine.produce.liverun as liverun


def main() -> None:
    out = Path(sys.argv[1])
    phase = getattr(liverun, "_score_all", None)
    if phase is None:
        raise SystemExit("phase_cpu.py: engine.produce.liverun._score_all is gone; point this wrapper at the phase")

    async def timed(*args: Any, **kwargs: Any) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return await phase(*args, **kwargs)
        finally:
            out.write_text(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall}))

    liverun._score_all = timed  # type: ignore[attr-defined]
    sys.argv = ["evalglass", *sys.argv[2:]]
    runpy.run_module("evalglass", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
