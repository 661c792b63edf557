"""How an adapter reaches the environment: in its own process, or through ``rubricrl serve-env``.

``scorer()`` picks by ``service.url`` (``RUBRICRL_SERVICE__URL`` or ``--set``): unset, a ``LocalScorer``
scores in the trainer's process with the service's engine (the same code, the same process-wide bounds:
one browser, the judge bound, the LLM cache, ledger and budget); set, a ``ServiceClient`` POSTs the items
to ``/score`` with the token from ``service.token_env``. Both take ``/score`` items and return the
service's answers in item order; bad items raise ``ValueError`` naming the field.
"""
from __future__ import annotations

import os
import uuid
from functools import lru_cache
from typing import Any, Protocol

from schemas.config import Config, load_config


class Scorer(Protocol):
    def score(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]: ...


def chunks(items: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    """A trainer's batch (verl: batch x n responses) in requests of at most ``service.max_items`` (pure)."""
    return [items[i:i + size] for i in range(0, len(items), size)]


class LocalScorer:
    """The service's engine in this process (``rubricrl.service.engine.process_engine``)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def score(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from rubricrl.service.requests import RequestError, parse_request

        e = self.engine
        out: list[dict[str, Any]] = []
        for part in chunks(items, e.cfg.max_items):
            try:
                jobs = parse_request({"items": part}, e.cfg, e.tasks, e.tokenizer is not None)
            except RequestError as err:
                raise ValueError(str(err)) from None
            scored = e.score_jobs(jobs)
            e.record(uuid.uuid4().hex[:16], "local", scored)
            out.extend(s.answer for s in scored)
        return out


class ServiceClient:
    """``POST /score`` on a running ``rubricrl serve-env``."""

    def __init__(self, url: str, token: str | None, timeout_s: float, max_items: int) -> None:
        import httpx

        self.url, self.max_items = url.rstrip("/"), max_items
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # the server answers every item within its time limit; the margin covers the transfer
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=httpx.Timeout(timeout_s + 60, connect=10))

    def score(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [a for part in chunks(items, self.max_items) for a in self._post(part)]

    def _post(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        r = self._http.post("/score", json={"items": items})
        if r.status_code != 200:
            try:
                message = r.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = r.text[:500]
            raise ValueError(f"the reward service at {self.url} answered {r.status_code}: {message}")
        return r.json()["results"]


def scorer_for(project: Config) -> Scorer:
    from rubricrl.service.engine import process_engine

    svc = project.service
    if svc.url is not None:
        return ServiceClient(svc.url, os.environ.get(svc.token_env), svc.request_timeout_s, svc.max_items)
    return LocalScorer(process_engine(project.model_dump_json()))


@lru_cache(maxsize=1)
def scorer() -> Scorer:
    """The process's scorer from the project configuration (profile, ``RUBRICRL_*``), resolved once."""
    return scorer_for(load_config())
