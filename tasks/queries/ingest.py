"""Ingest an external query set (JSONL) into the ``queries`` stage and the ``benchmark_queries`` stage.

Four formats, told apart line by line (``schemas/contracts/benchmark.py`` documents them): WebGen-Bench
(``instruction`` + ``ui_instruct`` test cases), InteractScience (``question``: an implementation plan,
plus ``discipline`` and ``difficulty``), ArtifactsBench (``question`` + a ``checklist`` of scoring
dimensions with ``maxScore``) and the generic one (``query`` + optional ``checklist``, ``domain``,
``difficulty``). A benchmark's given checklist items are kept in ``benchmark_queries`` and become
rubric items in build-rubrics. A benchmark's domain or difficulty reaches the ``queries`` stage only
when it is one of ours (``schemas/contracts/queries.py``); its own labels stay in ``benchmark_queries`` either way.

What the benchmark's own protocol needs travels with its rows: ArtifactsBench's judge checklist, and
InteractScience's Playwright spec of each task, read from ``<id>.spec.js`` in the benchmark's
``PFT_tests/`` folder (``tests_dir``; by default the one beside the file or beside its folder, as the
benchmark's repository lays them out). A task without a spec is kept, and listed in ``notes``.

A malformed line never loses the good ones: good rows are returned, bad lines are reported with
their line numbers and reasons.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.contracts.benchmark import BENCHMARK_SCHEMA
from schemas.contracts.queries import DIFFICULTIES, DOMAINS, QUERIES_SCHEMA

TEXT_FIELDS = ("instruction", "question", "query", "text")  # the request, in the first of these a line has
TESTS_FOLDER = "PFT_tests"  # InteractScience's folder of per-task Playwright specs


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
    notes: list[str] = field(default_factory=list)  # what the file lacks that is no line's fault (e.g. specs)


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


def _judge_checklist(items: Any) -> list[dict[str, Any]]:
    """ArtifactsBench's scoring dimensions: ``{"id", "title", "description", "maxScore"}`` each."""
    if not isinstance(items, list) or not items:
        raise LineError("'checklist' must be a non-empty list of {\"id\", \"title\", \"description\", \"maxScore\"} "
                        "objects (ArtifactsBench)")
    out = []
    for k, it in enumerate(items, start=1):
        title = it.get("title") if isinstance(it, dict) else None
        top = it.get("maxScore") if isinstance(it, dict) else None
        if not isinstance(title, str) or not title.strip():
            raise LineError(f"'checklist' item {k} has no non-empty 'title'")
        if isinstance(top, bool) or not isinstance(top, (int, float)) or top <= 0:
            raise LineError(f"'checklist' item {k} needs a positive number 'maxScore' (got {top!r})")
        desc = it.get("description")
        out.append({"id": str(it.get("id", k - 1)), "title": title.strip(),
                    "description": desc.strip() if isinstance(desc, str) else "", "max_score": float(top)})
    return out


def line_format(obj: dict[str, Any]) -> str:
    """Which of ``BENCHMARK_FORMATS`` a line is written in (by the fields it has)."""
    if "instruction" in obj or "ui_instruct" in obj:
        return "webgen-bench"
    if "question" in obj and ("discipline" in obj or "snapshot_checklists" in obj):
        return "interactscience"
    if "question" in obj and "checklist" in obj:
        return "artifactsbench"
    return "generic"


def tests_folder(path: Path, tests_dir: Path | None) -> Path | None:
    """The benchmark's folder of per-task specs: ``tests_dir``, else ``PFT_tests/`` beside the file or its folder."""
    if tests_dir is not None:
        if not Path(tests_dir).is_dir():
            raise FileNotFoundError(f"tests folder {tests_dir} does not exist; pass the benchmark's PFT_tests/ folder "
                                    "(one <id>.spec.js per task)")
        return Path(tests_dir)
    return next((d for d in (path.parent / TESTS_FOLDER, path.parent.parent / TESTS_FOLDER) if d.is_dir()), None)


def parse_line(obj: dict[str, Any], n: int, source: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(queries row, benchmark_queries row) of one JSON object; ``LineError`` names what is wrong."""
    text = next((obj[k] for k in TEXT_FIELDS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if text is None:
        raise LineError("no non-empty 'instruction' (WebGen-Bench), 'question' (InteractScience, ArtifactsBench) "
                        "or 'query' (generic) field")
    fmt = line_format(obj)
    webgen, artifacts = fmt == "webgen-bench", fmt == "artifactsbench"
    # InteractScience's snapshot checklists describe screenshots taken after its own scripted actions, and
    # ArtifactsBench's checklist is its judge's rubric: both belong to the benchmark's protocol, not to ours.
    given = _webgen_items(obj.get("ui_instruct", [])) if webgen else \
        [] if fmt in ("interactscience", "artifactsbench") else _checklist_items(obj.get("checklist", []))
    checklist = _judge_checklist(obj.get("checklist")) if artifacts else []
    raw_id = obj.get("index" if artifacts else "id", f"line{n}")
    qid = f"ext-{raw_id}"
    category = _label(obj.get("Category") if webgen else obj.get("discipline") if fmt == "interactscience"
                      else obj.get("class") if artifacts else obj.get("category"))
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
             "given_items": given, "official_tests": None, "official_tests_name": None,
             "official_checklist": checklist}
    return query, bench


def attach_specs(bench: list[dict[str, Any]], folder: Path | None) -> list[str]:
    """Each InteractScience row's own spec (``<external id>.spec.js`` in ``folder``); the notes on those missing."""
    wanted = [b for b in bench if b["format"] == "interactscience"]
    missing = []
    for b in wanted:
        spec = folder / f"{b['external_id']}.spec.js" if folder is not None else None
        if spec is not None and spec.is_file():
            b["official_tests"], b["official_tests_name"] = spec.read_text(encoding="utf-8"), spec.name
        else:
            missing.append(b["external_id"])
    if not missing:
        return []
    where = f"in {folder}" if folder is not None else f"(no {TESTS_FOLDER}/ folder beside the file or its folder)"
    return [f"{len(missing)} of {len(wanted)} InteractScience tasks have no Playwright spec {where}: "
            f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}; they get no official PFT score (pass "
            "the benchmark's PFT_tests/ folder with --tests)"]


def ingest_jsonl(path: Path, tests_dir: Path | None = None) -> Ingested:
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
    notes = attach_specs(bench, tests_folder(path, tests_dir))
    return Ingested(pa.Table.from_pylist(queries, schema=QUERIES_SCHEMA),
                    pa.Table.from_pylist(bench, schema=BENCHMARK_SCHEMA), errors, notes)
