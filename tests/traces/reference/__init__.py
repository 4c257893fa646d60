"""The OTLP trace reader as it stood before issue 31's speed pass (main at 2292370): ``otlpdataset``, ``otlpspans``
and ``genaimap`` copied unchanged but for their imports of each other and one deliberate change of mapping, made in
both (``output.tool_calls`` read from messages: the last model call's input, and listed as not captured when the
messages were not). Only ``test_reader_equivalence`` uses it, as
the oracle the faster reader must equal on generated span files; it is deliberately a copy (``duplicates`` lists
it), and can go once the reader's mapping changes on purpose."""
