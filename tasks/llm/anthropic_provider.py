"""Claude through the official ``anthropic`` SDK (Messages API).

The SDK's own retries cover 429/5xx with backoff; ``base_url`` may point at a local fake for tests.
The key is read from the environment by the SDK and never logged or stored.
"""
from __future__ import annotations

import os

from tasks.llm.base import LLMRequest, Provider, RawReply, Usage

DEFAULT_MODEL = "claude-opus-4-8"


class AnthropicProvider(Provider):
    name = "anthropic"

    def __init__(self, model: str = DEFAULT_MODEL, base_url: str | None = None, max_retries: int = 4,
                 timeout_s: float = 600.0) -> None:
        import anthropic

        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise ValueError("provider 'anthropic' needs ANTHROPIC_API_KEY in the environment; "
                             "unset the provider setting to run offline")
        self.model = model
        self._client = anthropic.Anthropic(base_url=base_url, max_retries=max_retries, timeout=timeout_s)

    def _call(self, request: LLMRequest, system: str, messages: list[dict[str, str]]) -> RawReply:
        msg = self._client.messages.create(
            model=self.model,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            system=[{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}] if system else [],
            messages=messages,
        )
        text = "".join(getattr(b, "text", "") for b in msg.content)
        u = msg.usage
        usage = Usage(
            input_tokens=u.input_tokens or 0,
            output_tokens=u.output_tokens or 0,
            cache_read_tokens=getattr(u, "cache_read_input_tokens", 0) or 0,
            cache_write_tokens=getattr(u, "cache_creation_input_tokens", 0) or 0,
        )
        return RawReply(text, usage)
