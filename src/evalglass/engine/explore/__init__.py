"""A finished run's examples read back for people and other tools: the HTML report's rows, the examples behind the
numbers, inputs and references for view, and scores exported as OpenTelemetry spans.
"""
