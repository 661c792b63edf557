"""A fake Anthropic Messages + Message Batches API on 127.0.0.1, for the real ``anthropic`` SDK.

Messages: ``POST /v1/messages``; image content blocks are checked as the API checks them
(``fakes/images.py``). Usage is simulated: input tokens = characters / 4 (+ a fixed count per image); prompt
caching as the API does it: each block with ``cache_control`` (system, then the messages' blocks in order) ends a
prefix; the longest prefix seen before is read (``cache_read_input_tokens``), the rest up to the last mark is
written (``cache_creation_input_tokens``), the text after the last mark is plain input.

Batches: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``,
``GET /v1/messages/batches/{id}/results`` (JSONL, in reverse order of submission, so clients must
match by custom_id). A batch ends after ``polls_to_end`` status reads, never while ``hold`` is set.
``batch_outcome(custom_id, params)`` picks succeeded / errored / expired / canceled per item.
A malformed ``output_config.format`` (see ``structured_check``) is a 400, as the API answers it.

Usage (also for other engineers' benches)::

    from fakes.fake_anthropic import FakeAnthropic
    with FakeAnthropic(latency_s=1.0, reply=my_reply_fn) as api:
        provider = AnthropicProvider(base_url=api.base_url)   # with ANTHROPIC_API_KEY set to anything
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable

from fakes.images import IMAGE_TOKENS, image_count, image_problem
from fakes.structured_check import anthropic_format_problem
from fakes.http_fake import FakeHTTPAPI, Latency, LongTail, Reply, Response, Scripted, json_response

Outcome = Callable[[str, dict[str, Any]], str]


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


class FakeAnthropic(FakeHTTPAPI):
    def __init__(self, reply: Reply | None = None, latency_s: Latency = 0.0, api_key: str | None = None,
                 polls_to_end: int = 1, batch_outcome: Outcome | None = None) -> None:
        super().__init__(reply, latency_s, api_key)
        self.polls_to_end = polls_to_end
        self.batch_outcome = batch_outcome or (lambda custom_id, params: "succeeded")
        self.hold = threading.Event()  # set: batches stay in progress
        self.batches: dict[str, dict[str, Any]] = {}
        self._prompt_cache: set[str] = set()
        self._ids = itertools.count(1)

    # -- messages ----------------------------------------------------------------------------------
    def usage(self, params: dict[str, Any], text: str) -> dict[str, int]:
        blocks = [b for b in (params.get("system") or []) if isinstance(b, dict)]
        for m in params["messages"]:
            blocks += [{"text": m["content"]}] if isinstance(m["content"], str) else list(m["content"])
        prefixes, seen = [], ""
        for b in blocks:
            seen += b.get("text", "")
            if b.get("cache_control"):
                prefixes.append(seen)
        with self._lock:
            hit = max((len(p) for p in prefixes if p in self._prompt_cache), default=0)
            self._prompt_cache.update(prefixes)
        marked = len(prefixes[-1]) if prefixes else 0
        return {"input_tokens": (len(seen) - marked) // 4 + 1 + IMAGE_TOKENS * image_count(params["messages"]),
                "output_tokens": len(text) // 4 + 1,
                "cache_read_input_tokens": hit // 4, "cache_creation_input_tokens": (marked - hit) // 4}

    def message(self, params: dict[str, Any], text: str) -> dict[str, Any]:
        return {"id": f"msg_{next(self._ids)}", "type": "message", "role": "assistant", "model": params["model"],
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": self.usage(params, text)}

    @staticmethod
    def error_body(s: Scripted) -> dict[str, Any]:
        kind = {429: "rate_limit_error", 401: "authentication_error", 403: "permission_error",
                529: "overloaded_error"}.get(s.status, s.error_type)
        return {"type": "error", "error": {"type": kind, "message": f"scripted {s.status}"}}

    # -- batches -----------------------------------------------------------------------------------
    def batch_object(self, b: dict[str, Any]) -> dict[str, Any]:
        ended = b["ended_at"] is not None
        counts = {"processing": 0 if ended else len(b["requests"]), "succeeded": 0, "errored": 0, "canceled": 0,
                  "expired": 0}
        if ended:
            for r in b["results"]:
                counts[r["result"]["type"]] += 1
        return {"id": b["id"], "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": _iso(b["created_at"]),
                "expires_at": _iso(b["created_at"] + 86400), "ended_at": _iso(b["ended_at"]) if ended else None,
                "archived_at": None, "cancel_initiated_at": None,
                "results_url": f"{self.base_url}/v1/messages/batches/{b['id']}/results" if ended else None}

    def _end(self, b: dict[str, Any]) -> None:
        results = []
        for req in b["requests"]:
            kind = self.batch_outcome(req["custom_id"], req["params"])
            if kind == "succeeded":
                msg = self.message(req["params"], self.reply(req["params"]))
                res: dict[str, Any] = {"type": "succeeded", "message": msg}
            elif kind == "errored":
                res = {"type": "errored", "error": {"type": "error",
                                                    "error": {"type": "api_error", "message": "scripted item error"}}}
            else:
                res = {"type": kind}
            results.append({"custom_id": req["custom_id"], "result": res})
        b["results"] = list(reversed(results))  # out of order on purpose
        b["ended_at"] = time.time()

    def route(self, method: str, path: str, headers: dict[str, str], body: Any) -> Response:
        if method == "POST" and path == "/v1/messages":
            problem = anthropic_format_problem(body.get("output_config")) or image_problem(body)
            if problem:
                return json_response(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                      "message": problem}})
            return self.model_call(body, lambda text: json_response(200, self.message(body, text)),
                                   lambda s: json_response(s.status, self.error_body(s), s.headers))
        if method == "POST" and path == "/v1/messages/batches":
            scripted = self.next_scripted() if self.script and self.script[0].status != 200 else None
            if scripted is not None:
                return json_response(scripted.status, self.error_body(scripted), scripted.headers)
            ids = [r["custom_id"] for r in body["requests"]]
            problems = [p for r in body["requests"]
                        if (p := anthropic_format_problem(r["params"].get("output_config")) or image_problem(r["params"]))]
            if problems:
                return json_response(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                      "message": problems[0]}})
            if len(set(ids)) != len(ids):
                return json_response(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                      "message": "duplicate custom_id"}})
            with self._lock:
                bid = f"msgbatch_{len(self.batches) + 1:04d}"
                b = {"id": bid, "requests": body["requests"], "created_at": time.time(), "ended_at": None, "polls": 0,
                     "results": []}
                self.batches[bid] = b
            return json_response(200, self.batch_object(b))
        if method == "GET" and path.startswith("/v1/messages/batches/"):
            rest = path[len("/v1/messages/batches/"):]
            bid, _, tail = rest.partition("/")
            b = self.batches.get(bid)
            if b is None:
                return json_response(404, {"type": "error", "error": {"type": "not_found_error", "message": bid}})
            if tail == "results":
                if b["ended_at"] is None:
                    return json_response(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                          "message": "batch still in progress"}})
                lines = "".join(json.dumps(r) + "\n" for r in b["results"]).encode()
                return Response(200, lines, content_type="application/binary")
            with self._lock:
                b["polls"] += 1
                if b["ended_at"] is None and not self.hold.is_set() and b["polls"] >= self.polls_to_end:
                    self._end(b)
            return json_response(200, self.batch_object(b))
        return json_response(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})

    def model_calls(self) -> int:
        return len(self.seen("/v1/messages", "POST")) - len(self.seen("/v1/messages/batches", "POST"))


__all__ = ["FakeAnthropic", "LongTail", "Scripted"]
