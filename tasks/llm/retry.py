"""Retries of transport faults with exponential backoff, full jitter and the server's retry-after.

Transient: 408, 409, 429, 5xx (529 overloaded included), timeouts and dropped connections. Fatal at
once: 401/403 become ``LLMAuthError`` naming the environment variable that holds the key (never
its value); other 4xx are returned to the caller as a failed call. The SDKs' own retries are turned
off so one policy covers every provider and every retry is visible here.

Pure parts (``retry_after_seconds``, ``backoff_delay``, ``classify_status``) are tested directly.
"""
from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TypeVar

from schemas.config.llm import RetryConfig

T = TypeVar("T")
TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


class LLMAuthError(PermissionError):
    """401/403 from the API: the key is missing, wrong or lacks permission. Stops the stage."""


@dataclass(frozen=True)
class Fault:
    """How to treat one exception: retry (with the server's retry-after, if any) or give up."""

    transient: bool
    retry_after_s: float | None = None
    status: int | None = None


def retry_after_seconds(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds from ``retry-after-ms``, ``retry-after`` (seconds or HTTP date); None if absent or bad."""
    if not headers:
        return None
    low = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in low:
        try:
            return max(0.0, float(low["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = low.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def classify_status(status: int, headers: Mapping[str, str] | None = None) -> Fault:
    return Fault(transient=status in TRANSIENT_STATUS or status >= 500,
                 retry_after_s=retry_after_seconds(headers), status=status)


def backoff_delay(retry: int, policy: RetryConfig, retry_after_s: float | None, rng: random.Random) -> float:
    """Delay before retry number ``retry`` (0-based).

    A server's retry-after is honoured as a floor (capped by ``max_retry_after_s``) plus up to 10%
    jitter so that many waiting workers do not return in the same instant; without it, full jitter
    over an exponential backoff capped at ``max_delay_s``.
    """
    if retry_after_s is not None:
        floor = min(retry_after_s, policy.max_retry_after_s)
        return floor + rng.uniform(0.0, 0.1 * max(floor, policy.base_delay_s))
    cap = min(policy.max_delay_s, policy.base_delay_s * (2 ** retry))
    return rng.uniform(0.5 * cap, cap)


def call_with_retries(fn: Callable[[], T], classify: Callable[[BaseException], Fault | None], policy: RetryConfig,
                      *, sleep: Callable[[float], None] | None = None, rng: random.Random | None = None,
                      on_retry: Callable[[int, Fault, float], None] | None = None) -> T:
    """Run ``fn``; on a transient fault wait and retry up to ``policy.max_retries`` times.

    ``classify`` returns None for exceptions it does not know (they propagate unchanged).
    """
    rng = rng or random.Random()
    retry = 0
    while True:
        try:
            return fn()
        except LLMAuthError:
            raise
        except Exception as exc:  # classified below; unknown ones re-raised
            fault = classify(exc)
            if fault is None or not fault.transient or retry >= policy.max_retries:
                raise
            delay = backoff_delay(retry, policy, fault.retry_after_s, rng)
            if on_retry is not None:
                on_retry(retry, fault, delay)
            (sleep or time.sleep)(delay)
            retry += 1


def auth_error(provider: str, key_env: str, status: int, base_url: str, detail: str) -> LLMAuthError:
    """The clear 401/403 message: which variable, which endpoint, what to do. Never the key itself."""
    what = "was rejected" if status == 401 else "lacks permission for this request"
    return LLMAuthError(
        f"{provider}: the API key in {key_env} {what} by {base_url} (HTTP {status}: {detail[:200]}); "
        f"set a valid key in {key_env} (or point llm.api_key_env at the variable that holds it), "
        "or choose provider 'offline'")


class SDKFaults:
    """Fault handling shared by the official anthropic and openai SDKs (their exception classes carry
    the same names). Mix in before ``Provider``; the class sets ``_sdk`` to the SDK module and
    defines ``_redact``."""

    _sdk: Any
    name: str
    key_env: str
    base_url: str

    def _redact(self, text: str) -> str:  # pragma: no cover - every provider defines its own
        return text

    def _guard(self, exc: Exception) -> Exception:
        """401/403 become the clear auth error; everything else passes through (redacted)."""
        sdk = self._sdk
        if isinstance(exc, (sdk.AuthenticationError, sdk.PermissionDeniedError)):
            return auth_error(self.name, self.key_env, exc.status_code, self.base_url, self._redact(str(exc)))
        return exc

    def call_guarded(self, fn: Callable[[], Any]) -> Any:
        """``fn`` (one SDK call) with this provider's retries; a 401/403 becomes the clear auth error."""

        def guarded() -> Any:
            try:
                return fn()
            except Exception as e:
                raise self._guard(e) from None

        return call_with_retries(guarded, self._classify, self.retry, on_retry=self._on_retry)  # type: ignore[attr-defined]

    def _classify(self, exc: BaseException) -> Fault | None:
        sdk = self._sdk
        if isinstance(exc, sdk.APIStatusError):
            return classify_status(exc.status_code, dict(exc.response.headers))
        if isinstance(exc, (sdk.APITimeoutError, sdk.APIConnectionError)):
            return Fault(transient=True)
        return super()._classify(exc)  # type: ignore[misc]
