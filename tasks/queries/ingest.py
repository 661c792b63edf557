"""Ingest an external query set (JSONL) into the ``queries`` stage and the ``benchmark_queries`` stage.

Three formats, told apart line by line (``schemas/benchmark.py`` documents them): WebGen-Bench
(``instruction`` + ``ui_instruct`` test cases), InteractScience (``question``: an implementation plan,
plus ``discipline`` and ``difficulty``) and the generic one (``query`` + optional ``checklist``,
``domain``, ``difficulty``). A benchmark's given checklist items are kept in
``benchmark_queries`` and become rubric items in build-rubrics. A benchmark's domain or difficulty
reaches the ``queries`` stage only when it is one of ours (``schemas/queries.py``); its own labels
stay in ``benchmark_queries`` either way.

A malformed line never loses the good ones: good rows are returned, bad lines are reported with
their line numbers and reasons.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.benchmark import BENCHMARK_SCHEMA
from schemas.queries import DIFFICULTIES, DOMAINS, QUERIES_SCHEMA

TEXT_FIELDS = ("instruction", "question", "query", "text")  # the request, in the first of these a line has


@dataclass
class IngestError:
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass
class Ingested:
    queries: pa.Table
    benchmark: pa.Table
    errors: list[IngestError] = field(default_factory=list)


class LineError(ValueError):
    """One line's problem; the message names the field and what it should be."""


def _label(v: Any) -> str | None:
    """A benchmark label: WebGen-Bench nests its category as ``{"primary_category", "subcategories"}``."""
    if isinstance(v, dict):
        v = v.get("primary_category")
    return str(v).strip() or None if v is not None else None


def _webgen_items(cases: Any) -> list[dict[str, str | None]]:
    if not isinstance(cases, list):
        raise LineError("'ui_instruct' must be a list of {\"task\", \"expected_result\"} objects")
    out = []
    for k, c in enumerate(cases, start=1):
        task = c.get("task") if isinstance(c, dict) else None
        if not isinstance(task, str) or not task.strip():
            raise LineError(f"'ui_instruct' test case {k} has no non-empty 'task'")
        expected = c.get("expected_result")
        out.append({"requirement": task.strip(), "verification": expected.strip() if isinstance(expected, str) else None})
    return out


def _checklist_items(items: Any) -> list[dict[str, str | None]]:
    if not isinstance(items, list):
        raise LineError("'checklist' must be a list of strings or {\"requirement\", \"verification\"} objects")
    out = []
    for k, it in enumerate(items, start=1):
        req = it if isinstance(it, str) else it.get("requirement") if isinstance(it, dict) else None
        if not isinstance(req, str) or not req.strip():
            raise LineError(f"'checklist' item {k} has no requirement text")
        ver = it.get("verification") if isinstance(it, dict) else None
        out.append({"requirement": req.strip(), "verification": ver.strip() if isinstance(ver, str) else None})
    return out


def line_format(obj: dict[str, Any]) -> str:
    """Which of ``BENCHMARK_FORMATS`` a line is written in (by the fields it has)."""
    if "instruction" in obj or "ui_instruct" in obj:
        return "webgen-bench"
    if "question" in obj and ("discipline" in obj or "snapshot_checklists" in obj):
        return "interactscience"
    return "generic"


def parse_line(obj: dict[str, Any], n: int, source: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(queries row, benchmark_queries row) of one JSON object; ``LineError`` names what is wrong."""
    text = next((obj[k] for k in TEXT_FIELDS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if text is None:
        raise LineError("no non-empty 'instruction' (WebGen-Bench), 'question' (InteractScience) or 'query' "
                        "(generic) field")
    fmt = line_format(obj)
    webgen = fmt == "webgen-bench"
    # InteractScience's snapshot checklists describe screenshots taken after its own scripted actions: they are
    # the benchmark's visual protocol, not rubric items, so no given items come from them.
    given = _webgen_items(obj.get("ui_instruct", [])) if webgen else \
        [] if fmt == "interactscience" else _checklist_items(obj.get("checklist", []))
    raw_id = obj.get("id", f"line{n}")
    qid = f"ext-{raw_id}"
    category = _label(obj.get("Category") if webgen else obj.get("discipline") if fmt == "interactscience"
                      else obj.get("category"))
    domain = _label(obj.get("discipline") if fmt == "interactscience" else obj.get("domain"))
    difficulty = _label(obj.get("difficulty"))
    title = obj.get("application_type") or obj.get("theorem or principle") or category or \
        text.strip().split(".")[0][:80]
    query = {"query_id": qid, "text": text.strip(), "title": str(title)[:120], "capability_ids": [],
             "category_ids": [], "persona_id": None, "domain": domain if domain in DOMAINS else None,
             "difficulty": difficulty if difficulty in DIFFICULTIES else None, "source": source,
             "provider": "external", "model": None, "prompt_version": None, "candidate_index": None}
    bench = {"query_id": qid, "benchmark": source.removeprefix("external:"),
             "format": fmt, "external_id": str(raw_id), "category": category,
             "application_type": _label(obj.get("application_type")), "domain": domain, "difficulty": difficulty,
             "given_items": given}
    return query, bench


def ingest_jsonl(path: Path) -> Ingested:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"query file {path} does not exist; pass a JSONL file with an 'instruction' "
                                "(WebGen-Bench), 'question' (InteractScience) or 'query' (generic) field per line")
    queries, bench, errors, seen = [], [], [], set()
    source = f"external:{path.name}"
    with path.open(encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(IngestError(n, f"not valid JSON ({e.msg} at column {e.colno})"))
                continue
            if not isinstance(obj, dict):
                errors.append(IngestError(n, "not a JSON object"))
                continue
            try:
                q, b = parse_line(obj, n, source)
            except LineError as e:
                errors.append(IngestError(n, str(e)))
                continue
            if q["query_id"] in seen:
                errors.append(IngestError(n, f"duplicate id {b['external_id']!r}"))
                continue
            seen.add(q["query_id"])
            queries.append(q)
            bench.append(b)
    return Ingested(pa.Table.from_pylist(queries, schema=QUERIES_SCHEMA),
                    pa.Table.from_pylist(bench, schema=BENCHMARK_SCHEMA), errors)
