"""The ``service_scores`` stage: what the service answered, one row per item, queryable in DuckDB.

Answered items are spooled as Parquet parts (each written atomically) under
``<data_dir>/runs/serve-env/<session>/records/``; the stage is published through ``run_stage`` (the
project's one way: validated, manifest last, a DuckDB view) from every session's parts, every
``service.publish_every_s`` while serving and once when the service stops. A killed service loses
at most the rows not yet spooled (at most ``FLUSH_ROWS``, or those of the last seconds).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.config import Config
from schemas.contracts.service import SERVICE_SCORES_SCHEMA, service_scores_suites
from schemas.layout import RUN_RECORDS, runs_dir
from tasks.env.publish import env_fingerprint
from tasks.stages.stage import StageOutcome, StageSpec, run_stage
from tasks.stages.store import StageStore, atomic_write_table

log = logging.getLogger("rubricrl.service")
FLOW = "serve-env"  # the runs folder of the service's sessions
FLUSH_ROWS = 256  # rows buffered in memory before a part is written
SPEC = StageSpec("service_scores", SERVICE_SCORES_SCHEMA, service_scores_suites)


def score_row(request_id: str, route: str, scored: Any) -> dict[str, Any]:
    """One ``service_scores`` row from one answered item (``engine.Scored``)."""
    a, job = scored.answer, scored.job
    return {"request_id": request_id, "item_index": job.index, "route": route,
            "scored_at": datetime.now(timezone.utc), "query_id": a.get("query_id"), "response": job.response,
            "advantage": job.advantage, "reward": a.get("reward"), "reward_kind": a.get("reward_kind"),
            "tier": a.get("tier"), "reason": a.get("reason"), "format_valid": a.get("format_valid"),
            "source_valid": a.get("source_valid"), "runtime_valid": a.get("runtime_valid"),
            "rubric_score": a.get("rubric_score"), "provider": (a.get("judge") or {}).get("provider") or "none",
            "n_findings": len(a.get("findings") or []), "latency_s": round(scored.latency_s, 6),
            "result_json": json.dumps(a, ensure_ascii=False)}


class ScoreRecorder:
    """Spools answered items and publishes ``service_scores`` (see the module docstring)."""

    def __init__(self, project: Config, provider: str) -> None:
        self.project, self.provider = project, provider
        self.store = StageStore(project.data_dir)
        self.root = runs_dir(project.data_dir, FLOW)
        session = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.spool = self.root / session / RUN_RECORDS
        self._rows: list[dict[str, Any]] = []
        self._parts = 0
        self._lock, self._publish_lock = threading.Lock(), threading.Lock()
        self._dirty = False
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._every, name="rubricrl-service-scores", daemon=True)
        self._timer.start()

    def add(self, request_id: str, route: str, scored: list[Any]) -> None:
        rows = [score_row(request_id, route, s) for s in scored]
        with self._lock:
            self._rows.extend(rows)
            self._dirty = True
            if len(self._rows) >= FLUSH_ROWS:
                self._flush_locked()

    def _flush_locked(self) -> None:
        if not self._rows:
            return
        table = pa.Table.from_pylist(self._rows, schema=SERVICE_SCORES_SCHEMA)
        atomic_write_table(self.spool / f"part-{self._parts:06d}.parquet", table)
        self._parts += 1
        self._rows = []

    def parts(self) -> dict[str, Path]:
        """Every session's spooled parts, keyed ``<session>-<n>`` (stable, sorted)."""
        return {f"{p.parent.parent.name}-{p.stem[len('part-'):]}": p
                for p in sorted(self.root.glob(f"*/{RUN_RECORDS}/part-*.parquet"))}

    def publish(self) -> StageOutcome | None:
        """Spool what is buffered and publish the stage over all parts; None when nothing was ever kept."""
        with self._lock:
            self._flush_locked()
            self._dirty = False
        with self._publish_lock:
            parts = self.parts()
            if not parts:
                return None
            env = self.project.env
            keys = list(parts)
            return run_stage(self.store, SPEC, part_keys=keys, make_part=lambda k: pq.read_table(parts[k]),
                             provider=self.provider, config={"env": env.model_dump(mode="json")},
                             config_hash=env_fingerprint(env), inputs={},
                             extra={"parts": hashlib.sha256("\n".join(keys).encode()).hexdigest()})

    def _every(self) -> None:
        while not self._stop.wait(self.project.service.publish_every_s):
            if self._dirty:
                try:
                    self.publish()
                except Exception:  # a failed publish must not stop the serving; the parts stay for the next one
                    log.exception("service_scores: publishing failed; the spooled parts are kept in %s", self.spool)

    def close(self) -> StageOutcome | None:
        self._stop.set()
        self._timer.join(timeout=5)
        return self.publish()
