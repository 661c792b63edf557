"""No paid call by accident: benchmarks and tests run with the API keys removed from their environment.

A process that calls :func:`drop_paid_keys` first (every ``bench/bench_*.py``, and ``tests/conftest.py``) runs
on the offline provider, and so does every subprocess it starts, unless ``RUBRICRL_ALLOW_PAID_CALLS=1`` says
otherwise. Benches that need a key for a local fake API set a dummy one afterwards.
"""
from __future__ import annotations

import os
from collections.abc import MutableMapping

from tasks.llm.factory import DEFAULT_KEY_ENV

ALLOW_PAID_ENV = "RUBRICRL_ALLOW_PAID_CALLS"


def drop_paid_keys(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Remove every provider's API key from ``environ`` (default: this process) unless paid calls are allowed;
    returns the names removed."""
    env = os.environ if environ is None else environ
    if env.get(ALLOW_PAID_ENV) == "1":
        return []
    return [k for k in DEFAULT_KEY_ENV.values() if env.pop(k, None) is not None]
