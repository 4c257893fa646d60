"""The one exception a metric raises while being built.

Building happens before any example is scored, so a failure here means the run cannot start: the engine turns
a :class:`MetricLoadError` into a single-line message and exit code 2. Failures while scoring an example never
raise; they become ``error`` scores instead.
"""

from __future__ import annotations


class MetricLoadError(ValueError):
    """A metric could not be built from its spec (missing file, missing function, unreadable schema...).

    The message is one line saying what failed, where, and how to fix it, so it can be shown to the user
    verbatim.
    """
