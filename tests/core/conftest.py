"""Set-up for the decision core's tests."""

from __future__ import annotations

import os

from hypothesis import settings

# `python tools/mutation.py` runs these tests once per mutant (thousands of times): there each property test draws a
# fixed, smaller set of examples, so a run is repeatable and fits the machine. The deterministic record tests
# (test_*_records.py, test_authority_reasons.py) pin every field either way.
settings.register_profile("mutation", deadline=None, max_examples=10, derandomize=True, database=None)
if os.environ.get("EVALGLASS_MUTATION"):
    settings.load_profile("mutation")
