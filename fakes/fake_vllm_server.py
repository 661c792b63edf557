"""Stands in for ``vllm.entrypoints.openai.api_server`` in the serve-judge tests: takes the same
arguments, answers ``GET /v1/models`` with the served name after a short start, exits 3 at once
for a model path containing "broken" (a server that dies while starting). SIGTERM ends it."""
from __future__ import annotations

import argparse
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--served-model-name")
    ap.add_argument("--host")
    ap.add_argument("--port", type=int)
    args, _rest = ap.parse_known_args()
    if "broken" in args.model:
        print("ValueError: no config.json loader for this model", flush=True)
        return 3
    time.sleep(0.5)
    body = json.dumps({"object": "list", "data": [{"id": args.served_model_name, "object": "model"}]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
