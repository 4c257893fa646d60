"""``variants:`` as a config declares them: each a named override of ``task:`` (another model, endpoint, prompt,
sampling parameter, provider, python function or recorded field), merged key by key over the task, or a whole task
of its own when it names another ``type``.

One variant is the task itself: a config with one variant is read as the config without ``variants:`` whose task is
that variant (:func:`fold_single_variant`, before validation), so the run writes what that config's run writes.
"""

from __future__ import annotations

from typing import Any

from evalglass.core.goldfields import merged_task

__all__ = ["fold_single_variant", "merged_task"]


def fold_single_variant(data: Any) -> Any:
    """A config's raw values with a single variant folded into its task (and its gates' ``variant`` removed), so a
    one-variant config is the plain config it means. Anything else is returned as it is."""
    if not isinstance(data, dict):
        return data
    variants = data.get("variants")
    if not isinstance(variants, dict) or len(variants) != 1:
        return data
    ((name, override),) = variants.items()
    if not isinstance(override, dict):
        return data
    gates = data.get("gates")
    if isinstance(gates, dict):
        gates = {
            gate: {key: value for key, value in spec.items() if key != "variant"}
            if isinstance(spec, dict) and spec.get("variant") == name
            else spec
            for gate, spec in gates.items()
        }
    task = data.get("task")
    folded = {key: value for key, value in data.items() if key != "variants"}
    folded["task"] = merged_task(task if isinstance(task, dict) else None, override)
    if gates is not None:
        folded["gates"] = gates
    return folded
