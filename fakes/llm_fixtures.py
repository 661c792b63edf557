"""Shared pieces for LLM wire tests and benches: a tiny prompt, its output model, a reply function
that answers it correctly, and request builders."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationInfo, model_validator

from tasks.llm.base import LLMRequest

PROMPT_DIR = str(Path(__file__).resolve().parent / "prompts")
_N = re.compile(r"n=(\d+)")


class Answer(BaseModel):
    answer: str
    n: int


def last_user_text(body: dict[str, Any]) -> str:
    """The first user turn's text from an Anthropic or OpenAI request body."""
    for m in body["messages"]:
        if m["role"] == "user":
            c = m["content"]
            return c if isinstance(c, str) else "".join(b.get("text", "") for b in c)
    return ""


def echo_reply(body: dict[str, Any]) -> str:
    m = _N.search(last_user_text(body))
    return json.dumps({"answer": "ok", "n": int(m.group(1)) if m else -1})


def offline_rule(v: dict[str, Any]) -> dict[str, Any]:
    return {"answer": "offline", "n": int(v["n"])}


def request(i: int, stage: str = "test_stage", **kw: Any) -> LLMRequest:
    return LLMRequest(stage=stage, key=f"row-{i}", prompt="echo", variables={"item": f"item-{i}", "n": i},
                      output_model=Answer, offline_rule=offline_rule, prompt_dir=PROMPT_DIR, max_tokens=256, **kw)


class AnswerInSet(BaseModel):
    """Like ``Answer``, but ``n`` must be one of the validation context's ``valid_ids`` (the paper's
    "invalid rubric identifiers" case)."""

    answer: str
    n: int

    @model_validator(mode="after")
    def _known(self, info: ValidationInfo) -> "AnswerInSet":
        valid = (info.context or {}).get("valid_ids")
        if valid is not None and self.n not in valid:
            raise ValueError(f"unknown id {self.n}; use one of {sorted(valid)}")
        return self
