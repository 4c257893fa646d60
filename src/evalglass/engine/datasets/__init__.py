"""Reading examples, streamed: the dataset file and its reader chosen by format (JSONL, CSV, Parquet, OTLP traces, other
tools' results), recorded outputs joined from their own file, the gold fingerprint, and what a reader shows beside an
example's scores. Imports only engine.spec.
"""
