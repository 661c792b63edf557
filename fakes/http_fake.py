"""A local fake HTTP API on 127.0.0.1 for wire tests and benches (shared by the Anthropic and OpenAI fakes).

It runs the real HTTP/1.1 protocol (keep-alive, Content-Length) in a thread per connection, so the
real SDKs talk to it unchanged. Features every fake shares:

- ``latency_s``: every model call sleeps this long before answering (benches use 1 s), or a
  ``LongTail`` latency drawn per request from a lognormal (median, p95), the same for the same request;
- ``reply(body) -> str``: the assistant text for a request body (default: ``{"ok": true}``);
- ``push(Scripted(...))``: the next model calls get these answers first (status, headers, delay,
  raw text) — 429 with retry-after, 500, a slow reply that trips the client's timeout, bad JSON...;
- ``api_key``: when set, requests whose ``x-api-key`` or ``Authorization: Bearer`` differ get 401;
- ``log``: every request seen (method, path, headers, parsed JSON body), thread-safe;
- ``in_flight`` / ``peak_in_flight``: model calls being answered now, and the most at once (a client's
  concurrency bound as the API sees it).

Usage::

    with FakeAnthropic(latency_s=1.0, reply=lambda body: '{"ok": true}') as api:
        client = anthropic.Anthropic(base_url=api.base_url, api_key="test")
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import deque
from dataclasses import dataclass, field
from statistics import NormalDist
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Reply = Callable[[dict[str, Any]], str]


def default_reply(body: dict[str, Any]) -> str:
    return '{"ok": true}'


_Z95 = NormalDist().inv_cdf(0.95)  # the standard normal's 95th percentile, 1.645


def canonical_body(body: Any) -> str:
    return json.dumps(body, sort_keys=True, default=str)


@dataclass(frozen=True)
class LongTail:
    """A judge API's long-tailed latency: lognormal with median ``median_s`` and 95th percentile ``p95_s``
    (mu = ln median, sigma = ln(p95 / median) / 1.645), times ``scale`` (benches scale it down).

    Seeded per request, not per arrival: ``key(body)`` (default: the whole request body) and ``seed`` fix
    the draw, so two runs that send the same requests in another order, at other times or from other
    threads wait the same latency for the same request (a serial and a streamed step compare fairly)."""

    median_s: float = 8.0
    p95_s: float = 30.0
    scale: float = 1.0
    seed: int = 0
    key: Callable[[Any], str] = canonical_body

    def __post_init__(self) -> None:
        if not (self.median_s > 0 and self.p95_s > self.median_s):
            raise ValueError(f"LongTail needs 0 < median_s < p95_s (got median_s={self.median_s}, "
                             f"p95_s={self.p95_s}); a long tail has its 95th percentile above the median")
        if self.scale < 0:
            raise ValueError(f"LongTail scale must be >= 0 (got {self.scale}); use 1.0 for real-size latencies")

    @property
    def sigma(self) -> float:
        return math.log(self.p95_s / self.median_s) / _Z95

    def draw(self, key: str) -> float:
        """The latency of the request with this key (pure: same key and seed, same seconds)."""
        h = hashlib.sha256(f"{self.seed}\x00{key}".encode()).digest()
        u = (int.from_bytes(h[:8], "big") + 0.5) / 2**64  # uniform in (0, 1), never 0 or 1
        return self.scale * self.median_s * math.exp(self.sigma * NormalDist().inv_cdf(u))

    def delay_for(self, body: Any) -> float:
        return self.draw(self.key(body))


Latency = float | LongTail


@dataclass
class Scripted:
    """One scripted answer to the next model call. ``text`` replaces the reply function's text;
    a non-2xx ``status`` sends an error body instead."""

    status: int = 200
    text: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    error_type: str = "api_error"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Response:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


def json_response(status: int, obj: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(status, json.dumps(obj).encode(), headers or {})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # many concurrent clients connect at once in benches
    allow_reuse_address = True


class FakeHTTPAPI:
    """Base of the fakes: subclasses implement ``route(method, path, headers, body) -> Response``."""

    def __init__(self, reply: Reply | None = None, latency_s: Latency = 0.0, api_key: str | None = None) -> None:
        self.reply = reply or default_reply
        self.latency_s = latency_s
        self.api_key = api_key
        self.script: deque[Scripted] = deque()
        self.log: list[Seen] = []
        self._lock = threading.RLock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()  # ends every pending delay: a call left hanging must not outlive the fake
        self.in_flight = self.peak_in_flight = 0  # model calls being answered now, and the most at once

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> "FakeHTTPAPI":
        app = self
        self._stopped.clear()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _handle(self, method: str) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                resp = app.dispatch(method, self.path, dict(self.headers.items()), raw)
                try:
                    self.send_response(resp.status)
                    self.send_header("Content-Type", resp.content_type)
                    self.send_header("Content-Length", str(len(resp.body)))
                    for k, v in resp.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(resp.body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    self.close_connection = True

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeHTTPAPI":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "start the fake first"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- behaviour ---------------------------------------------------------------------------------
    def push(self, *answers: Scripted) -> None:
        with self._lock:
            self.script.extend(answers)

    def next_scripted(self) -> Scripted | None:
        with self._lock:
            return self.script.popleft() if self.script else None

    def seen(self, path_prefix: str = "", method: str | None = None) -> list[Seen]:
        with self._lock:
            return [s for s in self.log if s.path.startswith(path_prefix) and (method is None or s.method == method)]

    def authorized(self, headers: dict[str, str]) -> bool:
        if self.api_key is None:
            return True
        low = {k.lower(): v for k, v in headers.items()}
        return low.get("x-api-key") == self.api_key or low.get("authorization") == f"Bearer {self.api_key}"

    def dispatch(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Response:
        ctype = headers.get("Content-Type") or headers.get("content-type") or ""
        body: Any = raw
        if raw and "json" in ctype:
            body = json.loads(raw)
        with self._lock:
            self.log.append(Seen(method, path, headers, body))
        if not self.authorized(headers):
            return self.auth_error()
        return self.route(method, path.split("?")[0], headers, body)

    def auth_error(self) -> Response:
        return json_response(401, {"error": {"type": "authentication_error", "message": "invalid api key"}})

    def route(self, method: str, path: str, headers: dict[str, str], body: Any) -> Response:
        raise NotImplementedError

    def model_call(self, body: dict[str, Any], ok: Callable[[str], Response],
                   error: Callable[[Scripted], Response]) -> Response:
        """The common path of a model call: scripted fault or latency, then the reply text."""
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return self._answer(body, ok, error)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, body: dict[str, Any], ok: Callable[[str], Response],
                error: Callable[[Scripted], Response]) -> Response:
        scripted = self.next_scripted()
        base = self.latency_s.delay_for(body) if isinstance(self.latency_s, LongTail) else self.latency_s
        delay = base if scripted is None else max(scripted.delay_s, base)
        if delay:
            self._stopped.wait(delay)
        if scripted is not None and scripted.status != 200:
            return error(scripted)
        text = scripted.text if scripted is not None and scripted.text is not None else self.reply(body)
        return ok(text)
