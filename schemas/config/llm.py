"""Configuration of the LLM layer: provider, model, endpoint, concurrency, budget, Message Batches,
retries and the price table used by the cost ledger and the dry-run estimate.

Prices are USD per million tokens. ``cache_write`` is the 5-minute prompt-cache write price
(1.25 x input) and ``cache_read`` the cache-hit price (0.1 x input), as Anthropic bills them;
Message Batches are billed at ``batch.discount`` (0.5) of the normal price. A model without a price
is a configuration error (``ValueError`` naming ``llm.prices``), never a silent zero.

How to use: ``LLMConfig()`` gives the documented defaults; it is the ``llm`` section of ``schemas/config/``.
"""
from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, model_validator

from schemas.config.base import Section
from schemas.layout import LLM

ProviderName = Literal["auto", "offline", "anthropic", "openai"]
PROVIDERS: tuple[str, ...] = get_args(ProviderName)


class Prices(Section):
    """USD per million tokens for one model."""

    input: float = Field(ge=0.0, description="Uncached input tokens")
    output: float = Field(ge=0.0, description="Output tokens")
    cache_read: float = Field(ge=0.0, description="Input tokens read from the prompt cache")
    cache_write: float = Field(ge=0.0, description="Input tokens written to the prompt cache")
    min_cacheable_tokens: int = Field(1024, ge=0, description="A shorter prompt prefix is not cached at all (the "
                                                              "model's minimum cacheable length)")

    @classmethod
    def anthropic_style(cls, input: float, output: float, min_cacheable_tokens: int = 1024) -> "Prices":
        """Cache writes at 1.25 x input, cache reads at 0.1 x input."""
        return cls(input=input, output=output, cache_read=round(input * 0.1, 6), cache_write=round(input * 1.25, 6),
                   min_cacheable_tokens=min_cacheable_tokens)

# The offline rules' version (``tasks/llm/offline.py``): stage rows made by other rules are never re-used. Owned
# here, where the prices read it, since the schemas import nothing of the tasks.
OFFLINE_MODEL = "offline-rules-v9"


def default_prices() -> dict[str, Prices]:
    """List prices at the time of writing; override per deployment in ``llm.prices``. Minimum cacheable
    prefixes as Anthropic documents them (4,096 tokens for Opus 4.5 and Haiku 4.5, 1,024 for the others)."""
    free = Prices(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0, min_cacheable_tokens=0)
    return {
        "claude-opus-4-8": Prices.anthropic_style(5.0, 25.0),
        "claude-opus-4-5": Prices.anthropic_style(5.0, 25.0, 4096),
        "claude-sonnet-4-5": Prices.anthropic_style(3.0, 15.0),
        "claude-haiku-4-5": Prices.anthropic_style(1.0, 5.0, 4096),
        "gpt-4.1": Prices(input=2.0, output=8.0, cache_read=0.5, cache_write=2.0),
        "gpt-4.1-mini": Prices(input=0.4, output=1.6, cache_read=0.1, cache_write=0.4),
        # The embedded default and a self-hosted judge cost nothing per token.
        OFFLINE_MODEL: free,
        "local": free,
    }


class RetryConfig(Section):
    """Retries of transport faults (429, 408, 409, 5xx, 529, timeouts, dropped connections)."""

    max_retries: int = Field(6, ge=0, le=50, description="Retries after the first try of one round trip")
    base_delay_s: float = Field(1.0, ge=0.0, description="First backoff; doubles each retry")
    max_delay_s: float = Field(60.0, ge=0.0, description="Cap of one exponential backoff")
    max_retry_after_s: float = Field(600.0, ge=0.0, description="Cap on a server's retry-after")
    timeout_s: float = Field(600.0, gt=0.0, description="Per-request timeout of the HTTP client")


class BatchConfig(Section):
    """Message Batches for bulk stages (queries, rubric stages, SFT answers)."""

    enabled: bool = Field(True, description="Bulk stages submit batches when the provider supports them")
    max_requests: int = Field(100_000, ge=1, le=100_000, description="Requests per batch (API limit 100,000)")
    max_bytes: int = Field(256_000_000, ge=1_000, le=256_000_000,
                           description="Request bytes per batch (API limit 256 MB)")
    poll_interval_s: float = Field(30.0, gt=0.0, description="Seconds between status polls")
    max_wait_s: float = Field(26 * 3600.0, gt=0.0, description="Give up polling after this (batches expire at 24 h)")
    discount: float = Field(0.5, gt=0.0, le=1.0, description="Batch price as a fraction of the normal price")


class ServerConfig(Section):
    """An OpenAI-compatible vLLM server started by ``rubricrl serve-judge`` (``tasks/llm/vllm_server.py``)."""

    host: str = Field("127.0.0.1", description="Listen address; 127.0.0.1 keeps the server on this machine")
    port: int = Field(8000, ge=1, le=65535, description="Listen port")
    max_model_len: int | None = Field(None, ge=256, description="Context length; None = the model's own")
    dtype: str = Field("auto", description="vLLM --dtype (auto, float32, bfloat16, float16)")
    structured_backend: Literal["xgrammar", "guidance"] = Field(
        "xgrammar", description="vLLM's structured-output backend (both support compact JSON)")
    compact_json: bool = Field(
        True, description="No whitespace between JSON tokens under the grammar: a weak model cannot pad a reply "
                          "with blanks until max_tokens runs out")
    cpu_kvcache_gb: int = Field(2, ge=1, description="KV cache GiB on a CPU-only machine (VLLM_CPU_KVCACHE_SPACE is "
                                                     "set to it; an exported value that disagrees is an error)")
    start_timeout_s: float = Field(600.0, gt=0.0, description="Give up waiting for the server to answer")


class LLMConfig(Section):
    provider: ProviderName = Field("auto", description="auto = anthropic when its key is set, else offline")
    model: str | None = Field(None, description="Model name; None = the provider's default")
    base_url: str | None = Field(None, description="API base URL (a local fake, or an OpenAI-compatible server)")
    api_key_env: str | None = Field(
        None, description="Environment variable holding the key; None = ANTHROPIC_API_KEY / OPENAI_API_KEY")
    concurrency: int = Field(16, ge=1, le=1024, description="Parallel requests for interactive calls")
    budget_usd: float | None = Field(None, gt=0.0, description="Stop sending calls once this much is spent")
    store_path: str = Field(f"{LLM}/llm.sqlite", description="SQLite file: response cache, ledger, batch ids (relative: under data_dir)")
    cache: bool = Field(True, description="Content-addressed response cache (offline calls are never cached)")
    json_mode: bool = Field(False, description="openai, structured_outputs off: send response_format json_object")
    structured_outputs: bool = Field(
        True, description="Send each structured call's JSON schema (openai: response_format json_schema strict; "
                          "anthropic: output_config.format), so the server constrains the reply")
    schema_max_string_chars: int | None = Field(
        None, ge=1, description="Bound every free string in the schema sent (a weak model looping inside a string "
                                "still closes the object); None = unbounded")
    schema_max_items: int | None = Field(None, ge=1, description="Bound every list in the schema sent; None = unbounded")
    chars_per_token: float = Field(4.0, gt=0.0, description="Dry-run token estimate: characters per token")
    retry: RetryConfig = Field(default_factory=RetryConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    batch: BatchConfig = Field(default_factory=BatchConfig)
    prices: dict[str, Prices] = Field(default_factory=default_prices)

    @model_validator(mode="after")
    def _check(self) -> "LLMConfig":
        if self.base_url is not None and not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"llm.base_url {self.base_url!r} must start with http:// or https://")
        return self

    def price(self, model: str) -> Prices:
        """The price of ``model``; a missing entry names the fix."""
        if model not in self.prices:
            raise ValueError(f"no price for model {model!r}; add llm.prices[{model!r}] = "
                             "{input, output, cache_read, cache_write} in USD per million tokens "
                             "(use 0 for a self-hosted endpoint)")
        return self.prices[model]
