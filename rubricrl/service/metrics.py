"""``GET /metrics``: the service in Prometheus text format (``prometheus_client``, one registry per app).

- ``rubricrl_service_requests_total{route, code}`` and ``rubricrl_service_request_seconds{route}``
  (histogram): every request, refused ones included;
- ``rubricrl_service_requests_in_progress{route}``: requests being handled (received, not yet answered);
- ``rubricrl_service_items_total{tier}`` and ``rubricrl_service_item_seconds`` (histogram): answered items;
- ``rubricrl_service_rewards_missing_total{cause}``: null rewards by cause (judge, failed, timeout);
- gauges read at scrape time: items queued and running, the browser's apps in flight and queue depth
  (apps waiting for one of ``env.runtime.concurrency`` slots), judge calls in flight, waiting for a
  slot, and the peak (never above ``env.judge.concurrency``), and the LLM spend of this process.
"""
from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60, 150, 300, 900)


def missing_cause(answer: dict[str, Any]) -> str | None:
    """Why an answer has no reward, as a label: ``timeout``, ``failed`` (scoring raised) or ``judge`` (pure)."""
    if answer.get("reward") is not None:
        return None
    reason = answer.get("reason") or ""
    if "service.request_timeout_s" in reason:
        return "timeout"
    return "failed" if reason.startswith("scoring failed") else "judge"


class ServiceMetrics:
    def __init__(self, engine: Any) -> None:
        self.registry = r = CollectorRegistry()
        self.requests = Counter("rubricrl_service_requests", "Requests by route and HTTP status", ["route", "code"],
                                registry=r)
        self.request_s = Histogram("rubricrl_service_request_seconds", "Request latency", ["route"],
                                   buckets=_SECONDS, registry=r)
        self.in_progress = Gauge("rubricrl_service_requests_in_progress", "Requests being handled (received, not yet "
                                 "answered)", ["route"], registry=r)
        self.items = Counter("rubricrl_service_items", "Answered items by tier", ["tier"], registry=r)
        self.item_s = Histogram("rubricrl_service_item_seconds", "Item latency (queue, browser, judge, reward)",
                                buckets=_SECONDS, registry=r)
        self.missing = Counter("rubricrl_service_rewards_missing", "Null rewards by cause", ["cause"], registry=r)
        for cause in ("judge", "failed", "timeout"):
            self.missing.labels(cause)
        gauges = {
            "rubricrl_service_items_queued": ("Items waiting for a worker", engine.queued),
            "rubricrl_service_items_running": ("Items being scored", lambda: engine.running),
            "rubricrl_browser_apps_in_flight": ("Apps handed to the browser, not yet back",
                                                lambda: engine.runtime.pending if engine.runtime else 0),
            "rubricrl_browser_queue_depth": ("Apps waiting for a browser slot",
                                             lambda: engine.runtime.queue_depth() if engine.runtime else 0),
            "rubricrl_judge_in_flight": ("Judge calls in flight", lambda: engine.provider.in_flight),
            "rubricrl_judge_queue_depth": ("Judge calls waiting for a slot", lambda: engine.provider.waiting),
            "rubricrl_judge_in_flight_peak": ("Most judge calls in flight at once", lambda: engine.provider.peak),
            "rubricrl_judge_concurrency_limit": ("env.judge.concurrency", lambda: engine.provider.limit),
            "rubricrl_llm_spent_usd": ("LLM spend of this process", lambda: engine.provider.budget.spent_usd),
        }
        for name, (doc, fn) in gauges.items():
            Gauge(name, doc, registry=r).set_function(fn)

    def observe_request(self, route: str, code: int, seconds: float) -> None:
        self.requests.labels(route, str(code)).inc()
        self.request_s.labels(route).observe(seconds)

    def observe_items(self, scored: list[Any]) -> None:
        for s in scored:
            self.items.labels(s.answer.get("tier") or "missing").inc()
            self.item_s.observe(s.latency_s)
            cause = missing_cause(s.answer)
            if cause is not None:
                self.missing.labels(cause).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
