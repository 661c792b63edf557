"""ArtifactsBench's protocol: a multimodal judge scores one answer against the task's checklist from the answer's
source and screenshots of its page running (Tencent-Hunyuan/ArtifactsBenchmark, ``src/infer_gemini.py``).

The benchmark's judge prompt has this structure: the reviewer's role and standard, a note on the screenshots,
the scoring checklist, the reply format (a JSON object with ``"Overall Score"``), the question, the answer. Ours
(``tasks/prompts/checklist_judge.md``) is our own text of that structure. It goes through our LLM layer with the
screenshots as images (Claude: image content blocks; OpenAI-compatible: image_url parts), so it is cached (the
images' digests in the key), ledgered and budgeted like every call; a reply without a usable score gets the one
corrective retry, then the score is missing (the benchmark itself retries up to four times).

Where it departs from the benchmark: the screenshots are the two the browser check already keeps for evaluate
(after load, after our interaction probe: ``tasks/env/shots.py`` ``ScreenshotSpec``), of the page our
environment extracted, at the viewport (1280 x 800), where the benchmark takes three full-page ones one second
apart of the last ``<html>`` block; the answer is cut at ``evaluation.official.judge_max_answer_chars``
characters where the benchmark cuts its prompt at 27,000 tokens of its judge's tokenizer.

Run: ``provider.complete(judge_request(query, response, checklist, images, key=...))`` then ``checklist_score``.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from tasks.llm.base import ImageInput, LLMRequest, LLMResult

PROMPT = "checklist_judge"
STAGE = "official_judge"  # ledger stage of the benchmark judge's calls
THINK_END = "</think>"  # the benchmark judges only what follows a reasoning model's thoughts


class ChecklistScore(BaseModel):
    """The judge's reply: the points it awards over the whole checklist, and why."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")
    overall_score: float = Field(alias="Overall Score", description="Points over every checklist dimension")
    reason: str = Field("", description="Which dimensions lost points, and why")

    @field_validator("overall_score")
    @classmethod
    def _in_range(cls, v: float, info: ValidationInfo) -> float:
        top = float((info.context or {}).get("max_total", 100.0))
        if not 0.0 <= v <= top:
            raise ValueError(f"Overall Score must be between 0 and {top:g} (the checklist's total), got {v:g}")
        return v


def max_total(checklist: list[dict[str, Any]]) -> float:
    return float(sum(c["max_score"] for c in checklist))


def render_checklist(checklist: list[dict[str, Any]]) -> str:
    return "\n".join(f"{k}. [{c['max_score']:g} points] {c['title']}\n   {c['description']}".rstrip()
                     for k, c in enumerate(checklist, start=1))


def judged_answer(response: str, max_chars: int) -> str:
    """The part of a response the judge reads: after a reasoning model's thoughts, cut at ``max_chars``."""
    text = response.split(THINK_END)[-1].strip()
    return text if len(text) <= max_chars else text[:max_chars] + "\n[... answer cut here ...]"


def judge_request(question: str, response: str, checklist: list[dict[str, Any]], images: list[ImageInput], *,
                  key: str, max_answer_chars: int, max_tokens: int) -> LLMRequest:
    """The judge call for one app; no offline rule (a multimodal judge needs a model: offline, no score)."""
    if not checklist:
        raise ValueError(f"{key}: no checklist to judge against; ingest the benchmark's lite file (its lines carry "
                         "a 'checklist')")
    top = max_total(checklist)
    return LLMRequest(stage=STAGE, key=key, prompt=PROMPT, output_model=ChecklistScore,
                      variables={"checklist": render_checklist(checklist), "question": question,
                                 "answer": judged_answer(response, max_answer_chars), "max_total": f"{top:g}"},
                      validation_context={"max_total": top}, max_tokens=max_tokens, images=tuple(images))


def checklist_score(result: LLMResult, checklist: list[dict[str, Any]]) -> tuple[float | None, list[dict[str, Any]],
                                                                                  str | None]:
    """(score in [0, 1]: the overall score over the checklist's total, detail row, note); None when the judge
    gave no usable score (the reason in the note)."""
    if result.output is None:
        return None, [], f"the benchmark's judge gave no score ({result.status}): {result.error}"
    out: ChecklistScore = result.output  # type: ignore[assignment]
    top = max_total(checklist)
    detail = [{"name": "Overall Score", "passed": None, "status": "scored", "score": out.overall_score,
               "note": out.reason[:1000] or None}]
    return out.overall_score / top, detail, f"judge {result.provider}/{result.model}"
