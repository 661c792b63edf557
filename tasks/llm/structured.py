"""Structured outputs: every structured call sends its JSON schema, so a server that enforces it
(vLLM's grammar-guided decoding, OpenAI strict mode, Claude's structured outputs) cannot answer
with JSON the pipeline would reject.

The schema comes from the pydantic model the call is validated against (``schemas/llm/json_schema.py``,
tightened by the validation context), optionally bounded (``llm.schema_max_string_chars``,
``llm.schema_max_items``) so a weak model that loops inside a string or a list still closes the
object before ``max_tokens``. Free-text calls (``TextOutput``) send nothing. The corrective retry
stays for what a server does not enforce (unique ids, minimum lengths...).

Wire forms (pure functions, shared by interactive calls and batch lines):
- OpenAI-compatible: ``response_format = {"type": "json_schema", "json_schema": {"name", "schema",
  "strict": true}}``; with structured outputs off, ``json_mode`` still asks for ``json_object``.
- Anthropic (SDK 2.14): ``output_config = {"format": {"type": "json_schema", "schema": ...}}``, the
  schema passed through the SDK's own ``transform_schema`` (it moves keywords the API does not
  enforce into the description).

The schema sent enters the cache key (``StructuredOutputs.trip_key``): a reply obtained without the
grammar is never served for a call with it, and the other way round.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

from schemas.llm.json_schema import bounded, request_schema
from tasks.llm.base import LLMRequest
from tasks.llm.replies import is_text_output
from tasks.llm.cache import canonical_json

_NAME = re.compile(r"[^A-Za-z0-9_-]")


def sent_schema(request: LLMRequest, max_string_chars: int | None = None,
                max_items: int | None = None) -> dict[str, Any] | None:
    """The JSON schema one request sends, or None for a free-text call."""
    if is_text_output(request.output_model):
        return None
    return bounded(request_schema(request.output_model, request.validation_context), max_string_chars, max_items)


def schema_name(request: LLMRequest) -> str:
    """OpenAI wants ``[A-Za-z0-9_-]{1,64}``."""
    return _NAME.sub("_", request.output_model.__name__)[:64] or "output"


def openai_response_format(request: LLMRequest, schema: dict[str, Any] | None,
                           json_mode: bool) -> dict[str, Any] | None:
    if schema is not None:
        return {"type": "json_schema", "json_schema": {"name": schema_name(request), "schema": schema, "strict": True}}
    if json_mode and not is_text_output(request.output_model):
        return {"type": "json_object"}
    return None


def anthropic_output_config(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    from anthropic import transform_schema

    return {"format": {"type": "json_schema", "schema": transform_schema(schema)}}


class StructuredOutputs:
    """Provider mixin: which schema a request sends, and a cache key that covers it."""

    structured_outputs: bool = True
    schema_max_string_chars: int | None = None
    schema_max_items: int | None = None

    def set_structured(self, enabled: bool, max_string_chars: int | None = None,
                       max_items: int | None = None) -> None:
        self.structured_outputs = enabled
        self.schema_max_string_chars = max_string_chars
        self.schema_max_items = max_items

    def request_schema(self, request: LLMRequest) -> dict[str, Any] | None:
        if not self.structured_outputs:
            return None
        return sent_schema(request, self.schema_max_string_chars, self.schema_max_items)

    def trip_key(self, request: LLMRequest, system: str, messages: list[dict[str, str]]) -> str:
        key = super().trip_key(request, system, messages)  # type: ignore[misc]
        schema = self.request_schema(request)
        if schema is None:  # same key as before structured outputs existed: old caches stay valid
            return key
        return hashlib.sha256(f"{key}:{canonical_json(schema)}".encode()).hexdigest()
