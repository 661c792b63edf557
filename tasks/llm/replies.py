"""A reply as the provider contract reads it: the JSON object in a model's text (bare, fenced or the outermost
braces), validated against the request's output model; free-text outputs taken as they are; and the corrective
message the single retry shows the model (paper B.4)."""
from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from tasks.llm.cache import canonical_json


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_json(text: str) -> Any:
    """The JSON object in a reply: bare, or in a fenced block, or the outermost braces."""
    # strict=False: raw control characters inside strings are accepted; grammar engines (xgrammar)
    # emit them, and they harm nothing downstream.
    text = text.strip()
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        pass
    for m in _FENCE.finditer(text):
        try:
            return json.loads(m.group(1), strict=False)
        except json.JSONDecodeError:
            continue
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        return json.loads(text[start : end + 1], strict=False)
    raise json.JSONDecodeError("no JSON object in the reply", text, 0)


class TextOutput(BaseModel):
    """Output model for free-text replies (teacher answers, policy-style generations): the reply is
    taken as it is instead of being parsed as JSON. Subclass it to add validators."""

    text: str = Field(min_length=1)


def is_text_output(model: type[BaseModel]) -> bool:
    return isinstance(model, type) and issubclass(model, TextOutput)


def validate_reply(model: type[BaseModel], context: dict[str, Any] | None,
                   text: str) -> tuple[BaseModel | None, str | None]:
    """The reply as an instance of ``model`` (validated with ``context``), or None and what is wrong with it."""
    if is_text_output(model):
        try:
            return model.model_validate({"text": text}, context=context), None
        except ValidationError as e:
            return None, f"the reply is not usable: {e.errors()[0]['msg']}"
    try:
        data = parse_json(text)
    except json.JSONDecodeError as e:
        return None, f"the reply is not valid JSON ({e.msg} at position {e.pos})"
    try:
        return model.model_validate(data, context=context), None
    except ValidationError as e:
        msgs = "; ".join(f"{'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}" for err in e.errors()[:10])
        return None, f"the reply does not match the schema: {msgs}"


@lru_cache(maxsize=256)
def schema_json(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


@lru_cache(maxsize=256)
def schema_digest(model: type[BaseModel]) -> str:
    return hashlib.sha256(canonical_json(model.model_json_schema()).encode()).hexdigest()


def corrective_message(error: str, model: type[BaseModel]) -> str:
    if is_text_output(model):
        return f"Your previous reply could not be used: {error}. Reply again, following the instructions exactly."
    return (
        f"Your previous reply could not be used: {error}. Reply again with only one JSON object that "
        f"matches this JSON schema, with no text around it:\n{schema_json(model)}"
    )
