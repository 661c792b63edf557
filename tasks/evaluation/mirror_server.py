"""The CDN mirror on loopback, for a browser rubricrl does not drive itself: Node's Playwright Test running a
benchmark's own specs (``tasks/evaluation/pft.py``) asks it for every request a test page makes.

``GET /resolve?url=<url>&type=<resource type>`` answers 200 with the bytes ``CdnMirror.resolve(url)`` serves
(the exact library and file a real CDN would give); 404 with ``x-rubricrl-not-found`` where the real CDN
answers 404 too (the page is given that 404); else 404 with ``x-rubricrl-refused``: ``unserved`` for a library
the mirror lacks (an environment gap by the sandbox's own rule, ``tasks.env.cdn.unserved``: a benchmark's own
run had the network, so the environment cannot judge what follows), ``blocked`` for a request refused on
purpose, e.g. an API call (the sandbox never lets a request out, and the verdict stands). Bound to 127.0.0.1 on a free
port; one thread per connection.

Run: ``with MirrorServer(CdnMirror(root)) as srv: srv.base_url``.
"""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tasks.env.cdn import CdnMirror


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class MirrorServer:
    def __init__(self, mirror: CdnMirror | None) -> None:
        self.mirror = mirror
        self._server: _Server | None = None

    def start(self) -> "MirrorServer":
        mirror = self.mirror

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: every test page asks for many files
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                url, kind = (query.get("url") or [""])[0], (query.get("type") or [""])[0]
                res = mirror.resolve(url, kind or "script") if mirror is not None and parts.path == "/resolve" and url else None
                if res is not None and res.outcome == "not_found":  # the real CDN's 404: the page sees it too
                    self.send_response(404)
                    self.send_header("x-rubricrl-not-found", "1")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                served = res.served if res is not None and res.outcome == "served" else None
                if served is None:
                    self.send_response(404)
                    # the sandbox's own rule (tasks/env/cdn.py: unserved) says a gap from a refusal
                    gap = res is None or res.outcome == "environment_gap"
                    self.send_header("x-rubricrl-refused", "unserved" if gap else "blocked")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", served.content_type)
                self.send_header("Content-Length", str(len(served.body)))
                self.end_headers()
                self.wfile.write(served.body)

        self._server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("start the mirror server first (MirrorServer(...).start() or a with block)")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "MirrorServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
