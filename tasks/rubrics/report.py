"""The coverage summary of a build-rubrics run (for the Prefect artifact and the CLI): references,
items by scope and level, requirement coverage, unsupported items and merges. Pure functions."""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


def coverage_summary(refs: pa.Table, items: pa.Table) -> dict[str, Any]:
    """Counts for the artifact: references, items by scope and level, coverage, unsupported, merges."""
    ok = refs.filter(pc.equal(refs.column("status"), "ok"))
    lists = lambda c: ok.column(c).to_pylist()  # noqa: E731
    unsupported = [u for us in lists("unsupported_items") for u in us]
    decisions = [d for ds in lists("filtering_decisions") for d in ds]
    level = items.group_by(["scope", "rubric_level"]).aggregate([("id", "count")]).to_pylist()
    return {
        "references": ok.num_rows, "queries_without_reference": refs.num_rows - ok.num_rows,
        "items": items.num_rows, "by_scope_level": {f"{r['scope']}/{r['rubric_level']}": r["id_count"] for r in level},
        "requirements": sum(len(x) for x in lists("requirement_ids")),
        "must_cover": sum(len(x) for x in lists("must_cover_ids")),
        "uncovered_must_cover": sum(len(x) for x in lists("uncovered_must_cover_ids")),
        "queries_with_uncovered_must_cover": sum(bool(x) for x in lists("uncovered_must_cover_ids")),
        "unsupported_removed_by_evidence_check": sum(u["found_by"] == "evidence_check" for u in unsupported),
        "unsupported_reported_by_model": sum(u["found_by"] == "model" for u in unsupported),
        "merges": sum(d["action"] == "merge" for d in decisions),
    }


def coverage_markdown(cov: dict[str, Any]) -> str:
    lines = ["## Coverage summary", "", "| measure | value |", "|---|---|"]
    for k, v in cov.items():
        if isinstance(v, dict):
            v = ", ".join(f"{a}: {b}" for a, b in sorted(v.items()))
        lines.append(f"| {k} | {v} |")
    return "\n".join(lines)
