"""The machinery the five rubric stages share: per-query context, chained input hashes, re-use of
unchanged rows from the previous published version, and building one part (a chunk of query ids).

A stage is a ``StageDef``: its prompt, output model, offline rule, how to turn a validated answer
into rows, and the earlier stages it reads (``needs``). ``build_part`` asks the provider only for queries whose row hash is not already in the
previous version, so a nightly run over new queries does work only for them (paper B.1 runs once
per query; re-running is our engineering, not the paper's).

A query whose call fails (after the one corrective retry) keeps a row with its status and error;
stages after it record ``upstream_missing`` for that query, never a guess.
"""
from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from tasks.llm.base import LLMRequest, LLMResult, Provider
from tasks.llm.prompts import load_prompt
from tasks.stages.stage import chunked
from tasks.stages.store import StageNotFound, StageStore

log = logging.getLogger("rubricrl.rubrics")
OK = "ok"


# The QueryContext fields each stage's rows fill; a stage reads those of the stages in its ``needs`` only.
SUPPLIES = {"expansions": ("expanded_query", "trace"), "requirements": ("requirements",), "modules": ("modules",),
            "rubric_candidates": ("candidates",), "rubric_references": ("expanded_query", "reference")}
_SUPPLIED = frozenset(f for fields in SUPPLIES.values() for f in fields)


class UndeclaredStage(RuntimeError):
    """A stage read a context field that no stage in its ``StageDef.needs`` supplies."""


@dataclass(eq=False, repr=False)
class QueryContext:
    """Everything a stage may read about one query: the upstream rows, grouped.

    ``reader`` and ``needs`` (set by the stage loaders) name the stage reading it and the stages it declared:
    reading a field of any other stage raises ``UndeclaredStage``, so a stage's needs are its real inputs.
    A context built by hand (``needs`` None) reads everything."""

    query_id: str
    query: str
    input_hash: str  # hash of the immediately upstream row(s): it chains every earlier stage
    status: str = OK  # status of the upstream stage for this query
    expanded_query: str = ""
    trace: dict[str, Any] = field(default_factory=dict)
    requirements: list[dict[str, Any]] = field(default_factory=list)
    modules: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    given: list[dict[str, Any]] = field(default_factory=list)  # a benchmark's checklist items (benchmark_queries)
    reference: dict[str, Any] = field(default_factory=dict)  # the final reference (rubric_checks reads it)
    reader: str = ""
    needs: tuple[str, ...] | None = None

    def __getattribute__(self, name: str) -> Any:
        if name in _SUPPLIED:
            needs = object.__getattribute__(self, "needs")
            if needs is not None and not any(name in SUPPLIES.get(s, ()) for s in needs):
                stages = [s for s, fields in SUPPLIES.items() if name in fields]
                raise UndeclaredStage(f"stage {object.__getattribute__(self, 'reader')} reads {name!r} (rows of "
                                      f"{' or '.join(stages)}) but declares needs={needs}: add the stage to its "
                                      "StageDef's needs")
        return object.__getattribute__(self, name)

    def __repr__(self) -> str:
        return f"QueryContext({self.query_id!r}, reader={self.reader!r}, needs={self.needs})"


@dataclass(frozen=True)
class StageDef:
    name: str  # stage (DuckDB view) name
    section: str  # RubricsConfig section with its max_tokens/temperature
    prompt: str  # tasks/prompts/<prompt>.md
    schema: pa.Schema
    output_model: type[BaseModel]
    offline_rule: Callable[[dict[str, Any]], dict[str, Any]]
    variables: Callable[[QueryContext], dict[str, Any]]
    rows: Callable[[QueryContext, BaseModel], list[dict[str, Any]]]
    validation_context: Callable[[QueryContext], dict[str, Any] | None] = lambda _ctx: None
    # The earlier stages whose rows its contexts carry (fields: SUPPLIES); the last one is the stage its
    # rows chain to (a query's status and input hash). Empty: the stage reads the queries only.
    needs: tuple[str, ...] = ()


@dataclass
class PartCounts:
    computed: int = 0
    reused: int = 0
    missing: int = 0
    upstream_missing: int = 0

    def add(self, other: "PartCounts") -> None:
        for k in ("computed", "reused", "missing", "upstream_missing"):
            setattr(self, k, getattr(self, k) + getattr(other, k))


def digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def query_hash(query_id: str, text: str) -> str:
    return digest("query", query_id, text)


def prompt_fingerprint(name: str, prompt_dir: str | None) -> str:
    return (load_prompt(name) if prompt_dir is None else load_prompt(name, Path(prompt_dir))).fingerprint


def row_hash(upstream_hash: str, stage: str, prompt_fp: str, provider: Provider, settings: dict[str, Any]) -> str:
    """The hash a row is re-used by: upstream rows, this stage's prompt, provider, model and settings."""
    return digest(upstream_hash, stage, prompt_fp, provider.name, provider.model, settings)


def chunk_query_ids(query_ids: list[str], chunk_size: int) -> dict[str, list[str]]:
    """Stable parts: the sorted query ids cut into chunks, keyed ``c00000``, ``c00001``, ..."""
    return chunked(sorted(query_ids), chunk_size)


def read_part(store: StageStore, stage: str, key: str, query_ids: list[str]) -> pa.Table:
    """The published rows of ``query_ids``: from the part with the same key when it holds them."""
    files = {f.name: f for f in store.files(stage)}
    want = pa.array(query_ids, pa.string())
    f = files.get(f"part-{key}.parquet")
    if f is not None:
        t = store.read_file(stage, f)
        if set(query_ids) <= set(t.column("query_id").unique().to_pylist()):
            return t.filter(pc.is_in(t.column("query_id"), value_set=want))
    t = store.read(stage)  # chunking differs (older version): fall back to a filtered full read
    return t.filter(pc.is_in(t.column("query_id"), value_set=want))


def grouped(table: pa.Table) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        out.setdefault(row["query_id"], []).append(row)
    for rows in out.values():
        if rows and rows[0].get("position") is not None:
            rows.sort(key=lambda r: r["position"])
    return out


class PriorRows:
    """Rows of the previous published version of a stage, found by (query_id, input_hash)."""

    def __init__(self, store: StageStore, stage: str, enabled: bool = True) -> None:
        self.store, self.stage, self.enabled = store, stage, enabled
        self._table: pa.Table | None = None
        self._index: dict[str, tuple[str, list[int]]] | None = None

    def _load(self) -> None:
        if self._index is not None:
            return
        self._index = {}
        if not self.enabled or self.store.manifest(self.stage) is None:
            return
        try:
            self._table = self.store.read(self.stage)
        except (StageNotFound, ValueError) as e:
            log.warning("%s: previous version unreadable (%s); every row is rebuilt", self.stage, e)
            return
        for i, (q, h, s) in enumerate(zip(*(self._table.column(c).to_pylist()
                                            for c in ("query_id", "input_hash", "status")))):
            if s != OK:
                continue  # a query without a current answer is asked again, never re-used as missing
            entry = self._index.setdefault(q, (h, []))
            if entry[0] == h:
                entry[1].append(i)

    def take(self, query_id: str, input_hash: str) -> list[int] | None:
        self._load()
        assert self._index is not None
        entry = self._index.get(query_id)
        return entry[1] if entry and entry[0] == input_hash else None

    def rows(self, indices: list[int]) -> pa.Table:
        assert self._table is not None
        return self._table.take(pa.array(indices, pa.int64()))


def base_row(ctx: QueryContext, input_hash: str, status: str, error: str | None, attempts: int, provider: str,
             model: str, prompt_version: str) -> dict[str, Any]:
    return {"query_id": ctx.query_id, "input_hash": input_hash, "status": status, "error": error,
            "attempts": attempts, "provider": provider, "model": model, "prompt_version": prompt_version}


def null_row(schema: pa.Schema, common: dict[str, Any]) -> dict[str, Any]:
    """A row that records a query's failure: every stage-specific column null."""
    return {**{n: None for n in schema.names}, **common}


def request_for(sd: StageDef, ctx: QueryContext, settings: dict[str, Any], prompt_dir: str | None) -> LLMRequest:
    return LLMRequest(stage=sd.name, key=ctx.query_id, prompt=sd.prompt, variables=sd.variables(ctx),
                      output_model=sd.output_model, offline_rule=sd.offline_rule,
                      validation_context=sd.validation_context(ctx), max_tokens=int(settings["max_tokens"]),
                      temperature=float(settings["temperature"]), prompt_dir=prompt_dir)


def result_rows(sd: StageDef, ctx: QueryContext, result: LLMResult, h: str, version: str) -> list[dict[str, Any]]:
    common = base_row(ctx, h, result.status if result.output is None else OK, result.error, result.attempts,
                      result.provider, result.model, version)
    if result.output is None:
        return [null_row(sd.schema, common)]
    rows = sd.rows(ctx, result.output)
    return [{**null_row(sd.schema, common), **r} for r in rows] or [null_row(sd.schema, {**common, "status": "no_items"})]


def build_part(sd: StageDef, contexts: list[QueryContext], provider: Provider, settings: dict[str, Any],
               prompt_dir: str | None, prior: PriorRows | None, concurrency: int) -> tuple[pa.Table, PartCounts]:
    """One part of stage ``sd``: re-used rows, then fresh answers for the rest, sorted by query."""
    fp = prompt_fingerprint(sd.prompt, prompt_dir)
    version = (load_prompt(sd.prompt) if prompt_dir is None else load_prompt(sd.prompt, Path(prompt_dir))).version
    counts = PartCounts()
    reused: list[int] = []
    fresh: list[dict[str, Any]] = []
    todo: list[tuple[QueryContext, str]] = []
    for ctx in contexts:
        h = row_hash(ctx.input_hash, sd.name, fp, provider, settings)
        idx = prior.take(ctx.query_id, h) if prior is not None else None
        if idx:
            reused += idx
            counts.reused += 1
        elif ctx.status != OK:
            fresh.append(null_row(sd.schema, base_row(ctx, h, "upstream_missing", f"upstream status {ctx.status}",
                                                      0, provider.name, provider.model, version)))
            counts.upstream_missing += 1
        else:
            todo.append((ctx, h))
    results = provider.complete_bulk([request_for(sd, c, settings, prompt_dir) for c, _ in todo], concurrency)
    for (ctx, h), res in zip(todo, results):
        rows = result_rows(sd, ctx, res, h, version)
        counts.computed += 1
        counts.missing += rows[0]["status"] != OK
        fresh += rows
    tables = [pa.Table.from_pylist(fresh, schema=sd.schema)]
    if reused and prior is not None:
        tables.insert(0, prior.rows(reused).select(sd.schema.names).cast(sd.schema))
    table = pa.concat_tables(tables)
    keys = [("query_id", "ascending")] + ([("position", "ascending")] if "position" in sd.schema.names else [])
    return table.sort_by(keys), counts
