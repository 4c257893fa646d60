"""A run's folder and its artifacts: written atomically, read back, their encodings and JSON Schemas, the manifest,
digests and provenance, runs found by reference, and two runs' columns read for a comparison.
"""
