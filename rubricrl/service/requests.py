"""Reading one request of the reward service: bytes in, validated items out, or one 4xx that names the
field and the limit (the server keeps serving; nothing of the request is scored).

Order of the checks, cheapest first, so a 20 MB response or 10,000 items are refused before any of
them is validated: body size -> UTF-8 -> JSON -> ``items`` count -> each item's response length ->
each item's shape (``schemas.contracts.service.ScoreItem``) -> its task (inline, or its ``query_id`` against the
published rubric_items) -> its diagnosis against that task's rubric. Pure but for the task lookup.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ValidationError

from rubricrl.score_cmd import InputError, task_from_data
from schemas.config.service import ServiceConfig
from schemas.contracts.service import ScoreItem
from schemas.llm.diagnosis import Diagnosis
from schemas.rubric import Task


class RequestError(Exception):
    """A request the service refuses: HTTP ``status``, the offending ``field``, the ``limit`` when one applies."""

    def __init__(self, status: int, field: str, message: str, limit: str | None = None) -> None:
        super().__init__(f"{field}: {message}")
        self.status, self.field, self.message, self.limit = status, field, message, limit

    def body(self) -> dict[str, Any]:
        return {"error": {"status": self.status, "field": self.field, "limit": self.limit, "message": str(self)}}


class TaskLookup(Protocol):
    def get_many(self, query_ids: list[str]) -> dict[str, Task]: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class Job:
    """One validated item: what ``score_response`` and ``score_output`` need."""

    index: int
    task: Task
    response: str
    diagnosis: Diagnosis | None
    advantage: float | None
    observe: bool = False  # the answer also carries the observation and passed (ScoreItem.observe)


def body_limit(cfg: ServiceConfig) -> str:
    return f"{cfg.max_request_bytes} bytes (service.max_request_bytes)"


def decode_json(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RequestError(400, "body", f"not UTF-8 ({e.reason} at byte {e.start}); send the JSON encoded as "
                                        "UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RequestError(400, "body", f"not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}); send "
                                        '{"items": [{"query_id" or "task", "response"}, ...]}') from None


def item_list(data: Any, cfg: ServiceConfig) -> list[Any]:
    if not isinstance(data, dict) or "items" not in data:
        raise RequestError(422, "items", 'missing; send {"items": [{"query_id" or "task", "response"}, ...]}')
    extra = sorted(set(data) - {"items"})
    if extra:
        raise RequestError(422, extra[0], 'unknown field; a request has only "items"')
    items = data["items"]
    if not isinstance(items, list) or not items:
        raise RequestError(422, "items", "must be a non-empty list of items")
    if len(items) > cfg.max_items:
        raise RequestError(413, "items", f"{len(items)} items is over the limit; split the request",
                           f"{cfg.max_items} items (service.max_items)")
    return items


def check_item(i: int, data: Any, cfg: ServiceConfig) -> ScoreItem:
    where = f"items[{i}]"
    if not isinstance(data, dict):
        raise RequestError(422, where, "must be an object with \"query_id\" or \"task\", and \"response\"")
    response = data.get("response")
    if isinstance(response, str):
        if len(response) > cfg.max_response_chars:
            raise RequestError(413, f"{where}.response", f"{len(response)} characters is over the limit",
                               f"{cfg.max_response_chars} characters (service.max_response_chars)")
        try:
            response.encode("utf-8")
        except UnicodeEncodeError as e:
            raise RequestError(422, f"{where}.response", f"a lone surrogate at character {e.start}; send valid "
                                                         "Unicode text") from None
    try:
        return ScoreItem.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise RequestError(422, f"{where}.{loc}" if loc else where, err["msg"]) from None


def resolve_items(items: list[ScoreItem], tasks: TaskLookup, has_tokenizer: bool) -> list[Job]:
    """Tasks (inline or published), diagnoses and advantages checked; a bad one is a 422 naming it."""
    from tasks.env.judge_diagnosis import parse_diagnosis

    wanted = sorted({it.query_id for it in items if it.query_id is not None})
    published = tasks.get_many(wanted) if wanted else {}
    jobs = []
    for i, it in enumerate(items):
        where = f"items[{i}]"
        if it.query_id is not None:
            task = published.get(it.query_id)
            if task is None:
                raise RequestError(422, f"{where}.query_id", f"{it.query_id!r} is not a published query "
                                   f"({tasks.describe()}); send the item's \"task\" instead, or run "
                                   "`rubricrl run --only build-rubrics` for it")
        else:
            try:
                task = task_from_data(it.task, f"{where}.task")
            except InputError as e:
                raise RequestError(422, f"{where}.task", str(e)) from None
        diagnosis = None
        if it.diagnosis is not None:
            try:
                diagnosis, _ = parse_diagnosis(it.diagnosis, task.rubric)
            except ValueError as e:
                raise RequestError(422, f"{where}.diagnosis", str(e)) from None
        if it.advantage is not None and not has_tokenizer:
            raise RequestError(422, f"{where}.advantage", "token weights need the policy's tokenizer; start the "
                                                          "service with --set service.tokenizer=DIR, or leave out "
                                                          "advantage (findings carry character spans)")
        jobs.append(Job(i, task, it.response, diagnosis, it.advantage, it.observe))
    return jobs


def parse_request(data: Any, cfg: ServiceConfig, tasks: TaskLookup, has_tokenizer: bool) -> list[Job]:
    """A parsed request ``{"items": [...]}`` (the adapters' in-process route starts here), validated."""
    return resolve_items([check_item(i, d, cfg) for i, d in enumerate(item_list(data, cfg))], tasks, has_tokenizer)


def parse_score_request(raw: bytes, cfg: ServiceConfig, tasks: TaskLookup, has_tokenizer: bool) -> list[Job]:
    """A ``POST /score`` body, validated (the body size is checked while it is read: ``body_limit``)."""
    return parse_request(decode_json(raw), cfg, tasks, has_tokenizer)
