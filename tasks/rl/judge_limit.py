"""A process-wide bound on judge calls in flight, for the streamed score-step calls and the reward service.

``Provider.complete_many(requests, concurrency=env.judge.concurrency)`` bounds ONE call's fan-out; when
the trainer's ScoreStream runs several score-step calls at once in one process, each would get its own
limit and together they would exceed ``env.judge.concurrency``. :class:`SharedLimit` wraps the run's one
provider so every ``complete`` in the process waits for a slot of one shared semaphore: the setting stays
the process-wide number of judge calls in flight, however many score calls overlap. A hung call holds
its slot until the HTTP client's timeout (``llm.retry.timeout_s``) ends it, even after the trainer's
stream has given up on its part (``train.rollout.score_timeout_s``).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tasks.llm.base import LLMRequest, LLMResult, Provider


class SharedLimit:
    """``provider`` with at most ``limit`` ``complete`` calls in flight across all threads of the process."""

    def __init__(self, provider: Provider, limit: int):
        if limit < 1:
            raise ValueError(f"judge concurrency {limit}; set env.judge.concurrency to at least 1")
        self.inner, self.limit = provider, limit
        self._slots = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self.in_flight = self.peak = self.waiting = 0  # observed, for tests, benches and the service's metrics

    def __getattr__(self, name: str) -> Any:  # everything else is the provider's (name, ledger, ...)
        return getattr(self.inner, name)

    def complete(self, request: LLMRequest) -> LLMResult:
        with self._lock:
            self.waiting += 1
        with self._slots:
            with self._lock:
                self.waiting -= 1
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
            try:
                return self.inner.complete(request)
            finally:
                with self._lock:
                    self.in_flight -= 1

    def complete_many(self, requests: list[LLMRequest], concurrency: int | None = None) -> list[LLMResult]:
        """Results in request order; ``concurrency`` caps this call, the shared slots cap the process."""
        width = min(self.limit if concurrency is None else concurrency, self.limit, len(requests))
        if width <= 1:
            return [self.complete(r) for r in requests]
        with ThreadPoolExecutor(max_workers=width) as pool:
            return list(pool.map(self.complete, requests))
