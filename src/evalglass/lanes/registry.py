"""The lane registry: the class of each ``task.type``, and :func:`build_lane`, the one way the live run builds a lane.

A new lane type adds its class here (one line in :data:`LANE_TYPES`) and its spec to ``LaneSpec`` in
lanes/specs.py, which the config's ``task:`` union takes whole; the engine does not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from evalglass.lanes.base import LaneContext, TaskLane
from evalglass.lanes.chat_lane import ChatLane
from evalglass.lanes.command_lane import CommandLane
from evalglass.lanes.python_lane import PythonLane
from evalglass.lanes.specs import LaneSpec

if TYPE_CHECKING:
    from evalglass.lanes.callcache import CallStore
    from evalglass.lanes.chatcall import TransportChoice
    from evalglass.lanes.executor import Executor
    from evalglass.lanes.retry import Retrier

#: The lane class of each ``task.type``: the one line a new lane type adds here (its spec joins ``LaneSpec`` in
#: lanes/specs.py, which the config's ``task:`` union takes whole).
LANE_TYPES: dict[str, type[TaskLane]] = {"python": PythonLane, "command": CommandLane, "chat": ChatLane}


def build_lane(
    spec: LaneSpec,
    *,
    base_dir: Path,
    executor: Executor,
    cache: CallStore | None = None,
    env: Mapping[str, str] | None = None,
    retrier: Retrier | None = None,
    transport: TransportChoice = "auto",
    ship_async: bool = False,
) -> TaskLane:
    """Build a lane: the class :data:`LANE_TYPES` names for the spec's ``type``, through its ``build(spec,
    context)``. Raises :class:`LaneConfigError` when the function, file or template cannot be used."""
    context = LaneContext(base_dir, executor, cache, env, retrier, transport, ship_async)
    return LANE_TYPES[spec.type].build(spec, context)


__all__ = ["LANE_TYPES", "build_lane"]
