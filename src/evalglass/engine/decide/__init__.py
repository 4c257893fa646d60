"""Deciding: the one assembly of a run's decision (shared by run and verify), the consistency check every renderer goes
through, and the baselines comparative gates compare with.
"""
