"""A fake OpenAI-compatible API on 127.0.0.1 (chat completions, files, batches) for the real ``openai`` SDK.

Chat: ``POST /v1/chat/completions``, streamed (server-sent events) when the body asks ``stream: true`` (image_url parts checked as the API checks them, ``fakes/images.py``);
usage is simulated (prompt tokens = characters / 4; a system
prompt seen before counts as ``prompt_tokens_details.cached_tokens``, like automatic prefix caching).
Batch API: ``POST /v1/files`` (multipart JSONL), ``POST /v1/batches``, ``GET /v1/batches/{id}``,
``GET /v1/files/{id}/content``. A malformed ``response_format`` (see ``structured_check``) is a
400, as OpenAI answers it (a failed item in a batch). A batch completes after ``polls_to_end`` status reads (never while
``hold`` is set); succeeded lines go to the output file in reverse order, failed ones
(``batch_outcome(custom_id, body) != "succeeded"``) to the error file.

Usage::

    from fakes.fake_openai import FakeOpenAI
    with FakeOpenAI(latency_s=1.0, reply=my_reply_fn) as api:
        provider = OpenAIProvider(model="judge", base_url=api.base_url + "/v1")
"""
from __future__ import annotations

import email.parser
import itertools
import json
import threading
import time
from typing import Any, Callable

from fakes.images import IMAGE_TOKENS, image_count, image_problem, text_chars
from fakes.structured_check import openai_format_problem
from fakes.http_fake import FakeHTTPAPI, Latency, Reply, Response, Scripted, json_response

Outcome = Callable[[str, dict[str, Any]], str]


class FakeOpenAI(FakeHTTPAPI):
    def __init__(self, reply: Reply | None = None, latency_s: Latency = 0.0, api_key: str | None = None,
                 polls_to_end: int = 1, batch_outcome: Outcome | None = None) -> None:
        super().__init__(reply, latency_s, api_key)
        self.polls_to_end = polls_to_end
        self.batch_outcome = batch_outcome or (lambda custom_id, body: "succeeded")
        self.hold = threading.Event()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._seen_prefixes: set[str] = set()
        self._ids = itertools.count(1)

    def usage(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        msgs = body["messages"]
        system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
        total = sum(text_chars(m["content"]) for m in msgs) // 4 + 1 + IMAGE_TOKENS * image_count(msgs)
        with self._lock:
            cached = len(system) // 4 if system and system in self._seen_prefixes else 0
            self._seen_prefixes.add(system)
        return {"prompt_tokens": total, "completion_tokens": len(text) // 4 + 1,
                "total_tokens": total + len(text) // 4 + 1, "prompt_tokens_details": {"cached_tokens": cached}}

    def completion(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        return {"id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": int(time.time()),
                "model": body["model"], "choices": [{"index": 0, "finish_reason": "stop",
                                                     "message": {"role": "assistant", "content": text}}],
                "usage": self.usage(body, text)}

    def streamed(self, body: dict[str, Any], text: str) -> Response:
        """The completion as ``stream: true`` asks for it: server-sent events, the text in one chunk, then the
        finish reason, the usage (with ``stream_options.include_usage``) and ``[DONE]``."""
        head = {"id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": body["model"]}
        chunks = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                        "finish_reason": None}]},
                  {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**head, "choices": [], "usage": self.usage(body, text)})
        events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return Response(200, events.encode(), content_type="text/event-stream")

    @staticmethod
    def error_body(s: Scripted) -> dict[str, Any]:
        return {"error": {"message": f"scripted {s.status}", "type": s.error_type, "code": None, "param": None}}

    def auth_error(self) -> Response:
        return json_response(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                             "code": "invalid_api_key", "param": None}})

    # -- files and batches -------------------------------------------------------------------------
    def _upload(self, headers: dict[str, str], raw: bytes) -> Response:
        ctype = headers.get("Content-Type") or headers.get("content-type") or ""
        msg = email.parser.BytesParser().parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw)
        data = b""
        for part in msg.walk():
            if part.get_param("name", header="content-disposition") == "file":
                data = part.get_payload(decode=True) or b""
        with self._lock:
            fid = f"file-{len(self.files) + 1:04d}"
            self.files[fid] = data
        return json_response(200, {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                                   "filename": "batch.jsonl", "purpose": "batch", "status": "processed"})

    def batch_object(self, b: dict[str, Any]) -> dict[str, Any]:
        return {"id": b["id"], "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": b["input"],
                "completion_window": "24h", "status": b["status"], "created_at": int(b["created_at"]),
                "output_file_id": b.get("output"), "error_file_id": b.get("errors"),
                "request_counts": {"total": b["n"], "completed": b.get("ok", 0), "failed": b.get("failed", 0)}}

    def _complete_batch(self, b: dict[str, Any]) -> None:
        ok_lines, bad_lines = [], []
        for raw in self.files[b["input"]].decode().splitlines():
            if not raw.strip():
                continue
            line = json.loads(raw)
            if (self.batch_outcome(line["custom_id"], line["body"]) == "succeeded"
                    and not openai_format_problem(line["body"].get("response_format"))
                    and not image_problem(line["body"])):
                resp = {"status_code": 200, "request_id": "req", "body": self.completion(line["body"],
                                                                                         self.reply(line["body"]))}
                ok_lines.append({"id": "batch_req", "custom_id": line["custom_id"], "response": resp, "error": None})
            else:
                bad_lines.append({"id": "batch_req", "custom_id": line["custom_id"], "response": None,
                                  "error": {"code": "server_error", "message": "scripted item error"}})
        out_id, err_id = f"file-out-{b['id']}", f"file-err-{b['id']}"
        self.files[out_id] = "".join(json.dumps(x) + "\n" for x in reversed(ok_lines)).encode()
        b.update(status="completed", output=out_id, ok=len(ok_lines), failed=len(bad_lines))
        if bad_lines:
            self.files[err_id] = "".join(json.dumps(x) + "\n" for x in bad_lines).encode()
            b["errors"] = err_id

    def route(self, method: str, path: str, headers: dict[str, str], body: Any) -> Response:
        if method == "POST" and path == "/v1/chat/completions":
            problem = openai_format_problem(body.get("response_format")) or image_problem(body)
            if problem:  # what OpenAI answers for a malformed strict schema or image
                return json_response(400, {"error": {"message": problem, "type": "invalid_request_error",
                                                     "code": None, "param": "response_format"}})
            answer = self.streamed if body.get("stream") else (
                lambda b, text: json_response(200, self.completion(b, text)))
            return self.model_call(body, lambda text: answer(body, text),
                                   lambda s: json_response(s.status, self.error_body(s), s.headers))
        if method == "POST" and path == "/v1/files":
            return self._upload(headers, body)
        if method == "POST" and path == "/v1/batches":
            with self._lock:
                bid = f"batch_{len(self.batches) + 1:04d}"
                n = sum(1 for ln in self.files[body["input_file_id"]].decode().splitlines() if ln.strip())
                b = {"id": bid, "input": body["input_file_id"], "status": "in_progress", "created_at": time.time(),
                     "polls": 0, "n": n}
                self.batches[bid] = b
            return json_response(200, self.batch_object(b))
        if method == "GET" and path.startswith("/v1/batches/"):
            b = self.batches.get(path.rsplit("/", 1)[1])
            if b is None:
                return json_response(404, {"error": {"message": "no such batch", "type": "invalid_request_error"}})
            with self._lock:
                b["polls"] += 1
                if b["status"] == "in_progress" and not self.hold.is_set() and b["polls"] >= self.polls_to_end:
                    self._complete_batch(b)
            return json_response(200, self.batch_object(b))
        if method == "GET" and path.startswith("/v1/files/") and path.endswith("/content"):
            fid = path[len("/v1/files/"):-len("/content")]
            if fid not in self.files:
                return json_response(404, {"error": {"message": "no such file", "type": "invalid_request_error"}})
            return Response(200, self.files[fid], content_type="application/octet-stream")
        return json_response(404, {"error": {"message": f"no route {method} {path}", "type": "invalid_request_error"}})

    def model_calls(self) -> int:
        return len(self.seen("/v1/chat/completions", "POST"))
