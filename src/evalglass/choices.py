"""The closed sets a command or an API call takes by name, as plain tuples: the command line's option parser lists
them (``click.Choice``, shown in ``--help``) without importing the API, and the API checks its arguments against
the same ones."""

from __future__ import annotations

#: The bundled examples a config may be taken from (``--example``, ``example=``; no set-up, no network).
EXAMPLES = ("quickstart", "bound-checks")

#: What ``evalglass schema`` / ``evalglass.schema`` describe.
SCHEMAS = ("config", "ledger", "scorecard", "runrecord", "scores", "comparison", "trace-record", "trajectory")

#: Every state an example can be in, and ``all`` (``view --examples --state``, ``list_examples(states=...)``).
EXAMPLE_STATES = ("pass", "fail", "scored", "invalid", "error", "blocked", "non_evaluable", "skipped", "all")
