"""Other evaluation tools' results (inspect_ai, promptfoo, lm-evaluation-harness, OpenAI Evals) read as recorded runs
(docs/other-tools.md).
"""
