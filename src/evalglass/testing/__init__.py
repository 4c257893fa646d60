"""Test tooling shipped with EvalGlass: fake model API servers on 127.0.0.1 that speak each wire format, with
faults: ``fake_openai`` (OpenAI-compatible chat completions), ``fake_anthropic`` (the Messages API) and
``fake_gemini`` (generateContent)."""
