"""Benchmark of the LLM layer against the fake Anthropic API (real SDK, real HTTP on 127.0.0.1).

1. Throughput: N calls (default 5,000) with 1 s latency per call at concurrency 64 through
   ``Provider.complete_many`` with the cache and ledger on. Reports the achieved concurrency
   (sum of call latencies / wall time, Little's law) and the overhead against the latency-bound
   ideal ``ceil(N / concurrency) x latency``. Goal: within 10%.
2. Cache hits: the same N calls again (every round trip served from the SQLite cache) at
   concurrency 1; reports the per-call overhead of a cache hit. Goal: under 1 ms.

The fake server runs in its own process so its threads do not share the client's GIL.

Run: ``.venv/bin/python bench/bench_llm.py`` (about 90 s), or ``--calls 640`` for a quick look.
"""
from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the fakes (fakes/) are in no installed package

KEY = "sk-bench-key"


def _serve(latency_s: float, conn: "mp.connection.Connection") -> None:
    from fakes.fake_anthropic import FakeAnthropic
    from fakes.llm_fixtures import echo_reply

    api = FakeAnthropic(reply=echo_reply, latency_s=latency_s, api_key=KEY).start()
    conn.send(api.base_url)
    conn.recv()  # wait for the stop word
    api.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--latency", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()

    os.environ["ANTHROPIC_API_KEY"] = KEY
    from schemas.config.llm import LLMConfig
    from tasks.llm import get_provider
    from tasks.llm.ledger import result_summary
    from fakes.llm_fixtures import request

    parent, child = mp.Pipe()
    server = mp.get_context("fork").Process(target=_serve, args=(args.latency, child), daemon=True)
    server.start()
    base_url = parent.recv()
    tmp = tempfile.mkdtemp(prefix="bench-llm-")
    try:
        cfg = LLMConfig(provider="anthropic", model="claude-haiku-4-5", base_url=base_url,
                        store_path=f"{tmp}/llm.sqlite", concurrency=args.concurrency)
        reqs = [request(i, stage="bench") for i in range(args.calls)]

        provider = get_provider(config=cfg)
        provider.complete(request(-1, stage="warmup"))  # connection, imports, schema caches
        t0 = time.perf_counter()
        results = provider.complete_many(reqs, concurrency=args.concurrency)
        wall = time.perf_counter() - t0
        summary = result_summary(results)
        assert summary["ok"] == args.calls, summary
        ideal = math.ceil(args.calls / args.concurrency) * args.latency
        achieved = sum(r.latency_s for r in results) / wall
        print(f"live calls: {args.calls} at concurrency {args.concurrency}, latency {args.latency:.2f}s")
        print(f"  wall {wall:.2f}s  ideal {ideal:.2f}s  overhead {100 * (wall / ideal - 1):+.1f}% (goal < 10%)")
        print(f"  achieved concurrency {achieved:.1f} of {args.concurrency}  throughput {args.calls / wall:.1f} calls/s")
        print(f"  ledger: ok {summary['ok']} missing {summary['missing']} cost ${summary['cost_usd']:.4f}")

        cached_provider = get_provider(config=cfg)
        t0 = time.perf_counter()
        hits = cached_provider.complete_many(reqs, concurrency=1)
        per_hit = (time.perf_counter() - t0) / args.calls
        assert all(r.cached for r in hits)
        print(f"cache hits: {args.calls} calls, {1000 * per_hit:.3f} ms per call (goal < 1 ms), "
              "incl. render, key, SQLite read, validation, ledger row")
    finally:
        parent.send("stop")
        server.join(timeout=10)


if __name__ == "__main__":
    main()
