"""The JSON schema a structured LLM call sends to the provider, derived from the pydantic model the
reply is validated against (one owner: the model in ``schemas/``).

``request_schema(model, context)`` is what providers send (OpenAI-compatible ``response_format``
json_schema strict, Anthropic ``output_config.format``). It is the model's own JSON schema, tightened
where the model's validators look at the validation context: a model may define the classmethod
``llm_json_schema(context) -> dict`` (e.g. the judge names only rubric ids that exist), else
``model_json_schema()`` is used. Then it is made *strict* the way OpenAI's strict mode requires:
every object closed (``additionalProperties: false``) with every property required, and no
``default`` keywords. Optional fields stay optional in meaning: they are nullable or may be empty.

What a grammar cannot say (unique ids, a minimum of 20 characters the server ignores...) stays with
pydantic and the LLM layer's single corrective retry.

Pure functions; nothing here imports the rest of the project.
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any, Iterable, Mapping

from pydantic import BaseModel

# Where a model's validators check ids against the validation context: (definition, field) -> context key.
# The definition is a ``$defs`` name, or "" for the model itself.
IdFields = Mapping[tuple[str, str], str]


@lru_cache(maxsize=256)
def _base_schema_json(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def base_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A fresh copy of the model's JSON schema (callers may edit it)."""
    return json.loads(_base_schema_json(model))


def strict(schema: Any) -> Any:
    """OpenAI strict-mode form of a JSON schema: closed objects, all properties required, no defaults."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items() if k != "default"}
    if "properties" in schema:
        out["properties"] = {k: strict(v) for k, v in schema["properties"].items()}
    if out.get("type") == "object" or "properties" in out:
        out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    if "$defs" in schema:
        out["$defs"] = {k: strict(v) for k, v in schema["$defs"].items()}
    return out


def request_schema(model: type[BaseModel], context: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The strict JSON schema to send for one call of ``model`` with its validation ``context``."""
    hook = getattr(model, "llm_json_schema", None)
    schema = hook(context or {}) if callable(hook) else base_schema(model)
    return strict(schema)


def _node(schema: dict[str, Any], definition: str) -> dict[str, Any]:
    return schema["$defs"][definition] if definition else schema


def _restrict_string(prop: dict[str, Any], allowed: list[str]) -> dict[str, Any]:
    if prop.get("type") == "array":
        items = dict(prop.get("items") or {"type": "string"})
        if not allowed:  # nothing may be named: the list must stay empty
            return {**prop, "maxItems": 0, "items": items}
        return {**prop, "items": {**items, "enum": allowed}}
    if not allowed:
        return prop
    return {**prop, "enum": allowed}


def with_known_ids(schema: dict[str, Any], context: Mapping[str, Any], fields: IdFields) -> dict[str, Any]:
    """``schema`` with each listed string (or list-of-strings) field limited to the ids in ``context``.

    A field whose context key is absent keeps its free form (no context, no check, as in pydantic).
    """
    out = copy.deepcopy(schema)
    for (definition, field), key in fields.items():
        known: Iterable[str] | None = context.get(key)
        if known is None:
            continue
        props = _node(out, definition)["properties"]
        props[field] = _restrict_string(props[field], sorted(known))
    return out


def bounded(schema: Any, max_string_chars: int | None = None, max_items: int | None = None) -> Any:
    """``schema`` with every free string at most ``max_string_chars`` long and every list at most
    ``max_items`` long (None: unbounded). Strings already fixed by an enum, a const or a pattern keep
    their form; a list's ``minItems`` wins over a smaller bound."""
    if max_string_chars is None and max_items is None:
        return schema
    if isinstance(schema, list):
        return [bounded(s, max_string_chars, max_items) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: bounded(v, max_string_chars, max_items) if isinstance(v, (dict, list)) else v for k, v in schema.items()}
    if "properties" in schema:
        out["properties"] = {k: bounded(v, max_string_chars, max_items) for k, v in schema["properties"].items()}
    if "$defs" in schema:
        out["$defs"] = {k: bounded(v, max_string_chars, max_items) for k, v in schema["$defs"].items()}
    free = not any(k in schema for k in ("enum", "const", "pattern"))
    if max_string_chars is not None and schema.get("type") == "string" and free:
        out["maxLength"] = max(min(schema.get("maxLength", max_string_chars), max_string_chars),
                               schema.get("minLength", 0))
    if max_items is not None and schema.get("type") == "array":
        out["maxItems"] = max(min(schema.get("maxItems", max_items), max_items), schema.get("minItems", 0))
    return out
