"""SFT data (paper D.1): teacher answers to the expanded queries, gated by the environment.

Every answer is checked by the environment's gates (format, source, runtime; the LLM judge only when
asked); a failed gate keeps the row but marks it rejected, and the export leaves it out. The export
is chat format (``messages`` with system/user/assistant), which ``datasets.load_dataset("parquet")``
and TRL's SFT trainer read as is.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from schemas.config.env import EnvConfig
from schemas.contracts.sft import SFT_ANSWERS_SCHEMA
from schemas.llm.diagnosis import Diagnosis, Layer
from schemas.rubric import Task
from tasks.env.score import ScoreInput, score_batch
from tasks.llm.base import LLMRequest, Provider
from tasks.llm.replies import TextOutput
from tasks.llm.prompts import load_prompt
from tasks.sft.teacher import GENERATION_PROMPT, offline_teacher_answer

STAGE = "sft_answers"


def _no_findings() -> Diagnosis:
    """Gates from our own evidence only: an empty diagnosis means no LLM judge is called."""
    return Diagnosis(static_check=Layer(name="static_check"), code_simulation=Layer(name="code_simulation"),
                     rubric_alignment=Layer(name="rubric_alignment"))


def teacher_request(task: Task, teacher: str, max_tokens: int, temperature: float) -> LLMRequest:
    return LLMRequest(stage=STAGE, key=f"{task.query_id}:{teacher}", prompt=GENERATION_PROMPT,
                      variables={"query": task.query, "task_json": task.model_dump_json()},
                      output_model=TextOutput, max_tokens=max_tokens, temperature=temperature,
                      offline_rule=lambda v: {"text": offline_teacher_answer(Task.model_validate_json(v["task_json"]))})


def reject_reason(res: dict[str, Any] | None, judged: bool) -> str | None:
    if res is None:
        return "missing"
    if not res["format_valid"]:
        return "format_invalid"
    if res["source_valid"] is False:
        return "source_invalid"
    if res["runtime_valid"] is False:
        return "runtime_invalid"
    if judged and res["reward"] is None:
        return "judge_failed"
    return None


def answer_chunk(tasks: list[Task], meta: dict[str, dict[str, Any]], teachers: dict[str, Provider], *,
                 env: EnvConfig, judge: Provider | None, max_tokens: int, temperature: float,
                 concurrency: int) -> pa.Table:
    """Teacher answers for ``tasks`` from every teacher, scored by the gates."""
    system = load_prompt(GENERATION_PROMPT).system
    version = load_prompt(GENERATION_PROMPT).version
    rows = []
    for teacher, provider in teachers.items():
        reqs = [teacher_request(t, teacher, max_tokens, temperature) for t in tasks]
        results = provider.complete_bulk(reqs, concurrency=concurrency)
        inputs = [ScoreInput(f"{t.query_id}:{teacher}", t, r.output.text, None if judge else _no_findings())
                  for t, r in zip(tasks, results) if r.output is not None]
        scored = {s.key: s.to_json() for s in score_batch(inputs, provider=judge, cfg=env)} if inputs else {}
        for t, r in zip(tasks, results):
            key = f"{t.query_id}:{teacher}"
            res = scored.get(key)
            reason = reject_reason(res, judge is not None)
            text = r.output.text if r.output is not None else None
            m = meta.get(t.query_id, {})
            rows.append({
                "answer_id": key, "query_id": t.query_id, "teacher": teacher, "provider": r.provider,
                "prompt_version": version,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": t.query},
                             {"role": "assistant", "content": text or ""}],
                "response": text, "error": r.error,
                "format_valid": res["format_valid"] if res else None,
                "source_valid": res["source_valid"] if res else None,
                "runtime_valid": res["runtime_valid"] if res else None,
                "reward": res["reward"] if res and judge is not None else None,
                "rejected": reason is not None, "reject_reason": reason,
                "difficulty": m.get("difficulty"), "domain": m.get("domain"), "category_ids": m.get("category_ids") or [],
            })
    return pa.Table.from_pylist(rows, schema=SFT_ANSWERS_SCHEMA)


def rejection_rates(table: pa.Table) -> dict[str, dict[str, tuple[int, int]]]:
    """by -> value -> (rejected, total) for teacher, category and difficulty."""
    out: dict[str, dict[str, list[int]]] = {"teacher": defaultdict(lambda: [0, 0]), "category": defaultdict(lambda: [0, 0]),
                                             "difficulty": defaultdict(lambda: [0, 0])}
    for r in table.select(["teacher", "category_ids", "difficulty", "rejected"]).to_pylist():
        keys = [("teacher", r["teacher"]), ("difficulty", r["difficulty"] or "(none)")]
        keys += [("category", c) for c in (r["category_ids"] or ["(none)"])]
        for by, v in keys:
            out[by][v][0] += int(bool(r["rejected"]))
            out[by][v][1] += 1
    return {by: {k: (v[0], v[1]) for k, v in d.items()} for by, d in out.items()}


def export_chat(table: pa.Table, path: Path) -> Path:
    """Accepted answers as chat-format Parquet (``messages`` + provenance)."""
    keep = table.filter(pc.invert(table.column("rejected")))
    keep = keep.select(["messages", "query_id", "teacher", "prompt_version", "answer_id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(keep, tmp)
    tmp.replace(path)
    return path
