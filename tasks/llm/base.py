"""The provider contract: a request names its prompt, variables and output model; the result is a
validated pydantic object, or ``None`` with the reason (never a crash, never a made-up answer).

Every provider shares ``Provider.complete``: render, look the round trip up in the content-addressed
cache, else call (with retries on transport faults), parse JSON, validate with the request's context,
and on failure exactly one corrective retry that shows the model its error (paper B.4). Each call is
priced, counted against the run's budget and written to the ledger (``llm_calls``).

Departure from the paper: none in behaviour; the cache, ledger and budget are engineering around it.
A 401/403 (``LLMAuthError``) is not "one bad answer": it stops the stage with a message naming the key.
"""
from __future__ import annotations

import base64
import hashlib
import logging
import os
import threading
import time
import uuid
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from pydantic import BaseModel

from schemas.config.llm import BatchConfig, Prices, RetryConfig
from tasks.llm.cache import cache_key
from tasks.llm.ledger import Budget, cost_usd, ledger_row
from tasks.llm.prompts import PromptTemplate, load_prompt
from tasks.llm.replies import corrective_message, schema_digest, validate_reply
from tasks.llm.retry import Fault, LLMAuthError, call_with_retries

if TYPE_CHECKING:
    from tasks.llm.batch import BatchBackend
    from tasks.llm.cache import CallStore

log = logging.getLogger(__name__)
OfflineRule = Callable[[dict[str, Any]], dict[str, Any]]


IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
               ".gif": "image/gif"}  # the media types both APIs accept in a message


@dataclass(frozen=True)
class ImageInput:
    """One image a request shows the model (a screenshot of an app): its bytes and media type. Providers send it
    in their own wire form (Claude: an image content block; OpenAI-compatible: an image_url data URI)."""

    data: bytes
    media_type: str = "image/png"

    def __post_init__(self) -> None:
        if self.media_type not in IMAGE_TYPES.values():
            raise ValueError(f"image media type {self.media_type!r} is not one the APIs accept; use one of "
                             f"{sorted(set(IMAGE_TYPES.values()))}")

    @classmethod
    def from_file(cls, path: Path | str) -> "ImageInput":
        path = Path(path)
        if path.suffix.lower() not in IMAGE_TYPES:
            raise ValueError(f"{path}: an image must be one of {', '.join(IMAGE_TYPES)}")
        return cls(path.read_bytes(), IMAGE_TYPES[path.suffix.lower()])

    @property
    def digest(self) -> str:
        """What the cache key holds of the image: the same pixels in the same file, the same key."""
        return hashlib.sha256(self.data).hexdigest()

    def b64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True)
class LLMRequest:
    """One structured call. ``key`` is the row's stable id (ledger row; batch results match by cache key)."""

    stage: str
    key: str
    prompt: str
    variables: dict[str, Any]
    output_model: type[BaseModel]
    offline_rule: OfflineRule | None = None
    validation_context: dict[str, Any] | None = None
    max_tokens: int = 4096
    temperature: float = 0.0
    prompt_dir: str | None = None  # None = tasks/prompts/; tests and benches point elsewhere
    sample: int = 0  # k-th independent sample of the same request (evaluation runs): its own cache entry
    images: tuple[ImageInput, ...] = ()  # shown after the first user turn's text; their digests enter the cache key

    @property
    def template(self) -> PromptTemplate:
        return load_prompt(self.prompt) if self.prompt_dir is None else load_prompt(self.prompt, Path(self.prompt_dir))


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, other: "Usage") -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cache_read_tokens": self.cache_read_tokens, "cache_write_tokens": self.cache_write_tokens}


@dataclass
class LLMResult:
    key: str
    provider: str
    model: str
    output: BaseModel | None
    error: str | None = None
    attempts: int = 1
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    cached: bool = False
    cost_usd: float = 0.0
    batch: bool = False
    status: str = ""  # ok | missing | error | budget; derived when left empty
    first_try_valid: bool = False  # the first reply validated, no corrective retry needed

    def __post_init__(self) -> None:
        if not self.status:
            self.status = "ok" if self.output is not None else "missing"

    @property
    def ok(self) -> bool:
        return self.output is not None


@dataclass
class RawReply:
    text: str
    usage: Usage = field(default_factory=Usage)


@dataclass
class Trip:
    """One round trip as ``complete`` saw it: the reply, what it cost now, where it came from."""

    reply: RawReply
    cost_usd: float
    cached: bool
    batch: bool
    queued_s: float = 0.0  # a batch result's time from submission to result, billed with it


def trip_key(provider: str, model: str, request: LLMRequest, system: str, messages: list[dict[str, str]]) -> str:
    """The cache key of one round trip (see ``tasks/llm/cache.py`` for what it covers)."""
    return cache_key(provider=provider, model=model, template=request.template.fingerprint, system=system,
                     messages=messages, max_tokens=request.max_tokens, temperature=request.temperature,
                     output_schema=schema_digest(request.output_model), sample=request.sample,
                     images=[i.digest for i in request.images])


def new_run_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class Provider(ABC):
    """Subclasses implement ``_call`` (and ``_classify`` for their SDK's faults); ``complete`` adds the
    cache, retries, validation, the single corrective retry, pricing, budget and the ledger.

    Production attributes are set by ``configure`` (the factory does it); a bare subclass works
    without them: no cache, no ledger file, no retries, cost 0.
    """

    name: str = "base"
    model: str = ""
    store: "CallStore | None" = None
    use_cache: bool = False
    prices: Prices | None = None
    retry: RetryConfig = RetryConfig(max_retries=0)
    batch_discount: float = 0.5
    concurrency: int = 8
    batch_config: BatchConfig | None = None
    _budget: Budget | None = None
    _run_id: str | None = None
    _init_lock = threading.Lock()

    def configure(self, *, store: "CallStore | None" = None, use_cache: bool | None = None,
                  prices: Prices | None = None, retry: RetryConfig | None = None, budget_usd: float | None = None,
                  run_id: str | None = None, batch_discount: float | None = None,
                  concurrency: int | None = None, batch: BatchConfig | None = None) -> "Provider":
        self.store = store
        self.use_cache = bool(store is not None and (True if use_cache is None else use_cache))
        self.prices = prices if prices is not None else self.prices
        self.retry = retry if retry is not None else self.retry
        self._budget = Budget(limit_usd=budget_usd)
        self._run_id = run_id or new_run_id()
        self.batch_discount = batch_discount if batch_discount is not None else self.batch_discount
        self.concurrency = concurrency if concurrency is not None else self.concurrency
        self.batch_config = batch if batch is not None else self.batch_config
        if batch is not None and batch_discount is None:
            self.batch_discount = batch.discount
        return self

    # Attributes that hold the API key or live connections: never pickled (Prefect may pickle task
    # inputs and results), rebuilt from the environment by ``_reconnect`` on unpickling.
    _transient_attrs: tuple[str, ...] = ("_key", "_client", "_sdk")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self._transient_attrs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reconnect()

    def _reconnect(self) -> None:
        """Networked providers re-read their key from the environment and rebuild the client."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, run_id={self._run_id!r})"

    @property
    def budget(self) -> Budget:
        if self._budget is None:
            with self._init_lock:
                if self._budget is None:
                    self._budget = Budget()
        return self._budget

    @property
    def run_id(self) -> str:
        if self._run_id is None:
            with self._init_lock:
                if self._run_id is None:
                    self._run_id = new_run_id()
        return self._run_id

    @abstractmethod
    def _call(self, request: LLMRequest, system: str, messages: list[dict[str, str]]) -> RawReply:
        """One round trip. Raise on transport errors; return the raw text otherwise."""

    def _classify(self, exc: BaseException) -> Fault | None:
        """Which exceptions are transient; SDK providers override. Unknown ones are not retried."""
        if isinstance(exc, (TimeoutError, ConnectionError)):
            return Fault(transient=True)
        return None

    def _on_retry(self, retry: int, fault: Fault, delay_s: float) -> None:
        """Every retry is logged (status and wait, never the request) and counted in ``retries``."""
        with self._init_lock:
            self.__dict__.setdefault("retries", []).append((fault.status, round(delay_s, 3)))
        log.info("%s: transient fault (HTTP %s), retry %d in %.2fs", self.name, fault.status or "timeout/connection",
                 retry + 1, delay_s)

    def batch_backend(self) -> "BatchBackend | None":
        """The Message Batches backend, when the provider has one."""
        return None

    # -- one round trip --------------------------------------------------------------------------
    def trip_key(self, request: LLMRequest, system: str, messages: list[dict[str, str]]) -> str:
        return trip_key(self.name, self.model, request, system, messages)

    def first_trip(self, request: LLMRequest) -> tuple[str, list[dict[str, str]], str]:
        """System text, messages and cache key of a request's first round trip (shared with batches)."""
        system, user = request.template.render(request.variables)
        messages = [{"role": "user", "content": user}]
        return system, messages, self.trip_key(request, system, messages)

    def _cached_trip(self, key: str) -> Trip | None:
        if not self.use_cache or self.store is None:
            return None
        hit = self.store.get(key)
        if hit is None:
            return None
        # A batch result is billed by the first call that reads it; later reads are free cache hits.
        billed = self.store.claim_unbilled(key) if hit.unbilled_usd > 0 else 0.0
        return Trip(RawReply(hit.text, Usage(**hit.usage)), billed, cached=billed == 0.0, batch=hit.origin == "batch",
                    queued_s=hit.latency_s if billed > 0 else 0.0)

    def _live_trip(self, request: LLMRequest, system: str, messages: list[dict[str, str]], key: str) -> Trip:
        started = time.perf_counter()
        reply = call_with_retries(lambda: self._call(request, system, messages), self._classify, self.retry,
                                  on_retry=self._on_retry)
        cost = cost_usd(reply.usage, self.prices) if self.prices is not None else 0.0
        if self.use_cache and self.store is not None:
            self.store.put(key, self.name, self.model, reply.text, reply.usage.as_dict(), origin="messages",
                           latency_s=time.perf_counter() - started)
        return Trip(reply, cost, cached=False, batch=False)

    # -- one logical call ------------------------------------------------------------------------
    def complete(self, request: LLMRequest) -> LLMResult:
        started = time.perf_counter()
        template = request.template
        system, messages, first_key = self.first_trip(request)
        usage, cost, all_cached, batch, queued = Usage(), 0.0, True, False, 0.0
        error: str | None = None
        status = "missing"
        output: BaseModel | None = None
        attempts, first_valid = 0, False
        for attempt in (1, 2):
            key = first_key if attempt == 1 else self.trip_key(request, system, messages)
            trip = self._cached_trip(key)
            if trip is None:
                if self.budget.exceeded:
                    status, error = "budget", (f"not sent: LLM budget ${self.budget.limit_usd} spent; raise "
                                               "llm.budget_usd and re-run")
                    all_cached = False
                    break
                try:
                    trip = self._live_trip(request, system, messages, key)
                except LLMAuthError:
                    raise
                except Exception as e:  # transport failures after retries: this row is an error, the stage goes on
                    status, error = "error", f"call failed: {type(e).__name__}: {e}"
                    attempts, all_cached = attempt, False
                    break
            attempts = attempt
            usage.add(trip.reply.usage)
            cost += trip.cost_usd
            queued += trip.queued_s
            self.budget.add(trip.cost_usd)
            all_cached &= trip.cached
            batch |= trip.batch and attempt == 1
            output, error = validate_reply(request.output_model, request.validation_context,
                                           trip.reply.text)
            first_valid = first_valid or (attempt == 1 and output is not None)
            if output is not None:
                status = "ok"
                break
            if attempt == 2:
                error = f"missing after one corrective retry: {error}"
                break
            messages = messages + [
                {"role": "assistant", "content": trip.reply.text},
                {"role": "user", "content": corrective_message(error or "", request.output_model)},
            ]
        result = LLMResult(request.key, self.name, self.model, output, error, attempts, usage,
                           time.perf_counter() - started + queued, cached=all_cached and attempts > 0,
                           cost_usd=round(cost, 9), batch=batch, status=status, first_try_valid=first_valid)
        self._record(result, request, template, first_key)
        return result

    def _record(self, result: LLMResult, request: LLMRequest, template: PromptTemplate, key: str) -> None:
        if self.store is None:
            return
        self.store.add_ledger_row(ledger_row(result, run_id=self.run_id, stage=request.stage, prompt=template.name,
                                             prompt_version=template.version, cache_key=key))

    def complete_many(self, requests: list[LLMRequest], concurrency: int | None = None) -> list[LLMResult]:
        """Bounded-concurrency fan-out; results in request order."""
        concurrency = self.concurrency if concurrency is None else concurrency
        if concurrency <= 1 or len(requests) <= 1:
            return [self.complete(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(concurrency, len(requests))) as pool:
            return list(pool.map(self.complete, requests))

    def complete_bulk(self, requests: list[LLMRequest], concurrency: int | None = None,
                      **batch_options: Any) -> list[LLMResult]:
        """For bulk stages: first round trips through Message Batches when available, then
        ``complete_many`` (cache hits, corrective retries, errored items). Results in request order."""
        from tasks.llm.batch import run_bulk

        return run_bulk(self, requests, concurrency=concurrency, **batch_options)
