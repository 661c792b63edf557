"""What the real APIs check in a structured-output request, for the fakes: a malformed schema is a 400.

OpenAI strict mode (``response_format`` json_schema): a name of ``[A-Za-z0-9_-]{1,64}``, ``strict``
true, a valid JSON schema whose every object is closed (``additionalProperties: false``) and lists
every property in ``required``, no ``default``. Anthropic (``output_config.format``): type
``json_schema`` and a valid JSON schema with closed objects.
"""
from __future__ import annotations

import re
from typing import Any

import jsonschema

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _objects(schema: Any, where: str = "#"):
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            yield where, schema
        for k, v in schema.items():
            if k == "properties" and isinstance(v, dict):
                for name, sub in v.items():
                    yield from _objects(sub, f"{where}/properties/{name}")
            elif k == "$defs" and isinstance(v, dict):
                for name, sub in v.items():
                    yield from _objects(sub, f"{where}/$defs/{name}")
            elif isinstance(v, (dict, list)):
                yield from _objects(v, f"{where}/{k}")
    elif isinstance(schema, list):
        for i, s in enumerate(schema):
            yield from _objects(s, f"{where}/{i}")


def _has_default(schema: Any) -> bool:
    if isinstance(schema, list):
        return any(_has_default(s) for s in schema)
    if not isinstance(schema, dict):
        return False
    if "default" in schema:
        return True
    maps = [schema.get(k) or {} for k in ("properties", "$defs")]
    return (any(_has_default(v) for k, v in schema.items() if k not in ("properties", "$defs"))
            or any(_has_default(v) for m in maps for v in m.values()))


def _closed(schema: dict[str, Any], *, all_required: bool) -> str | None:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        return f"invalid JSON schema: {e.message}"
    for where, obj in _objects(schema):
        if obj.get("additionalProperties") is not False:
            return f"{where}: additionalProperties must be false"
        if all_required and sorted(obj.get("required", [])) != sorted(obj.get("properties", {})):
            return f"{where}: every property must be required in strict mode"
    return None


def openai_format_problem(fmt: Any) -> str | None:
    """None when ``response_format`` is absent, json_object, or a well-formed strict json_schema."""
    if fmt is None or fmt == {"type": "json_object"}:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return f"response_format type must be json_schema or json_object, got {fmt!r:.80}"
    js = fmt.get("json_schema") or {}
    if not _NAME.match(str(js.get("name", ""))):
        return "json_schema.name must match [A-Za-z0-9_-]{1,64}"
    if js.get("strict") is not True or not isinstance(js.get("schema"), dict):
        return "json_schema needs strict: true and a schema object"
    if _has_default(js["schema"]):
        return "strict schemas may not use 'default'"
    return _closed(js["schema"], all_required=True)


def anthropic_format_problem(output_config: Any) -> str | None:
    if output_config is None:
        return None
    fmt = (output_config or {}).get("format") if isinstance(output_config, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict):
        return "output_config.format must be {type: json_schema, schema: {...}}"
    return _closed(fmt["schema"], all_required=False)


def openai_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None


def anthropic_schema(params: dict[str, Any]) -> dict[str, Any] | None:
    return ((params.get("output_config") or {}).get("format") or {}).get("schema")
