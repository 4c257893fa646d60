"""Pure domain: scores, populations, estimates, authority, gates and the Verdict Engine.

Nothing here touches files, clocks, networks or processes; ``.importlinter`` contracts enforce it in CI.
"""
