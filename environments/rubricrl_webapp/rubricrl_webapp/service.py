"""The client of a running ``rubricrl serve-env``: one app in, the service's answer out (``POST /score``).

Each item carries its task inline (``rubricrl export-tasks``' TASK.json), so the service scores it whether or
not it published that query, and asks ``observe: true``: the answer then holds the text of the policy's next
turn (``observation``, written by the service) and whether nothing is left to fix (``passed``). An app the
service did not score (its time limit, a judge failure, the service unreachable or refusing the item) is
``RewardMissing``: the episode fails rather than record a made-up 0.
"""
from __future__ import annotations

import math
import os
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8765"  # rubricrl serve-env's default address (its service.host, service.port)
# one app's scoring, at most, before its reward counts as missing: above the service's own limit on a request
SAMPLE_TIMEOUT_S = 900.0


class RewardMissing(RuntimeError):
    """The service gave no reward for an app (time limit, judge failure, environment gap): never a 0."""


def url_from_env() -> str:
    """The service's URL as the rubricrl project names it (``RUBRICRL_SERVICE__URL``), else the default."""
    return os.environ.get("RUBRICRL_SERVICE__URL") or DEFAULT_URL


def _client_args(url: str, token: str | None, timeout_s: float) -> dict[str, Any]:
    return {"base_url": url.rstrip("/"), "headers": {"Authorization": f"Bearer {token}"} if token else {},
            "timeout": httpx.Timeout(timeout_s, connect=10)}


def _request(task: dict[str, Any], app: str) -> dict[str, Any]:
    return {"items": [{"task": task, "response": app, "observe": True}]}


def _answer(url: str, task: dict[str, Any], r: httpx.Response) -> dict[str, Any]:
    if r.status_code != 200:
        raise RewardMissing(f"the reward service at {url} answered {r.status_code}: {r.text[:500]}")
    answer = r.json()["results"][0]
    if answer.get("reward") is None:
        raise RewardMissing(f"no reward for {task.get('query_id')}: {answer.get('reason')}")
    return answer


def _unanswered(url: str, e: httpx.HTTPError) -> RewardMissing:
    # unreachable, or past the time limit: the environment's gap, not the app's
    return RewardMissing(f"the reward service at {url} gave no answer: {type(e).__name__}: {e}")


async def score_app(url: str, token: str | None, task: dict[str, Any], app: str, timeout_s: float) -> dict[str, Any]:
    """The service's answer for ``app`` written for ``task``; ``RewardMissing`` when it holds no reward."""
    try:
        async with httpx.AsyncClient(**_client_args(url, token, timeout_s)) as http:
            r = await http.post("/score", json=_request(task, app))
    except httpx.HTTPError as e:
        raise _unanswered(url, e) from e
    return _answer(url, task, r)


def score_app_sync(url: str, token: str | None, task: dict[str, Any], app: str, timeout_s: float) -> dict[str, Any]:
    """``score_app`` for a caller that blocks (skyrl-gym's ``step``)."""
    try:
        with httpx.Client(**_client_args(url, token, timeout_s)) as http:
            r = http.post("/score", json=_request(task, app))
    except httpx.HTTPError as e:
        raise _unanswered(url, e) from e
    return _answer(url, task, r)


def answer_metrics(answer: dict[str, Any]) -> dict[str, float]:
    """The weight-0 metrics of one scored app: its gates, rubric score and the share of its checks passed."""
    out = {k: float(answer[k]) for k in ("format_valid", "source_valid", "runtime_valid", "rubric_score")
           if answer.get(k) is not None}
    checks = (answer.get("evidence") or {}).get("checks") or []
    out["checks_passed"] = sum(c.get("status") == "passed" for c in checks) / len(checks) if checks else math.nan
    return out
