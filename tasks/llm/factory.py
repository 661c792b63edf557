"""Choose and configure a provider from ``LLMConfig`` (``schemas/config/llm.py``).

``auto`` is ``anthropic`` when its key variable is set, else ``offline``. Networked providers get the
call store (cache + ledger + batch ids) at ``llm.store_path``; the offline provider is never cached
(it is deterministic and free) and gets a ledger file only when a config or store is passed.
"""
from __future__ import annotations

import os
from pathlib import Path

from schemas.config.llm import PROVIDERS, LLMConfig
from tasks.llm.base import Provider
from tasks.llm.cache import CallStore
from tasks.llm.structured import StructuredOutputs

DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def resolve_name(name: str, api_key_env: str | None = None) -> str:
    if name not in PROVIDERS:
        raise ValueError(f"llm.provider is {name!r}; allowed values: {', '.join(PROVIDERS)}")
    if name == "auto":
        return "anthropic" if os.environ.get(api_key_env or DEFAULT_KEY_ENV["anthropic"]) else "offline"
    return name


def make_provider(name: str | None = None, model: str | None = None, base_url: str | None = None, *,
                  config: LLMConfig | None = None, store: CallStore | None = None,
                  run_id: str | None = None) -> Provider:
    """Build a configured provider. Explicit ``name``/``model``/``base_url`` override ``config``."""
    explicit_config = config is not None
    cfg = config or LLMConfig()
    name = resolve_name(name or cfg.provider, cfg.api_key_env)
    model = model or cfg.model
    base_url = base_url or cfg.base_url
    provider: Provider
    if name == "offline":
        from tasks.llm.offline import OfflineProvider

        provider = OfflineProvider()
    elif name == "anthropic":
        from tasks.llm.anthropic_provider import DEFAULT_MODEL, AnthropicProvider

        provider = AnthropicProvider(model=model or DEFAULT_MODEL, base_url=base_url, max_retries=cfg.retry.max_retries,
                                     timeout_s=cfg.retry.timeout_s,
                                     api_key_env=cfg.api_key_env or DEFAULT_KEY_ENV["anthropic"])
    else:
        from tasks.llm.openai_provider import OpenAIProvider

        provider = OpenAIProvider(model=model, base_url=base_url, max_retries=cfg.retry.max_retries,
                                  timeout_s=cfg.retry.timeout_s, json_mode=cfg.json_mode,
                                  api_key_env=cfg.api_key_env or DEFAULT_KEY_ENV["openai"])
    if isinstance(provider, StructuredOutputs):
        provider.set_structured(cfg.structured_outputs, cfg.schema_max_string_chars, cfg.schema_max_items)
    prices = cfg.price(provider.model)  # a model without a price fails here, before any call
    if store is None and (name != "offline" or explicit_config):
        store = CallStore(Path(cfg.store_path))
    return provider.configure(store=store, use_cache=cfg.cache and name != "offline", prices=prices, retry=cfg.retry,
                              budget_usd=cfg.budget_usd, run_id=run_id, concurrency=cfg.concurrency,
                              batch=cfg.batch)
