"""OTLP trace files as a dataset: spans streamed from OTLP/JSON or protobuf, grouped into examples and mapped from the
GenAI and OpenInference conventions (docs/traces.md).
"""
