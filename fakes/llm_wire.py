"""Helpers shared by the LLM wire tests: one fake + provider pair per provider kind, built the way the
pipeline builds them (``get_provider(config=...)``), with the key set in the environment."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from schemas.config.llm import LLMConfig, RetryConfig
from tasks.llm import get_provider
from tasks.llm.base import Provider
from tasks.llm.cache import CallStore
from fakes.fake_anthropic import FakeAnthropic
from fakes.fake_openai import FakeOpenAI
from fakes.http_fake import FakeHTTPAPI
from fakes.llm_fixtures import echo_reply

SECRET = "sk-test-SECRET-0123456789abcdef"
MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4.1-mini"}
KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


@dataclass
class Wire:
    kind: str
    api: FakeHTTPAPI
    store_path: Path
    monkeypatch: pytest.MonkeyPatch

    @property
    def base_url(self) -> str:
        return self.api.base_url + ("/v1" if self.kind == "openai" else "")

    def config(self, **overrides: Any) -> LLMConfig:
        retry = overrides.pop("retry", RetryConfig(max_retries=4, base_delay_s=0.05, max_delay_s=0.2, timeout_s=5.0))
        return LLMConfig(provider=self.kind, model=MODELS[self.kind], base_url=self.base_url,
                         store_path=str(self.store_path), retry=retry, **overrides)

    def provider(self, **overrides: Any) -> Provider:
        store = overrides.pop("store", None) or CallStore(self.store_path)
        p = get_provider(config=self.config(**overrides), store=store)
        if self.kind == "openai":
            p.batches = True  # type: ignore[attr-defined]  # the fake serves the OpenAI Batch API
        return p

    def model_calls(self) -> int:
        return self.api.model_calls()  # type: ignore[attr-defined]


def make_wire(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **fake_kw: Any) -> Wire:
    monkeypatch.setenv(KEY_ENV[kind], fake_kw.pop("env_key", SECRET))
    fake_kw.setdefault("reply", echo_reply)
    fake_kw.setdefault("api_key", SECRET)
    api = (FakeAnthropic if kind == "anthropic" else FakeOpenAI)(**fake_kw).start()
    return Wire(kind, api, tmp_path / "llm.sqlite", monkeypatch)
