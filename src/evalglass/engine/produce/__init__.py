"""Producing a run's scores: the recorded and live producers, the run sink that alone writes what they score, the
metrics built and called, the call cache, the executors, and a live run's progress, tokens and signals.
"""
