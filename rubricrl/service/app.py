"""The HTTP face of the reward service (FastAPI): routes, the token check, time limits, disconnects.

Routes (JSON in and out; a refused request gets ``{"error": {"status", "field", "limit", "message"}}``):

- ``POST /score`` ``{"items": [...]}`` -> ``{"request_id", "provider", "results": [...]}``, one answer per
  item in request order (``schemas.contracts.service``);
- ``POST /score/stream``: the same items, answered as NDJSON lines, each as soon as it is scored (each
  line carries its ``index``);
- ``POST /openrlhf/get_reward``: OpenRLHF's remote reward protocol (``rubricrl.adapters.openrlhf``);
- ``GET /health``, ``GET /metrics`` (Prometheus text, ``rubricrl.service.metrics``).

With a token, every request must carry ``Authorization: Bearer <token>`` (the OpenRLHF route also takes
``?token=``: OpenRLHF sends no headers), else 401. An item not scored within ``service.request_timeout_s``
is answered with a null reward and the reason. A client that goes away has its items not yet started
dropped from the queue; those already in the browser finish and close their pages as always.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import time
import uuid
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from rubricrl.service.engine import Scored, ScoreEngine
from rubricrl.service.metrics import CONTENT_TYPE, ServiceMetrics
from rubricrl.service.requests import Job, RequestError, body_limit, decode_json, parse_request

_POLL_S = 0.25  # how often a waiting request looks for its client having gone


class ClientGone(Exception):
    """The client disconnected before its answer was ready."""


def json_response(status: int, obj: Any, allow_nan: bool = False) -> Response:
    body = json.dumps(obj, ensure_ascii=False, allow_nan=allow_nan).encode("utf-8")
    return Response(body, status_code=status, media_type="application/json")


def new_request_id() -> str:
    return uuid.uuid4().hex[:16]


async def read_body(request: Request, limit: int, limit_text: str) -> bytes:
    """The body, refused with a 413 as soon as it is known to pass ``limit`` bytes (never read whole)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise RequestError(413, "body", f"{declared} bytes is over the limit", limit_text)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, "body", f"more than {limit} bytes is over the limit", limit_text)
        chunks.append(chunk)
    return b"".join(chunks)


async def as_scored(engine: ScoreEngine, jobs: list[Job], request: Request | None) -> AsyncIterator[Scored]:
    """Each item's ``Scored`` as soon as it is ready; at the time limit the rest as timed out. With
    ``request``, a client that disconnects raises ``ClientGone`` (without it the caller watches)."""
    started = time.perf_counter()
    deadline = started + engine.cfg.request_timeout_s
    futures = [engine.submit(j) for j in jobs]
    waiting = {asyncio.wrap_future(f): i for i, f in enumerate(futures)}
    try:
        while waiting:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            done, _ = await asyncio.wait(waiting, timeout=min(_POLL_S, left), return_when=asyncio.FIRST_COMPLETED)
            for d in done:
                waiting.pop(d)
                yield d.result()
            if request is not None and await request.is_disconnected():
                raise ClientGone()
        for i in sorted(waiting.values()):
            yield engine.timed_out(jobs[i], started)
    finally:
        for f in futures:  # a client gone, or time up: items not yet started leave the queue
            f.cancel()


async def collect(engine: ScoreEngine, jobs: list[Job], request: Request) -> list[Scored]:
    got = [s async for s in as_scored(engine, jobs, request)]
    return sorted(got, key=lambda s: s.job.index)


class Routes:
    """The routes over one engine; each passes through ``guarded`` (the token, refusals, the request metrics)."""

    def __init__(self, engine: ScoreEngine, token: str | None) -> None:
        self.engine, self.cfg, self.token = engine, engine.cfg, token
        self.metrics = ServiceMetrics(engine)

    def authorized(self, request: Request, query_token: bool) -> bool:
        if self.token is None:
            return True
        given = request.headers.get("authorization", "")
        given = given[len("Bearer "):] if given.startswith("Bearer ") else ""
        if not given and query_token:
            given = request.query_params.get("token", "")
        return hmac.compare_digest(given.encode(), self.token.encode())

    async def guarded(self, request: Request, route: str, work: Callable[[], Awaitable[Response]],
                      query_token: bool = False) -> Response:
        started = time.perf_counter()
        try:
            with self.metrics.in_progress.labels(route).track_inprogress():
                if not self.authorized(request, query_token):
                    raise RequestError(401, "Authorization", f"missing or wrong token; send the token in "
                                       f"${self.cfg.token_env} (service.token_env) as 'Authorization: Bearer <token>'")
                response = await work()
        except RequestError as e:
            response = json_response(e.status, e.body())
        except ClientGone:
            response = Response(status_code=499)  # nobody reads it; counted so a scrape shows the disconnects
        self.metrics.observe_request(route, response.status_code, time.perf_counter() - started)
        return response

    async def body(self, request: Request) -> Any:
        return decode_json(await read_body(request, self.cfg.max_request_bytes, body_limit(self.cfg)))

    def jobs(self, data: Any) -> list[Job]:
        e = self.engine
        return parse_request(data, self.cfg, e.tasks, e.tokenizer is not None)

    async def answered(self, request_id: str, route: str, scored: list[Scored]) -> None:
        self.metrics.observe_items(scored)
        await run_in_threadpool(self.engine.record, request_id, route, scored)

    async def score(self, request: Request) -> Response:
        async def work() -> Response:
            jobs = await run_in_threadpool(self.jobs, await self.body(request))
            scored = await collect(self.engine, jobs, request)
            rid = new_request_id()
            await self.answered(rid, "score", scored)
            return json_response(200, {"request_id": rid, "provider": self.engine.provider_name,
                                       "results": [s.answer for s in scored]})

        return await self.guarded(request, "score", work)

    async def score_stream(self, request: Request) -> Response:
        async def work() -> Response:
            jobs, rid = await run_in_threadpool(self.jobs, await self.body(request)), new_request_id()

            async def lines() -> AsyncIterator[bytes]:
                # Starlette cancels this generator when the client goes (its own disconnect listener)
                async for s in as_scored(self.engine, jobs, None):
                    await self.answered(rid, "score/stream", [s])
                    yield json.dumps(s.answer, ensure_ascii=False).encode("utf-8") + b"\n"

            return StreamingResponse(lines(), media_type="application/x-ndjson", headers={
                "x-rubricrl-provider": self.engine.provider_name, "x-rubricrl-request-id": rid})

        return await self.guarded(request, "score/stream", work)

    def openrlhf_jobs(self, data: Any) -> list[Job]:
        from rubricrl.adapters.openrlhf import openrlhf_items, renamed

        try:
            return self.jobs({"items": openrlhf_items(data)})
        except RequestError as e:
            raise renamed(e) from None

    async def openrlhf(self, request: Request) -> Response:
        from rubricrl.adapters.openrlhf import openrlhf_answer

        async def work() -> Response:
            jobs = await run_in_threadpool(self.openrlhf_jobs, await self.body(request))
            scored = await collect(self.engine, jobs, request)
            await self.answered(new_request_id(), "openrlhf", scored)
            # NaN for a missing reward: OpenRLHF has no null (docs/adapters.md says what it does with NaN)
            return json_response(200, openrlhf_answer([s.answer for s in scored]), allow_nan=True)

        return await self.guarded(request, "openrlhf", work, query_token=True)

    async def health(self, request: Request) -> Response:
        e = self.engine

        async def work() -> Response:
            return json_response(200, {"status": "ok", "provider": e.provider_name,
                                       "offline": e.provider_name == "offline", "browser": e.runtime is not None,
                                       "judge_concurrency": e.provider.limit, "workers": self.cfg.workers,
                                       "keep_scores": self.cfg.keep_scores})

        return await self.guarded(request, "health", work)

    async def metrics_text(self, request: Request) -> Response:
        async def work() -> Response:
            return Response(self.metrics.render(), media_type=CONTENT_TYPE)

        return await self.guarded(request, "metrics", work)


def create_app(engine: ScoreEngine, token: str | None = None) -> FastAPI:
    """The service over ``engine``, which it closes when it stops; ``token`` None: none is asked for."""
    routes = Routes(engine, token)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await run_in_threadpool(engine.close)

    app = FastAPI(title="rubricrl reward service", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.post("/score")(routes.score)
    app.post("/score/stream")(routes.score_stream)
    app.post("/openrlhf/get_reward")(routes.openrlhf)
    app.get("/health")(routes.health)
    app.get("/metrics")(routes.metrics_text)
    return app
