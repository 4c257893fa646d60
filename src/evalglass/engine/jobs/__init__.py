"""The engine's jobs, each one entry for the API: a run (the orchestrator choosing a producer), a preflight, verify,
standalone checks, a judge's calibration, and a run in a forked copy of the caller.
"""
