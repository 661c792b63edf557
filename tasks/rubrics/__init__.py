"""Query-grounded rubric construction (paper B.1): five LLM stages from a query to its reference.

- ``expansion``, ``requirements``, ``modules``, ``decomposition``, ``filtering``: one module per
  stage (request variables, offline rule, rows); ``filtering.finalize`` is the program's part
  (evidence check, stable ids, coverage).
- ``pipeline``: chained input hashes, re-use of unchanged rows, building one part.
- ``checks``: the rubric_checks stage (an executable check per item where one fits, dry-run).
- ``build``: every stage in order over the published queries (what the build-rubrics flow runs).
- ``load_tasks``: the published references as ``schemas.rubric.Task`` for the environment, with checks.

Run: ``rubricrl run --only build-rubrics`` or ``prefect deployment run build-rubrics/demo``.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from schemas.checks import Check
from schemas.rubric import CompactRubric, Task
from tasks.stages.store import StageNotFound, StageStore


def load_tasks(store: StageStore, query_ids: list[str] | None = None) -> list[Task]:
    """(query_id, expanded query, compact rubric) of every query with a published reference.

    Asking for a query without one raises ``ValueError`` naming it (run build-rubrics for it).
    """
    refs = store.read("rubric_references", columns=["query_id", "status", "expanded_query", "compact_json"])
    refs = refs.filter(pc.equal(refs.column("status"), "ok"))
    if query_ids is not None:
        refs = refs.filter(pc.is_in(refs.column("query_id"), value_set=pa.array(list(query_ids), pa.string())))
        missing = sorted(set(query_ids) - set(refs.column("query_id").to_pylist()))
        if missing:
            raise ValueError(f"no rubric reference for queries {missing[:10]}{' ...' if len(missing) > 10 else ''}; "
                             "run the build-rubrics flow for them (their rows in rubric_references say why)")
    refs = refs.sort_by("query_id")
    checks = item_checks(store)
    return [Task(query_id=q, query=e, rubric=CompactRubric.model_validate_json(c).with_checks(checks.get(q, {})))
            for q, e, c in zip(*(refs.column(n).to_pylist() for n in ("query_id", "expanded_query", "compact_json")))]


def item_checks(store: StageStore) -> dict[str, dict[str, Check]]:
    """query_id -> item id -> its executable check, from ``rubric_items.check`` (none for rubrics built without the checks stage)."""
    try:
        items = store.read("rubric_items")
    except StageNotFound:
        return {}
    if "check" not in items.column_names:
        return {}
    out: dict[str, dict[str, Check]] = {}
    for q, i, c in zip(*(items.column(n).to_pylist() for n in ("query_id", "id", "check"))):
        if c is not None:
            out.setdefault(q, {})[i] = Check.model_validate_json(c)
    return out


__all__ = ["load_tasks"]
