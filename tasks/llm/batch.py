"""Message Batches for bulk stages, resumable across a killed process.

``run_bulk(provider, requests)``:
1. computes each request's first round trip and its cache key (the batch ``custom_id``);
2. skips keys already in the response cache, and keys carried by a batch still open in the store
   (a killed run's batch: polled again, never resubmitted);
3. submits the rest in batches within ``max_requests`` and ``max_bytes`` and records each batch id
   with its keys *before* polling;
4. polls until every batch ended, stores succeeded results in the cache as unbilled batch replies
   (billed once, at the batch discount, by the call that reads them);
5. runs ``provider.complete_many``: batch results are cache hits; errored, expired and canceled
   items, and corrective retries, go once through the normal Messages path.

A request bigger than ``max_bytes`` on its own is not batched; it takes the normal path.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

from tasks.llm.ledger import cost_usd

# These live in tasks.llm.base, which calls this module (Provider.bulk): importing them here, even for
# type checking only, would close an import circle, so they are named in annotations only.
LLMRequest = LLMResult = Provider = RawReply = Any

log = logging.getLogger(__name__)


@dataclass
class BatchItem:
    key: str
    request: "LLMRequest"
    system: str
    messages: list[dict[str, str]]


@dataclass
class BatchOutcome:
    key: str
    reply: "RawReply | None"
    error: str | None


class BatchBackend(Protocol):
    def item_bytes(self, item: BatchItem) -> int: ...
    def submit(self, items: list[BatchItem]) -> str: ...
    def ended(self, batch_id: str) -> bool: ...
    def results(self, batch_id: str) -> Iterator[BatchOutcome]: ...


class BatchWaitTimeout(TimeoutError):
    """Batches still running after ``max_wait_s``; their ids are stored, so a re-run resumes polling."""


def split_batches(sizes: list[int], max_requests: int, max_bytes: int) -> tuple[list[list[int]], list[int]]:
    """Group item indices into batches within both limits (in order); also return the indices too big
    to batch at all. Pure."""
    groups: list[list[int]] = []
    too_big: list[int] = []
    cur: list[int] = []
    cur_bytes = 0
    for i, size in enumerate(sizes):
        if size > max_bytes:
            too_big.append(i)
            continue
        if cur and (len(cur) >= max_requests or cur_bytes + size > max_bytes):
            groups.append(cur)
            cur, cur_bytes = [], 0
        cur.append(i)
        cur_bytes += size
    if cur:
        groups.append(cur)
    return groups, too_big


def _settings(provider: "Provider", options: dict[str, Any]) -> dict[str, Any]:
    from schemas.config.llm import BatchConfig

    base = getattr(provider, "batch_config", None) or BatchConfig()
    out = base.model_dump()
    unknown = set(options) - set(out) - {"sleep"}
    if unknown:
        raise ValueError(f"unknown batch options {sorted(unknown)}; allowed: {sorted(out)}")
    out.update(options)
    return out


def run_bulk(provider: "Provider", requests: list["LLMRequest"], concurrency: int | None = None,
             **options: Any) -> list["LLMResult"]:
    """Bulk completion through Message Batches when the provider has them (see module doc)."""
    cfg = _settings(provider, options)
    sleep: Callable[[float], None] = options.get("sleep", time.sleep)
    backend = provider.batch_backend()
    store = provider.store
    if not cfg["enabled"] or backend is None or store is None or not provider.use_cache or not requests:
        return provider.complete_many(requests, concurrency)
    items: dict[str, BatchItem] = {}
    for req in requests:
        system, messages, key = provider.first_trip(req)
        items.setdefault(key, BatchItem(key, req, system, messages))
    todo = set(items) - store.has(items)
    waiting = store.open_batches(provider.name, todo)
    for keys in waiting.values():
        todo -= keys
    if waiting:
        log.info("resuming %d open batch(es) for %d requests", len(waiting), sum(map(len, waiting.values())))
    submitted = _submit(provider, backend, [items[k] for k in items if k in todo], cfg)
    open_ids = list(waiting) + submitted
    _poll(provider, backend, open_ids, cfg, sleep)
    return provider.complete_many(requests, concurrency)


def _submit(provider: "Provider", backend: BatchBackend, todo: list[BatchItem], cfg: dict[str, Any]) -> list[str]:
    assert provider.store is not None
    groups, too_big = split_batches([backend.item_bytes(i) for i in todo], cfg["max_requests"], cfg["max_bytes"])
    if too_big:
        log.warning("%d requests exceed llm.batch.max_bytes on their own; they take the normal path", len(too_big))
    ids = []
    for group in groups:
        if provider.budget.exceeded:
            log.warning("budget spent; %d batch(es) not submitted", len(groups) - len(ids))
            break
        chunk = [todo[i] for i in group]
        batch_id = backend.submit(chunk)
        # Recorded before the first poll: a kill from here on resumes polling this id.
        provider.store.record_batch(batch_id, provider.name, provider.model, chunk[0].request.stage,
                                    [i.key for i in chunk])
        ids.append(batch_id)
    return ids


def _poll(provider: "Provider", backend: BatchBackend, batch_ids: list[str], cfg: dict[str, Any],
          sleep: Callable[[float], None]) -> None:
    assert provider.store is not None
    started = time.monotonic()
    pending = list(batch_ids)
    submitted_at = {b["batch_id"]: b["submitted_at"] for b in provider.store.batches()}
    while pending:
        still = []
        for batch_id in pending:
            if backend.ended(batch_id):
                _collect(provider, backend, batch_id, time.time() - submitted_at.get(batch_id, time.time()))
            else:
                still.append(batch_id)
        pending = still
        if not pending:
            return
        if time.monotonic() - started > cfg["max_wait_s"]:
            raise BatchWaitTimeout(f"{len(pending)} batch(es) still in progress after {cfg['max_wait_s']:.0f}s "
                                   f"({', '.join(pending[:5])}); re-run the flow to resume polling them")
        sleep(cfg["poll_interval_s"])


def _collect(provider: "Provider", backend: BatchBackend, batch_id: str, latency_s: float) -> None:
    store = provider.store
    assert store is not None
    failed: dict[str, int] = {}
    n = 0
    for out in backend.results(batch_id):
        n += 1
        if out.reply is None:
            kind = (out.error or "failed").split(":")[0]
            failed[kind] = failed.get(kind, 0) + 1
            continue
        price = cost_usd(out.reply.usage, provider.prices, provider.batch_discount) if provider.prices else 0.0
        # unbilled_usd is billed to the ledger by the first call that reads this reply (see cache.py).
        store.put(out.key, provider.name, provider.model, out.reply.text, out.reply.usage.as_dict(), origin="batch",
                  latency_s=latency_s, unbilled_usd=price)
    store.close_batch(batch_id)
    if failed:
        log.warning("batch %s: %d results, not succeeded: %s (these take the normal path once)", batch_id, n, failed)
