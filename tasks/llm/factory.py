"""Choose a provider from a name (config ``llm.provider``)."""
from __future__ import annotations

import os

from tasks.llm.base import Provider

PROVIDERS = ("auto", "offline", "anthropic")


def resolve_name(name: str) -> str:
    if name not in PROVIDERS:
        raise ValueError(f"llm.provider is {name!r}; allowed values: {', '.join(PROVIDERS)}")
    if name == "auto":
        return "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "offline"
    return name


def make_provider(name: str = "auto", model: str | None = None, base_url: str | None = None) -> Provider:
    name = resolve_name(name)
    if name == "offline":
        from tasks.llm.offline import OfflineProvider

        return OfflineProvider()
    from tasks.llm.anthropic_provider import DEFAULT_MODEL, AnthropicProvider

    return AnthropicProvider(model=model or DEFAULT_MODEL, base_url=base_url)
