"""Claude through the official ``anthropic`` SDK: the Messages API for interactive calls and the
Message Batches API for bulk stages.

Prompt caching: the system text (the shared instruction prefix of a stage) carries
``cache_control``; so does the user message's shared head where the prompt marks one (the judge's
query and rubric, the same for a group's G responses: one call writes it, the others read it); a
corrective retry also marks the first user turn, so the retry re-reads the cached prefix. Cache
read/write tokens come back in ``usage`` and go to the ledger.
Retries are ours (``tasks/llm/retry.py``; the SDK's are off). The key is read from the environment
variable named by ``llm.api_key_env`` (default ``ANTHROPIC_API_KEY``), handed to the SDK and never
logged, stored or put in an error message.

Images (``LLMRequest.images``, e.g. screenshots for a multimodal judge) follow the first user turn's text as
base64 ``image`` content blocks.

Structured outputs (``tasks/llm/structured.py``): each structured call sends
``output_config.format`` (json_schema), the SDK's schema-constrained output.

Run against a local fake: ``AnthropicProvider(base_url="http://127.0.0.1:PORT")`` (see fakes/).
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterator

from schemas.config.llm import RetryConfig
from tasks.llm.base import LLMRequest, Provider, RawReply, Usage
from tasks.llm.batch import BatchItem, BatchOutcome
from tasks.llm.retry import SDKFaults
from tasks.llm.structured import StructuredOutputs, anthropic_output_config

DEFAULT_MODEL = "claude-opus-4-8"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_BASE_URL = "https://api.anthropic.com"


def message_params(model: str, request: LLMRequest, system: str, messages: list[dict[str, str]],
                   output_config: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Messages API body of one round trip (also the ``params`` of a batch request)."""
    turns: list[dict[str, Any]] = [dict(m) for m in messages]
    first = messages[0]["content"]
    head = request.template.render_shared_head(request.variables)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": head, "cache_control": {"type": "ephemeral"}},
                                    {"type": "text", "text": first[len(head):]}] \
        if head and first.startswith(head) else [{"type": "text", "text": first}]
    blocks += [{"type": "image", "source": {"type": "base64", "media_type": i.media_type, "data": i.b64()}}
               for i in request.images]
    if len(turns) > 1:  # corrective retry: cache the original prompt so the retry pays the read price
        blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    if len(blocks) > 1 or len(turns) > 1:
        turns[0] = {"role": "user", "content": blocks}
    # No temperature: the Messages API of the pinned SDK (anthropic 2.x) has none; models sample at
    # their default. ``request.temperature`` still enters the cache key.
    params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens, "messages": turns}
    if system:
        params["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
    if output_config is not None:
        params["output_config"] = output_config
    return params


def usage_of(u: Any) -> Usage:
    return Usage(input_tokens=getattr(u, "input_tokens", 0) or 0, output_tokens=getattr(u, "output_tokens", 0) or 0,
                 cache_read_tokens=getattr(u, "cache_read_input_tokens", 0) or 0,
                 cache_write_tokens=getattr(u, "cache_creation_input_tokens", 0) or 0)


def text_of(message: Any) -> str:
    return "".join(getattr(b, "text", "") for b in message.content)


class AnthropicProvider(StructuredOutputs, SDKFaults, Provider):
    name = "anthropic"

    def __init__(self, model: str = DEFAULT_MODEL, base_url: str | None = None, max_retries: int = 6,
                 timeout_s: float = 600.0, api_key_env: str = DEFAULT_KEY_ENV) -> None:
        self.model = model
        self.key_env = api_key_env
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        self.retry = RetryConfig(max_retries=max_retries, timeout_s=timeout_s)
        self._reconnect()

    def _reconnect(self) -> None:
        import anthropic

        self._key = os.environ.get(self.key_env, "")
        if not self._key:
            raise ValueError(f"provider 'anthropic' needs {self.key_env} in the environment; set it, or set "
                             "llm.provider to 'offline' to run without a key")
        self._sdk = anthropic
        self._client = anthropic.Anthropic(api_key=self._key, base_url=self.base_url, max_retries=0,
                                           timeout=self.retry.timeout_s)

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "[redacted]") if self._key else text


    def _call(self, request: LLMRequest, system: str, messages: list[dict[str, str]]) -> RawReply:
        try:
            msg = self._client.messages.create(**message_params(self.model, request, system, messages,
                                                                self.output_config(request)))
        except Exception as e:
            raise self._guard(e) from None
        return RawReply(text_of(msg), usage_of(msg.usage))

    def output_config(self, request: LLMRequest) -> dict[str, Any] | None:
        return anthropic_output_config(self.request_schema(request))

    def batch_backend(self) -> "AnthropicBatches":
        return AnthropicBatches(self)


class AnthropicBatches:
    """Message Batches: submit, poll, stream results (out of order; matched by custom_id = cache key)."""

    def __init__(self, provider: AnthropicProvider) -> None:
        self.provider = provider
        self.client = provider._client

    def request_body(self, item: BatchItem) -> dict[str, Any]:
        return {"custom_id": item.key,
                "params": message_params(self.provider.model, item.request, item.system, item.messages,
                                         self.provider.output_config(item.request))}

    def item_bytes(self, item: BatchItem) -> int:
        return len(json.dumps(self.request_body(item)).encode())

    def _do(self, fn: Any) -> Any:
        return self.provider.call_guarded(fn)

    def submit(self, items: list[BatchItem]) -> str:
        bodies = [self.request_body(i) for i in items]
        return self._do(lambda: self.client.messages.batches.create(requests=bodies)).id

    def ended(self, batch_id: str) -> bool:
        return self._do(lambda: self.client.messages.batches.retrieve(batch_id)).processing_status == "ended"

    def results(self, batch_id: str) -> Iterator[BatchOutcome]:
        for r in self._do(lambda: list(self.client.messages.batches.results(batch_id))):
            res = r.result
            if res.type == "succeeded":
                yield BatchOutcome(r.custom_id, RawReply(text_of(res.message), usage_of(res.message.usage)), None)
            elif res.type == "errored":
                yield BatchOutcome(r.custom_id, None, f"errored: {self.provider._redact(str(res.error))[:300]}")
            else:
                yield BatchOutcome(r.custom_id, None, res.type)
