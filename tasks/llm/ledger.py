"""The cost ledger: prices round trips, keeps the run's budget, and turns ledger rows into the
``llm_calls`` stage (Parquet, validated, visible in ``data/catalog.duckdb``) and a printed summary.

Cost of a round trip = tokens x the model's price per million (``schemas/config/llm.py``); Message
Batch results are multiplied by ``batch.discount``. Cache hits cost nothing.

Run: ``print(format_summary(summarize(store.ledger_rows(run_id))))``; publish with ``publish_llm_calls``.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa

from schemas.config.llm import Prices
from schemas.contracts.llm_calls import LLM_CALLS_SCHEMA

# LLMResult and Usage live in tasks.llm.base, which imports this module: importing them here, even
# for type checking only, would close an import circle, so they are named in annotations only.
LLMResult = Usage = Any

if TYPE_CHECKING:
    from tasks.llm.cache import CallStore
    from tasks.stages.store import Manifest, StageStore


def cost_usd(usage: "Usage", prices: Prices, discount: float = 1.0) -> float:
    """Price of one round trip; ``input_tokens`` are the uncached input tokens (Anthropic's convention)."""
    return discount * (usage.input_tokens * prices.input + usage.output_tokens * prices.output
                       + usage.cache_read_tokens * prices.cache_read
                       + usage.cache_write_tokens * prices.cache_write) / 1_000_000


class BudgetExceeded(RuntimeError):
    """Raised by ``Budget.check`` so a flow stops cleanly; what was paid for is cached and ledgered."""


@dataclass
class Budget:
    """Spend of one run against an optional limit. Thread-safe.

    Calls already in flight when the limit is crossed still finish, so the overshoot is at most
    ``concurrency`` calls; calls not yet sent return status ``budget``.
    """

    limit_usd: float | None = None
    spent_usd: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {"limit_usd": self.limit_usd, "spent_usd": self.spent_usd}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def add(self, usd: float) -> None:
        with self._lock:
            self.spent_usd += usd

    @property
    def exceeded(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def check(self) -> None:
        if self.exceeded:
            raise BudgetExceeded(
                f"LLM budget spent: ${self.spent_usd:.4f} of llm.budget_usd=${self.limit_usd:.4f}; "
                "raise llm.budget_usd and re-run (calls already made are cached and cost nothing again)")


def ledger_row(result: "LLMResult", *, run_id: str, stage: str, prompt: str, prompt_version: str,
               cache_key: str) -> dict[str, Any]:
    u = result.usage
    return {
        "run_id": run_id, "ts": datetime.now(timezone.utc).timestamp(), "stage": stage, "key": result.key,
        "provider": result.provider, "model": result.model, "prompt": prompt, "prompt_version": prompt_version,
        "cache_key": cache_key, "status": result.status, "error": result.error, "attempts": result.attempts,
        "input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "cache_read_tokens": u.cache_read_tokens,
        "cache_write_tokens": u.cache_write_tokens, "latency_s": round(result.latency_s, 6),
        "cost_usd": result.cost_usd, "cached": result.cached, "batch": result.batch,
        "first_try_valid": result.first_try_valid,
    }


def ledger_table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    rows = list(rows)
    cols: dict[str, list[Any]] = {f.name: [] for f in LLM_CALLS_SCHEMA}
    for r in rows:
        for name in cols:
            v = r.get(name)
            cols[name].append(datetime.fromtimestamp(v, timezone.utc) if name == "ts" else v)
    return pa.table(cols, schema=LLM_CALLS_SCHEMA)


_SUM = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd")


def summarize(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per stage and ``total``: calls, ok/missing/error/budget counts, cached, batch, tokens, cost.

    Tokens count only billed round trips (cache hits re-use earlier tokens and pay nothing).
    """
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"calls": 0, "ok": 0, "missing": 0, "error": 0, "budget": 0,
                                                          "cached": 0, "batch": 0, "first_try_valid": 0,
                                                          **{k: 0 for k in _SUM}})
    for r in rows:
        for name in (r["stage"], "total"):
            s = out[name]
            s["calls"] += 1
            s[r["status"]] += 1
            s["cached"] += bool(r["cached"])
            s["batch"] += bool(r["batch"])
            s["first_try_valid"] += bool(r.get("first_try_valid"))  # rows written before it existed: unknown
            if not r["cached"]:
                for k in _SUM:
                    s[k] += r[k]
    return dict(out)


def result_summary(results: Iterable["LLMResult"]) -> dict[str, Any]:
    """A stage's summary line from its results: counts (missing included) and cost."""
    results = list(results)
    return {
        "calls": len(results),
        "ok": sum(r.status == "ok" for r in results),
        "missing": sum(r.status == "missing" for r in results),
        "error": sum(r.status == "error" for r in results),
        "budget": sum(r.status == "budget" for r in results),
        "cached": sum(r.cached for r in results),
        "cost_usd": round(sum(r.cost_usd for r in results), 6),
        "input_tokens": sum(r.usage.input_tokens for r in results if not r.cached),
        "output_tokens": sum(r.usage.output_tokens for r in results if not r.cached),
    }


def format_summary(summary: dict[str, dict[str, Any]]) -> str:
    head = ("stage", "calls", "ok", "missing", "error", "budget", "cached", "batch", "valid_1st", "in_tok", "out_tok",
            "cache_rd", "cache_wr", "cost_usd")
    lines = [head]
    for stage in sorted(summary, key=lambda s: (s == "total", s)):
        s = summary[stage]
        lines.append((stage, *(str(s[k]) for k in ("calls", "ok", "missing", "error", "budget", "cached", "batch",
                                                    "first_try_valid", "input_tokens", "output_tokens", "cache_read_tokens",
                                                    "cache_write_tokens")), f"{s['cost_usd']:.4f}"))
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     for r in lines)


def print_ledger_summary(store: "CallStore", run_id: str | None = None) -> str:
    """Print (and return) the ledger and cost summary of one run, or of every run when ``run_id`` is None."""
    rows = store.ledger_rows(run_id)
    empty = "no LLM calls in the ledger" + (f" for run {run_id}" if run_id else "")
    text = format_summary(summarize(rows)) if rows else empty
    print(text)
    return text


def publish_llm_calls(stage_store: "StageStore", call_store: "CallStore", report_dir: Any = None) -> "Manifest":
    """Publish the whole ledger as the ``llm_calls`` stage (validated) and refresh the DuckDB view.

    Re-publishing an unchanged ledger does no work (the fingerprint is the ledger's watermark).
    """
    from schemas.contracts.llm_calls import llm_calls_suites
    from tasks.stages.catalog import refresh_catalog
    from tasks.stages.lock import data_dir_lock
    from tasks.stages.store import fingerprint
    from tasks.stages.validate import StageValidationError, run_suites

    count, last_id = call_store.ledger_watermark()
    fp = fingerprint(stage="llm_calls", rows=count, last_id=last_id, schema=str(LLM_CALLS_SCHEMA))
    with data_dir_lock(stage_store.root):
        if stage_store.is_current("llm_calls", fp):
            man = stage_store.manifest("llm_calls")
            assert man is not None
            return man
        table = ledger_table(call_store.ledger_rows())
        report = run_suites("llm_calls", table, llm_calls_suites(), report_dir=report_dir)
        if not report.success:
            raise StageValidationError(report)
        build = stage_store.begin("llm_calls", fp, LLM_CALLS_SCHEMA)
        build.write_part("ledger", table)
        providers = sorted(set(table.column("provider").to_pylist())) or ["none"]
        total = summarize(call_store.ledger_rows()).get("total", {})
        man = build.publish(provider=",".join(providers), config_hash=fp, inputs={}, config={},
                            validation={"success": True, "summary": report.summary()}, stats=total)
        refresh_catalog(stage_store)
    return man


def main(argv: list[str] | None = None) -> None:
    """``python -m tasks.llm.ledger [STORE] [--run RUN_ID]``: print the ledger and cost summary."""
    import argparse

    from tasks.llm.cache import CallStore

    ap = argparse.ArgumentParser(description="Print the LLM ledger and cost summary")
    ap.add_argument("store", nargs="?", default="data/llm/llm.sqlite", help="the call store (llm.store_path)")
    ap.add_argument("--run", default=None, help="one run id (default: every run)")
    args = ap.parse_args(argv)
    from pathlib import Path

    if not Path(args.store).exists():
        raise SystemExit(f"{args.store} does not exist; run a flow with an LLM provider first, or pass llm.store_path")
    with CallStore(args.store) as store:
        print_ledger_summary(store, args.run)


if __name__ == "__main__":
    main()
