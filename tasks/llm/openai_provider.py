"""Any OpenAI-compatible chat-completions endpoint (OpenAI itself, or a vLLM server with an open judge
model on a GPU box) through the official ``openai`` SDK, with the same cache, ledger, retries and
corrective retry as the other providers (all in ``Provider.complete``).

Usage mapping: OpenAI counts cached prompt tokens inside ``prompt_tokens``; the ledger's
``input_tokens`` are the uncached ones (``prompt_tokens - cached_tokens``) and ``cache_read_tokens``
the cached ones, so one price formula serves every provider. OpenAI caches prefixes automatically
(no cache_control); there are no cache-write tokens.

Message batches: the OpenAI Batch API (JSONL file upload, ``/v1/batches``, output/error files) is
used by ``complete_bulk`` when ``batches=True`` (OpenAI itself); a vLLM server has no batch API,
so the default for a custom ``base_url`` is off and bulk stages use bounded concurrency.

Images (``LLMRequest.images``) follow the first user turn's text as ``image_url`` parts holding data URIs
(the form vLLM's multimodal models accept as well).

Structured outputs (``tasks/llm/structured.py``): each structured call sends ``response_format``
json_schema strict with the schema of its output model; ``json_mode`` (``json_object``) is the
fallback when structured outputs are switched off.

Run: ``OpenAIProvider(model="Qwen/Qwen3-8B", base_url="http://gpu-box:8000/v1")``.
"""
from __future__ import annotations

import io
import json
import os
from typing import Any, Iterator

from schemas.config.llm import RetryConfig
from tasks.llm.base import LLMRequest, Provider, RawReply, Usage
from tasks.llm.batch import BatchItem, BatchOutcome
from tasks.llm.retry import SDKFaults
from tasks.llm.structured import StructuredOutputs, openai_response_format

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# A self-hosted server usually ignores the key; the SDK still needs a non-empty one.
PLACEHOLDER_KEY = "not-needed"


def chat_params(model: str, request: LLMRequest, system: str, messages: list[dict[str, str]],
                response_format: dict[str, Any] | None) -> dict[str, Any]:
    turns: list[dict[str, Any]] = [dict(m) for m in messages]
    if request.images:  # after the first user turn's text, as image_url parts with data URIs
        turns[0] = {"role": "user", "content": [{"type": "text", "text": messages[0]["content"]}] + [
            {"type": "image_url", "image_url": {"url": f"data:{i.media_type};base64,{i.b64()}"}}
            for i in request.images]}
    turns = ([{"role": "system", "content": system}] if system else []) + turns
    params: dict[str, Any] = {"model": model, "messages": turns, "max_tokens": request.max_tokens,
                              "temperature": request.temperature}
    if response_format is not None:
        params["response_format"] = response_format
    return params


def usage_of(u: Any) -> Usage:
    if u is None:
        return Usage()
    details = getattr(u, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    prompt = getattr(u, "prompt_tokens", 0) or 0
    return Usage(input_tokens=max(0, prompt - cached), output_tokens=getattr(u, "completion_tokens", 0) or 0,
                 cache_read_tokens=cached)


def usage_from_dict(u: dict[str, Any] | None) -> Usage:
    u = u or {}
    cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0) or 0
    return Usage(input_tokens=max(0, (u.get("prompt_tokens") or 0) - cached),
                 output_tokens=u.get("completion_tokens") or 0, cache_read_tokens=cached)


class OpenAIProvider(StructuredOutputs, SDKFaults, Provider):
    name = "openai"

    def __init__(self, model: str | None = None, base_url: str | None = None, max_retries: int = 6,
                 timeout_s: float = 600.0, api_key_env: str = DEFAULT_KEY_ENV, json_mode: bool = False,
                 batches: bool | None = None) -> None:
        if not model:
            raise ValueError("provider 'openai' needs llm.model: the model name the endpoint serves "
                             "(e.g. the --served-model-name of a vLLM server)")
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.model = model
        self.key_env = api_key_env
        self.json_mode = json_mode
        self.batches = (self.base_url == DEFAULT_BASE_URL) if batches is None else batches
        self.retry = RetryConfig(max_retries=max_retries, timeout_s=timeout_s)
        self._reconnect()

    def _reconnect(self) -> None:
        import openai

        self._key = os.environ.get(self.key_env, "")
        if not self._key:
            if self.base_url == DEFAULT_BASE_URL:
                raise ValueError(f"provider 'openai' needs {self.key_env} in the environment for {DEFAULT_BASE_URL}; "
                                 "set it, or set llm.base_url to your own OpenAI-compatible server")
            self._key = PLACEHOLDER_KEY
        self._sdk = openai
        self._client = openai.OpenAI(api_key=self._key, base_url=self.base_url, max_retries=0,
                                     timeout=self.retry.timeout_s)

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "[redacted]") if self._key and self._key != PLACEHOLDER_KEY else text


    def _call(self, request: LLMRequest, system: str, messages: list[dict[str, str]]) -> RawReply:
        try:
            resp = self._client.chat.completions.create(
                **chat_params(self.model, request, system, messages, self.response_format(request)))
        except Exception as e:
            raise self._guard(e) from None
        text = resp.choices[0].message.content or "" if resp.choices else ""
        return RawReply(text, usage_of(resp.usage))

    def response_format(self, request: LLMRequest) -> dict[str, Any] | None:
        return openai_response_format(request, self.request_schema(request), self.json_mode)

    def batch_backend(self) -> "OpenAIBatches | None":
        return OpenAIBatches(self) if self.batches else None


class OpenAIBatches:
    """The OpenAI Batch API: upload a JSONL of chat requests, create a batch, poll, read output/error files."""

    def __init__(self, provider: OpenAIProvider) -> None:
        self.provider = provider
        self.client = provider._client

    def line(self, item: BatchItem) -> dict[str, Any]:
        p = self.provider
        return {"custom_id": item.key, "method": "POST", "url": "/v1/chat/completions",
                "body": chat_params(p.model, item.request, item.system, item.messages, p.response_format(item.request))}

    def item_bytes(self, item: BatchItem) -> int:
        return len(json.dumps(self.line(item)).encode()) + 1

    def _do(self, fn: Any) -> Any:
        return self.provider.call_guarded(fn)

    def submit(self, items: list[BatchItem]) -> str:
        data = "".join(json.dumps(self.line(i)) + "\n" for i in items).encode()
        f = self._do(lambda: self.client.files.create(file=("batch.jsonl", io.BytesIO(data)), purpose="batch"))
        batch = self._do(lambda: self.client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                                            completion_window="24h"))
        return batch.id

    def ended(self, batch_id: str) -> bool:
        status = self._do(lambda: self.client.batches.retrieve(batch_id)).status
        return status in ("completed", "failed", "expired", "cancelled")

    def results(self, batch_id: str) -> Iterator[BatchOutcome]:
        batch = self._do(lambda: self.client.batches.retrieve(batch_id))
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            text = self._do(lambda: self.client.files.content(file_id).text)
            for raw in text.splitlines():
                if not raw.strip():
                    continue
                row = json.loads(raw)
                resp = row.get("response") or {}
                body = resp.get("body") or {}
                if resp.get("status_code") == 200 and body.get("choices"):
                    text_out = body["choices"][0].get("message", {}).get("content") or ""
                    yield BatchOutcome(row["custom_id"], RawReply(text_out, usage_from_dict(body.get("usage"))), None)
                else:
                    err = row.get("error") or body.get("error") or {"status_code": resp.get("status_code")}
                    yield BatchOutcome(row["custom_id"], None, f"errored: {self.provider._redact(str(err))[:300]}")
