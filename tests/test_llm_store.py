"""The call store and the pure pieces of the LLM layer: cache keys, retry timing, pricing, ledger
summary and Parquet/DuckDB publication, the dry-run estimate, and the store's safety under many
threads, several processes and ``kill -9``."""
from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from schemas.config.llm import OFFLINE_MODEL, LLMConfig, Prices, RetryConfig
from tasks.llm import get_provider
from tasks.llm.base import Usage
from tasks.llm.cache import CallStore, cache_key
from tasks.llm.estimate import estimate, format_estimate
from tasks.llm.ledger import cost_usd, format_summary, ledger_table, summarize
from tasks.llm.retry import Fault, backoff_delay, call_with_retries, retry_after_seconds
from fakes.llm_fixtures import request

REPO = Path(__file__).resolve().parent.parent
BASE_KEY = dict(provider="anthropic", model="m", template="t1", system="s", messages=[{"role": "user", "content": "u"}],
                max_tokens=10, temperature=0.0, output_schema="d1")


@pytest.mark.parametrize("field,value", [("provider", "openai"), ("model", "m2"), ("template", "t2"), ("system", "s2"),
                                         ("messages", [{"role": "user", "content": "u2"}]), ("max_tokens", 11),
                                         ("temperature", 0.5), ("output_schema", "d2")])
def test_cache_key_covers_every_input(field: str, value: object) -> None:
    assert cache_key(**{**BASE_KEY, field: value}) != cache_key(**BASE_KEY)
    assert cache_key(**BASE_KEY) == cache_key(**dict(BASE_KEY))
    assert len(cache_key(**BASE_KEY)) == 64


def test_template_edit_changes_the_key_even_without_a_version_bump(tmp_path: Path) -> None:
    from tasks.llm.prompts import load_prompt

    (tmp_path / "a.md").write_text("version: 1\n---\nsys\n=== user ===\nhi {{x}}\n")
    (tmp_path / "b.md").write_text("version: 1\n---\nsys!\n=== user ===\nhi {{x}}\n")
    assert load_prompt("a", tmp_path).fingerprint != load_prompt("b", tmp_path).fingerprint


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"Retry-After-Ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412475.0) == pytest.approx(5.0)
    assert retry_after_seconds({"retry-after": "soon"}) is None and retry_after_seconds(None) is None


def test_backoff_is_jittered_capped_and_honours_retry_after() -> None:
    pol = RetryConfig(base_delay_s=1.0, max_delay_s=8.0, max_retry_after_s=30.0)
    rng = random.Random(0)
    delays = [backoff_delay(r, pol, None, rng) for r in range(6)]
    assert all(0.5 * min(8, 2 ** r) <= d <= min(8, 2 ** r) for r, d in enumerate(delays))
    assert len({round(backoff_delay(3, pol, None, rng), 6) for _ in range(20)}) > 1  # jitter
    assert 5.0 <= backoff_delay(0, pol, 5.0, rng) <= 5.5
    assert 30.0 <= backoff_delay(0, pol, 999.0, rng) <= 33.0  # a huge retry-after is capped


def test_call_with_retries_gives_up_after_max_and_skips_unknown_errors() -> None:
    sleeps: list[float] = []
    calls = {"n": 0}

    def flaky() -> str:
        calls["n"] += 1
        raise TimeoutError("slow")

    pol = RetryConfig(max_retries=3, base_delay_s=0.01)
    with pytest.raises(TimeoutError):
        call_with_retries(flaky, lambda e: Fault(True), pol, sleep=sleeps.append)
    assert calls["n"] == 4 and len(sleeps) == 3
    with pytest.raises(KeyError):
        call_with_retries(lambda: {}["x"], lambda e: None, pol, sleep=sleeps.append)
    assert len(sleeps) == 3


def test_cost_formula() -> None:
    price = Prices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    u = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=2_000_000, cache_write_tokens=400_000)
    assert cost_usd(u, price) == pytest.approx(3.0 + 1.5 + 0.6 + 1.5)
    assert cost_usd(u, price, discount=0.5) == pytest.approx(3.3)


def test_unpriced_model_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"add llm.prices\['nope'\]"):
        LLMConfig().price("nope")


def test_store_survives_many_threads(tmp_path: Path) -> None:
    store = CallStore(tmp_path / "s.sqlite")

    def work(t: int) -> None:
        for i in range(50):
            store.put(f"k{i}", "p", "m", f"t{t}", {})  # same keys from every thread: first writer wins
            store.add_ledger_row({"t": t, "i": i})
            store.get(f"k{i}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert store.ledger_watermark()[0] == 16 * 50
    assert len(store.has([f"k{i}" for i in range(60)])) == 50


def test_store_under_two_processes_and_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "fakes.store_writer", str(path)]
    a = subprocess.Popen(cmd + ["a", "400"], cwd=REPO, env=env)
    b = subprocess.Popen(cmd + ["b", "400"], cwd=REPO, env=env)
    victim = subprocess.Popen(cmd + ["c", "1000000"], cwd=REPO, env=env, stdout=subprocess.PIPE)
    assert victim.stdout.readline().strip() == b"started"
    assert a.wait(timeout=120) == 0 and b.wait(timeout=120) == 0
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    store = CallStore(path)
    rows = store.ledger_rows()
    assert sum(r["run_id"] == "a" for r in rows) == 400 and sum(r["run_id"] == "b" for r in rows) == 400
    killed = [r["i"] for r in rows if r["run_id"] == "c"]
    assert killed == list(range(len(killed)))  # every committed row whole, in order, none torn
    assert store.get("a-399").text == "text 399"


def test_ledger_summary_and_parquet_and_duckdb_view(tmp_path: Path) -> None:
    import duckdb

    from tasks.llm.ledger import publish_llm_calls
    from tasks.stages.store import StageStore

    cfg = LLMConfig(provider="offline", store_path=str(tmp_path / "llm.sqlite"))
    p = get_provider(config=cfg, run_id="run-1")
    results = p.complete_many([request(i) for i in range(4)] + [request(9, stage="other")], concurrency=2)
    assert all(r.provider == "offline" and r.ok for r in results)
    s = summarize(p.store.ledger_rows("run-1"))
    assert s["total"]["calls"] == 5 and s["test_stage"]["ok"] == 4 and s["other"]["calls"] == 1
    assert s["total"]["cost_usd"] == 0 and s["total"]["input_tokens"] > 0
    text = format_summary(s)
    assert text.splitlines()[0].split()[:3] == ["stage", "calls", "ok"] and text.splitlines()[-1].startswith("total")
    table = ledger_table(p.store.ledger_rows())
    assert table.num_rows == 5 and set(table.column("provider").to_pylist()) == {"offline"}
    stages = StageStore(tmp_path / "data")
    man = publish_llm_calls(stages, p.store)
    assert man.row_count == 5 and publish_llm_calls(stages, p.store).version == man.version  # unchanged: no work
    con = duckdb.connect(str(tmp_path / "data" / "catalog.duckdb"), read_only=True)
    assert con.execute("SELECT count(*), sum(cost_usd) FROM llm_calls WHERE status = 'ok'").fetchone() == (5, 0.0)
    con.close()


def test_dry_run_estimate_counts_without_calling(tmp_path: Path) -> None:
    reqs = [request(i) for i in range(100)]
    est = estimate(reqs, "claude-sonnet-4-5", output_tokens_per_call=200)
    assert est.calls == 100 and est.output_tokens == 20_000
    assert est.input_tokens > 100 * 20  # system + user text, ~4 characters a token
    assert est.usd == pytest.approx((est.input_tokens * 3.0 + est.output_tokens * 15.0) / 1e6, rel=1e-3)
    upper = estimate(reqs, "claude-sonnet-4-5")
    assert upper.output_tokens == 100 * 256 and "max_tokens upper bound" in upper.basis
    assert "100 calls to claude-sonnet-4-5" in format_estimate(est)
    with pytest.raises(ValueError, match="llm.prices"):
        estimate(reqs, "unknown-model")


def test_dry_run_uses_ledger_history_and_skips_cached(tmp_path: Path) -> None:
    store = CallStore(tmp_path / "llm.sqlite")
    p = get_provider("offline", config=LLMConfig(provider="offline"), store=store)
    p.complete_many([request(i) for i in range(3)], concurrency=1)
    est = estimate([request(i) for i in range(10)], OFFLINE_MODEL, store=store, provider="offline")
    assert "ledger mean output" in est.basis and est.output_tokens > 0 and est.usd == 0
    # offline calls are never cached, so nothing counts as cached here
    assert est.cached_calls == 0 and est.calls == 10


def test_ledger_summary_command_prints_costs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tasks.llm.ledger import main

    p = get_provider(config=LLMConfig(provider="offline", store_path=str(tmp_path / "llm.sqlite")), run_id="r9")
    p.complete_many([request(i) for i in range(3)], concurrency=1)
    p.store.close()
    main([str(tmp_path / "llm.sqlite"), "--run", "r9"])
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[:3] == ["test_stage", "3", "3"] and out[-1].startswith("total")
    with pytest.raises(SystemExit, match="does not exist"):
        main([str(tmp_path / "none.sqlite")])
