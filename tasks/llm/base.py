"""The provider contract: a request names its prompt, variables and output model; the result is a
validated pydantic object, or ``None`` with the reason (never a crash, never a made-up answer).

Every provider shares ``Provider.complete``: render, call, parse JSON, validate with the request's
context, and on failure exactly one corrective retry that shows the model its error (paper B.4).
"""
from __future__ import annotations

import json
import re
import time
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from tasks.llm.prompts import PromptTemplate, load_prompt

OfflineRule = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class LLMRequest:
    """One structured call. ``key`` is the row's stable id (batch custom_id, ledger row)."""

    stage: str
    key: str
    prompt: str
    variables: dict[str, Any]
    output_model: type[BaseModel]
    offline_rule: OfflineRule | None = None
    validation_context: dict[str, Any] | None = None
    max_tokens: int = 4096
    temperature: float = 0.0

    @property
    def template(self) -> PromptTemplate:
        return load_prompt(self.prompt)


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, other: "Usage") -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens


@dataclass
class LLMResult:
    key: str
    provider: str
    model: str
    output: BaseModel | None
    error: str | None = None
    attempts: int = 1
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.output is not None


@dataclass
class RawReply:
    text: str
    usage: Usage = field(default_factory=Usage)


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_json(text: str) -> Any:
    """The JSON object in a reply: bare, or in a fenced block, or the outermost braces."""
    text = text.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for m in _FENCE.finditer(text):
        try:
            return json.loads(m.group(1))
        except json.JSONDecodeError:
            continue
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        return json.loads(text[start : end + 1])
    raise json.JSONDecodeError("no JSON object in the reply", text, 0)


def validate_reply(request: LLMRequest, text: str) -> tuple[BaseModel | None, str | None]:
    try:
        data = parse_json(text)
    except json.JSONDecodeError as e:
        return None, f"the reply is not valid JSON ({e.msg} at position {e.pos})"
    try:
        return request.output_model.model_validate(data, context=request.validation_context), None
    except ValidationError as e:
        msgs = "; ".join(f"{'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}" for err in e.errors()[:10])
        return None, f"the reply does not match the schema: {msgs}"


def corrective_message(error: str, model: type[BaseModel]) -> str:
    return (
        f"Your previous reply could not be used: {error}. Reply again with only one JSON object that "
        f"matches this JSON schema, with no text around it:\n{json.dumps(model.model_json_schema())}"
    )


class Provider(ABC):
    """Subclasses implement ``_call``; ``complete`` adds validation and the single corrective retry."""

    name: str = "base"
    model: str = ""

    @abstractmethod
    def _call(self, request: LLMRequest, system: str, messages: list[dict[str, str]]) -> RawReply:
        """One round trip. Raise on transport errors; return the raw text otherwise."""

    def complete(self, request: LLMRequest) -> LLMResult:
        system, user = request.template.render(request.variables)
        messages = [{"role": "user", "content": user}]
        usage, started = Usage(), time.perf_counter()
        error: str | None = None
        for attempt in (1, 2):
            try:
                reply = self._call(request, system, messages)
            except Exception as e:  # transport failures after the provider's own retries
                return LLMResult(request.key, self.name, self.model, None, f"call failed: {type(e).__name__}: {e}",
                                 attempt, usage, time.perf_counter() - started)
            usage.add(reply.usage)
            output, error = validate_reply(request, reply.text)
            if output is not None:
                return LLMResult(request.key, self.name, self.model, output, None, attempt, usage,
                                 time.perf_counter() - started)
            messages = messages + [
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": corrective_message(error or "", request.output_model)},
            ]
        return LLMResult(request.key, self.name, self.model, None, f"missing after one corrective retry: {error}", 2,
                         usage, time.perf_counter() - started)

    def complete_many(self, requests: list[LLMRequest], concurrency: int = 8) -> list[LLMResult]:
        """Bounded-concurrency fan-out; results in request order."""
        if concurrency <= 1 or len(requests) <= 1:
            return [self.complete(r) for r in requests]
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            return list(pool.map(self.complete, requests))
