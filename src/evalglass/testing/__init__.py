"""Test tooling shipped with EvalGlass: ``evalglass.testing.fake_openai`` is a fake OpenAI-compatible server."""
