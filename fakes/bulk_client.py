"""A separate process that runs one bulk stage through Message Batches (killed with -9 by a test).

Usage: python -m fakes.bulk_client KIND BASE_URL STORE_PATH N
"""
from __future__ import annotations

import sys

from schemas.config.llm import LLMConfig, RetryConfig
from tasks.llm import get_provider
from fakes.llm_fixtures import request
from fakes.llm_wire import MODELS


def main() -> None:
    kind, base_url, store_path, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cfg = LLMConfig(provider=kind, model=MODELS[kind], base_url=base_url, store_path=store_path,
                    retry=RetryConfig(max_retries=2, base_delay_s=0.05))
    p = get_provider(config=cfg)
    if kind == "openai":
        p.batches = True  # type: ignore[attr-defined]
    results = p.complete_bulk([request(i) for i in range(n)], poll_interval_s=0.05)
    print(sum(r.ok for r in results), flush=True)


if __name__ == "__main__":
    main()
