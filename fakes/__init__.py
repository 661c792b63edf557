"""What tests/ and bench/ both run on, outside the product: the local fakes of the outside APIs (the Anthropic and
OpenAI HTTP APIs, npm, a vLLM server) that the real SDKs talk to on 127.0.0.1, their scripted replies, and the
small shared set-ups (the tiny policy's data, the learning run, the tiny open judge, streamed-trainer scorers).

Importable from the repository root, shipped in no wheel (pyproject's package list leaves it out); the product
(tasks/, flows/, training/, rubricrl/, schemas/) never imports it and it never imports tests/
(tests/test_import_cycles.py)."""
