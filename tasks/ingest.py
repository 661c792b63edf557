"""Ingest an external query file (JSONL with an ``instruction`` field, e.g. WebGen-Bench's
``test.jsonl``: id, instruction, Category, application_type) into the ``queries`` schema.

A malformed line never loses the good ones: good rows are returned, bad lines are reported with
their line numbers and reasons.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from schemas.queries import QUERIES_SCHEMA


@dataclass
class IngestError:
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


def ingest_jsonl(path: Path) -> tuple[pa.Table, list[IngestError]]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"query file {path} does not exist; pass a JSONL file with an 'instruction' field per line")
    rows, errors, seen = [], [], set()
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
            text = obj.get("instruction") or obj.get("query") or obj.get("text")
            if not isinstance(text, str) or not text.strip():
                errors.append(IngestError(n, "no non-empty 'instruction' (or 'query'/'text') field"))
                continue
            raw_id = obj.get("id", f"line{n}")
            qid = f"ext-{raw_id}"
            if qid in seen:
                errors.append(IngestError(n, f"duplicate id {raw_id!r}"))
                continue
            seen.add(qid)
            title = obj.get("application_type") or obj.get("Category") or text.strip().split(".")[0][:80]
            rows.append({
                "query_id": qid, "text": text.strip(), "title": str(title)[:120], "capability_ids": [],
                "category_ids": [], "persona_id": None, "domain": None, "difficulty": None, "source": source,
                "provider": "external", "model": None, "prompt_version": None, "candidate_index": None,
            })
    return pa.Table.from_pylist(rows, schema=QUERIES_SCHEMA), errors
