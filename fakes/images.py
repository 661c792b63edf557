"""Images in a request, as the real APIs read them, for the fakes: what they reject (a 400) and what they saw.

Anthropic: a user turn's content blocks ``{"type": "image", "source": {"type": "base64", "media_type", "data"}}``;
OpenAI-compatible: content parts ``{"type": "image_url", "image_url": {"url": "data:<media type>;base64,<data>"}}``
(or an http(s) URL, which the fakes, on loopback, cannot fetch and so refuse). The data must decode and its bytes
must be of the media type named, as both APIs check. Usage counts ``IMAGE_TOKENS`` input tokens per image.
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Any

MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff", "image/gif": b"GIF8", "image/webp": b"RIFF"}
IMAGE_TOKENS = 1000  # simulated input tokens of one image
_DATA_URI = re.compile(r"^data:(?P<mt>[\w/+.-]+);base64,(?P<data>.*)$", re.S)


def _decoded(media_type: Any, data: Any) -> tuple[bytes | None, str | None]:
    if media_type not in MAGIC:
        return None, f"image media type {media_type!r} is not supported ({', '.join(MAGIC)})"
    try:
        raw = base64.b64decode(str(data), validate=True)
    except (binascii.Error, ValueError):
        return None, "image data is not valid base64"
    if not raw.startswith(MAGIC[media_type]):
        return None, f"image data is not a {media_type} file"
    return raw, None


def _parts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for m in messages if isinstance(m.get("content"), list) for p in m["content"] if isinstance(p, dict)]


def request_images(body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """(media type, bytes) of every image in an Anthropic or OpenAI request body, in order (malformed: skipped)."""
    out = []
    for p in _parts(body.get("messages") or []):
        if p.get("type") == "image":
            src = p.get("source") or {}
            mt, data = src.get("media_type"), src.get("data")
        elif p.get("type") == "image_url":
            m = _DATA_URI.match(str((p.get("image_url") or {}).get("url", "")))
            mt, data = (m["mt"], m["data"]) if m else (None, None)
        else:
            continue
        raw, problem = _decoded(mt, data)
        if raw is not None:
            out.append((str(mt), raw))
    return out


def image_problem(body: dict[str, Any]) -> str | None:
    """Why the API would refuse the request's images (None: it would take them)."""
    for p in _parts(body.get("messages") or []):
        if p.get("type") == "image":
            src = p.get("source") or {}
            if src.get("type") != "base64":
                return "image source type must be base64"
            problem = _decoded(src.get("media_type"), src.get("data"))[1]
        elif p.get("type") == "image_url":
            m = _DATA_URI.match(str((p.get("image_url") or {}).get("url", "")))
            problem = "image_url must be a base64 data URI" if m is None else _decoded(m["mt"], m["data"])[1]
        else:
            continue
        if problem:
            return problem
    return None


def text_chars(content: Any) -> int:
    """Characters of text in a message's content (a string, or a list of parts)."""
    if isinstance(content, str):
        return len(content)
    return sum(len(p.get("text", "")) for p in content or [] if isinstance(p, dict))


def image_count(messages: list[dict[str, Any]]) -> int:
    return sum(p.get("type") in ("image", "image_url") for p in _parts(messages))
