"""The LLM call store: one SQLite file (``data/llm/llm.sqlite``) holding

- ``responses`` — the content-addressed cache of round trips. The key covers provider, model, prompt
  template fingerprint (name, version and text), the rendered system text and messages, the images
  shown (their sha256), sampling parameters and the output schema. A re-run after a crash, or with
  more rows, pays only for round trips not made before. Each corrective retry is its own round trip with its own key (its messages
  include the bad reply and the correction), so a cached run replays exactly.
- ``ledger`` — one row per logical call (see ``tasks/llm/ledger.py``), exported as the ``llm_calls`` stage.
- ``batches`` / ``batch_items`` — Message Batch ids and which cache keys they carry, so a killed
  process resumes polling instead of resubmitting.

Why SQLite: WAL journaling makes every committed row survive ``kill -9``; ``busy_timeout`` lets
several processes write the same file; one connection per store behind a lock serves many threads.
A batch result is stored with ``unbilled_usd`` > 0 and billed to the ledger by the first call that
reads it, so the batch's cost is counted exactly once even across a kill.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS responses (
  key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, text TEXT NOT NULL,
  usage TEXT NOT NULL, origin TEXT NOT NULL, unbilled_usd REAL NOT NULL DEFAULT 0,
  latency_s REAL NOT NULL DEFAULT 0, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (
  id INTEGER PRIMARY KEY AUTOINCREMENT, row TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS batches (
  batch_id TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, stage TEXT NOT NULL,
  n_items INTEGER NOT NULL, status TEXT NOT NULL, submitted_at REAL NOT NULL, ended_at REAL);
CREATE TABLE IF NOT EXISTS batch_items (
  key TEXT NOT NULL, batch_id TEXT NOT NULL, PRIMARY KEY (key, batch_id));
CREATE INDEX IF NOT EXISTS batch_items_batch ON batch_items (batch_id);
"""


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def cache_key(*, provider: str, model: str, template: str, system: str, messages: list[dict[str, str]],
              max_tokens: int, temperature: float, output_schema: dict[str, Any], sample: int = 0,
              images: list[str] | None = None) -> str:
    """sha256 over everything that changes the answer; 64 hex characters (also a valid batch custom_id).
    ``images``: the sha256 of each image the request shows, in order."""
    sampling: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
    if sample:  # sample 0 keeps the keys every earlier call was cached under
        sampling["sample"] = sample
    body: dict[str, Any] = {"provider": provider, "model": model, "template": template, "system": system,
                            "messages": messages, "sampling": sampling, "schema": output_schema}
    if images:  # a text-only call keeps the key it always had
        body["images"] = list(images)
    payload = canonical_json(body)
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class CachedReply:
    text: str
    usage: dict[str, int]
    origin: str
    latency_s: float
    unbilled_usd: float = 0.0


class CallStore:
    """Thread-safe handle on the SQLite file; safe to open from several processes at once."""

    def __init__(self, path: Path | str, timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._con = sqlite3.connect(str(path), timeout=timeout_s, check_same_thread=False, isolation_level=None)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute("PRAGMA synchronous=NORMAL")
        self._con.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        with self._lock:
            self._con.executescript(SCHEMA_SQL)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its path (a connection cannot travel); reopened on unpickling."""
        return {"path": str(self.path)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]

    def close(self) -> None:
        with self._lock:
            self._con.close()

    def __enter__(self) -> "CallStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- responses -------------------------------------------------------------------------------
    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            row = self._con.execute(
                "SELECT text, usage, origin, latency_s, unbilled_usd FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return CachedReply(row[0], json.loads(row[1]), row[2], row[3], row[4])

    def has(self, keys: Iterable[str]) -> set[str]:
        keys = list(keys)
        found: set[str] = set()
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                q = f"SELECT key FROM responses WHERE key IN ({','.join('?' * len(chunk))})"
                found.update(r[0] for r in self._con.execute(q, chunk))
        return found

    def put(self, key: str, provider: str, model: str, text: str, usage: dict[str, int], *, origin: str = "messages",
            latency_s: float = 0.0, unbilled_usd: float = 0.0) -> None:
        """First writer wins: a concurrent duplicate round trip does not overwrite (nor re-bill)."""
        with self._lock:
            self._con.execute(
                "INSERT OR IGNORE INTO responses (key, provider, model, text, usage, origin, unbilled_usd, latency_s,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, provider, model, text, canonical_json(usage), origin, unbilled_usd, latency_s, time.time()))

    def claim_unbilled(self, key: str) -> float:
        """Atomically take the not-yet-ledgered cost of a batch result (0.0 if already taken).

        ``BEGIN IMMEDIATE`` holds the write lock across read and reset, so two processes reading the
        same batch result cannot both bill it.
        """
        with self._lock:
            self._con.execute("BEGIN IMMEDIATE")
            try:
                row = self._con.execute("SELECT unbilled_usd FROM responses WHERE key = ?", (key,)).fetchone()
                amount = float(row[0]) if row else 0.0
                if amount > 0:
                    self._con.execute("UPDATE responses SET unbilled_usd = 0 WHERE key = ?", (key,))
                self._con.execute("COMMIT")
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
        return amount

    # -- ledger ----------------------------------------------------------------------------------
    def add_ledger_row(self, row: dict[str, Any]) -> None:
        with self._lock:
            self._con.execute("INSERT INTO ledger (row) VALUES (?)", (canonical_json(row),))

    def ledger_rows(self, run_id: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            rows = [json.loads(r[0]) for r in self._con.execute("SELECT row FROM ledger ORDER BY id")]
        return [r for r in rows if run_id is None or r.get("run_id") == run_id]

    def ledger_watermark(self) -> tuple[int, int]:
        """(row count, last id): a cheap fingerprint of the ledger's contents."""
        with self._lock:
            n, last = self._con.execute("SELECT count(*), coalesce(max(id), 0) FROM ledger").fetchone()
        return int(n), int(last)

    # -- batches ---------------------------------------------------------------------------------
    def record_batch(self, batch_id: str, provider: str, model: str, stage: str, keys: list[str]) -> None:
        with self._lock:
            self._con.execute("BEGIN IMMEDIATE")
            try:
                self._con.execute(
                    "INSERT OR REPLACE INTO batches VALUES (?, ?, ?, ?, ?, 'open', ?, NULL)",
                    (batch_id, provider, model, stage, len(keys), time.time()))
                self._con.executemany("INSERT OR IGNORE INTO batch_items VALUES (?, ?)", [(k, batch_id) for k in keys])
                self._con.execute("COMMIT")
            except BaseException:
                self._con.execute("ROLLBACK")
                raise

    def open_batches(self, provider: str, keys: Iterable[str]) -> dict[str, set[str]]:
        """Open batches of ``provider`` that carry any of ``keys``: batch id -> those keys."""
        wanted = set(keys)
        out: dict[str, set[str]] = {}
        with self._lock:
            rows = self._con.execute(
                "SELECT i.batch_id, i.key FROM batch_items i JOIN batches b ON b.batch_id = i.batch_id "
                "WHERE b.status = 'open' AND b.provider = ?", (provider,)).fetchall()
        for batch_id, key in rows:
            if key in wanted:
                out.setdefault(batch_id, set()).add(key)
        return out

    def close_batch(self, batch_id: str, status: str = "ended") -> None:
        with self._lock:
            self._con.execute("UPDATE batches SET status = ?, ended_at = ? WHERE batch_id = ?",
                              (status, time.time(), batch_id))

    def batches(self) -> list[dict[str, Any]]:
        with self._lock:
            cur = self._con.execute("SELECT * FROM batches ORDER BY submitted_at")
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]
