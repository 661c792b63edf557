"""Configuration of ``rubricrl serve-env`` (the environment as a reward service) and of the trainer
adapters that reach it (``rubricrl.adapters``).

The service's bounds are the environment's own: browser slots (``env.runtime.concurrency``), judge
calls in flight (``env.judge.concurrency``, process-wide), the LLM cache, ledger and budget (``llm``).
This section holds only what the service adds: where it listens, who may call it, how much one
request may carry, how long it may take, and whether scored requests are kept as a stage.

``ServiceConfig`` is the ``service`` section of ``schemas.config.Config``; overrides follow the usual
``RUBRICRL_SERVICE__PORT=9000`` / ``--set service.port=9000`` rules.
"""
from __future__ import annotations

from pydantic import Field, model_validator

from schemas.config.base import Section


class ServiceConfig(Section):
    """``rubricrl serve-env`` and the adapters' way to it."""

    host: str = Field("127.0.0.1", description="Listen address; any address but loopback needs a token")
    port: int = Field(8765, ge=1, le=65535, description="Listen port")
    token_env: str = Field("RUBRICRL_SERVICE_TOKEN", min_length=1,
                           description="Environment variable holding the bearer token (server and adapters read "
                                       "the same one); the token itself never sits in a config file")
    url: str | None = Field(None, description="Adapters: the service's base URL (http://host:port); None scores "
                                              "in the adapter's own process with the same bounds")
    workers: int = Field(32, ge=1, le=1024, description="Items scored at once; each mostly waits for a browser "
                                                         "slot or a judge call, so this exceeds cores")
    request_timeout_s: float = Field(900.0, gt=0, description="Time limit of one request; an item not scored by "
                                                               "then gets reward null with the reason")
    max_items: int = Field(1024, ge=1, le=100_000, description="Items in one request, at most")
    max_response_chars: int = Field(1_000_000, ge=1, description="Characters of one response, at most")
    max_request_bytes: int = Field(64 * 2**20, ge=1024, description="Bytes of one request body, at most")
    tokenizer: str | None = Field(None, description="Hugging Face tokenizer directory of the policy: an item "
                                                    "with an advantage gets token_weights and token_offsets")
    keep_scores: bool = Field(False, description="Keep every scored item as the service_scores stage "
                                                 "(queryable in DuckDB)")
    publish_every_s: float = Field(300.0, gt=0, description="With keep_scores: publish service_scores this often "
                                                             "while serving (and once at shutdown)")

    @model_validator(mode="after")
    def _check(self) -> "ServiceConfig":
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"service.url {self.url!r} must start with http:// or https://")
        return self
