"""Load on ``rubricrl serve-env``: many concurrent clients on 127.0.0.1, every answer checked.

The service runs as a user starts it (``rubricrl serve-env`` in its own process) over published tasks (the
project's fixture tasks) with the judge behind the real anthropic SDK against the local fake API
(``fakes/``, ``--latency-s`` per call, the LLM cache off so every item reaches the judge; nothing is
billed), or the offline judge (``--judge offline``); the browser off by default (``--browser`` on).

1. Each distinct (task, response) of the pool is scored alone (one request, one item, a quiet server).
2. ``--clients`` threads send ``--requests`` requests in all (1 to 3 items each, drawn from the pool), each
   within ``--max-seconds``. Checked per request: answered once with 200, one answer per item in item
   order, each answer equal to the same response scored alone (``engine.verdict``: measured times aside).
3. SIGTERM with ``--clients`` requests in flight: how long until the listener refused new connections, how
   many finished with a whole answer, whether a request sent after that was refused, the exit code.

Prints requests, items, wall time, throughput, request latency p50 / p99, lost / answered twice / wrong,
the judge's peak calls in flight as the fake API saw them and as the service counted them against
``env.judge.concurrency``, and the SIGTERM outcome, with ``uptime``. Asserts nothing; ``--json PATH``
writes the figures (``tests/test_service_load.py`` runs it small and checks them).

Run: ``.venv/bin/python bench/bench_serve_env.py [--requests 2000] [--clients 32] [--judge-concurrency 8]``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _safe  # noqa: F401 - the repo on sys.path, no paid call by accident

import httpx  # noqa: E402
import pyarrow as pa  # noqa: E402

from rubricrl.service.engine import verdict  # noqa: E402
from schemas.rubric import Task  # noqa: E402
from tasks.stages.store import StageStore, fingerprint  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures" / "env"
COUNTER = ("clean.txt", "throws.txt", "no_html.txt", "syntax_error.txt", "truncated.txt")
APPS = {"button": ("button_wired.html", "button_unwired.html"), "key": ("key_ok.html", "key_throws.html"),
        "quiz": ("quiz_ok.txt", "quiz_throws.txt"), "form": ("form_prevented.html", "form_reload.html")}
SIGTERM_JUDGE_S = 1.0  # judge work in flight at the signal: with each item's own checks, the drain has items left to finish


def pool() -> tuple[list[Task], list[tuple[str, str]]]:
    """The fixture tasks and (query id, response) pairs: real apps of every tier."""
    inter = json.loads((FIX / "interaction/tasks.json").read_text())
    tasks = [Task.model_validate_json((FIX / "task_counter.json").read_text()),
             *(Task.model_validate(inter[n]) for n in APPS)]
    pairs = [("q-counter", (FIX / n).read_text()) for n in COUNTER]
    for name, files in APPS.items():
        for f in files:
            text = (FIX / "interaction" / f).read_text()
            pairs.append((inter[name]["query_id"], text if f.endswith(".txt") else f"```html\n{text}```\n"))
    return tasks, pairs


def publish_references(data: Path, tasks: list[Task]) -> None:
    """The ``rubric_references`` rows the service resolves query ids against (what build-rubrics publishes)."""
    table = pa.table({"query_id": [t.query_id for t in tasks], "status": ["ok"] * len(tasks),
                      "expanded_query": [t.query for t in tasks],
                      "compact_json": [t.rubric.model_dump_json() for t in tasks]})
    build = StageStore(data).begin("rubric_references", fingerprint(rows=table.num_rows), table.schema)
    build.write_part("all", table)
    build.publish(provider="bench", config_hash="bench", inputs={}, config={}, validation={})


def fake_judge(latency_s: float) -> Any:
    """The fake Anthropic API answering judge prompts (it counts its peak calls in flight)."""
    from fakes.fake_anthropic import FakeAnthropic
    from fakes.judge_replies import diagnosis_reply

    return FakeAnthropic(latency_s=latency_s, reply=diagnosis_reply).start()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_service(data: Path, port: int, args: argparse.Namespace, judge: Any) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "RUBRICRL_DATA_DIR": str(data),
           "RUBRICRL_ENV__JUDGE__CONCURRENCY": str(args.judge_concurrency),
           "RUBRICRL_ENV__RUNTIME__ENABLED": "true" if args.browser else "false", "RUBRICRL_LLM__CACHE": "false"}
    if judge is None:
        env["RUBRICRL_LLM__PROVIDER"] = "offline"
    else:  # a dummy key for the local fake: nothing leaves this machine
        env.update({"RUBRICRL_LLM__PROVIDER": "anthropic", "RUBRICRL_LLM__BASE_URL": judge.base_url,
                    "ANTHROPIC_API_KEY": "bench-local-fake"})
    proc = subprocess.Popen([str(REPO / ".venv/bin/rubricrl"), "serve-env", "--port", str(port)], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return wait_healthy(proc, port, "rubricrl serve-env")


def wait_healthy(proc: subprocess.Popen, port: int, name: str, limit_s: float = 120.0) -> subprocess.Popen:
    """``proc`` once it answers ``GET /health`` on ``port`` (its stdout piped: shown if it exits first)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited ({proc.returncode}):\n{proc.stdout.read()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{name} did not answer /health within {limit_s:g} s")


def request_items(i: int, pairs: list[tuple[str, str]]) -> list[int]:
    """Which pool pairs request ``i`` carries: 1 to 3, spread over the pool (pure)."""
    return [(i * 7 + j * 3) % len(pairs) for j in range(1 + i % 3)]


def run_load(url: str, pairs: list[tuple[str, str]], expected: list[dict[str, Any]], n: int, clients: int,
             max_seconds: float) -> dict[str, Any]:
    """``n`` requests from ``clients`` threads; every answer checked against ``expected`` (the pool alone)."""
    answered = [0] * n
    latency: list[float] = []
    wrong: list[str] = []
    lock = threading.Lock()
    next_i = iter(range(n))
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        with httpx.Client(base_url=url, timeout=max_seconds) as http:
            while time.monotonic() < deadline:
                with lock:
                    i = next(next_i, None)
                if i is None:
                    return
                picks = request_items(i, pairs)
                body = {"items": [{"query_id": pairs[p][0], "response": pairs[p][1]} for p in picks]}
                t0 = time.perf_counter()
                try:
                    r = http.post("/score", json=body)
                except httpx.HTTPError as e:
                    with lock:
                        wrong.append(f"request {i}: {type(e).__name__}: {e}")
                    continue
                took = time.perf_counter() - t0
                problem = check(i, r, picks, expected)
                with lock:
                    answered[i] += 1
                    latency.append(took)
                    if problem:
                        wrong.append(problem)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    latency.sort()
    picks = [p for i in range(n) for p in request_items(i, pairs)]
    return {"requests": n, "items": len(picks), "wall_s": round(wall, 2),
            "judged_items": sum(expected[p]["judge"].get("provider") is not None for p in picks),
            "lost": answered.count(0), "answered_twice": sum(a > 1 for a in answered), "wrong": len(wrong),
            "wrong_examples": wrong[:5], "p50_s": round(quantile(latency, 0.5), 4),
            "p99_s": round(quantile(latency, 0.99), 4)}


def check(i: int, r: httpx.Response, picks: list[int], expected: list[dict[str, Any]]) -> str | None:
    if r.status_code != 200:
        return f"request {i}: HTTP {r.status_code}: {r.text[:200]}"
    results = r.json()["results"]
    if [a["index"] for a in results] != list(range(len(picks))):
        return f"request {i}: answers for items {[a['index'] for a in results]}, sent {len(picks)}"
    for a, p in zip(results, picks):
        if verdict(a) != expected[p]:
            where = ", ".join(first_differences(verdict(a), expected[p]))
            return f"request {i}: item {a['index']} (pool {p}) differs from the same response scored alone at {where}"
    return None


def first_differences(a: Any, b: Any, path: str = "", out: list[str] | None = None) -> list[str]:
    """Where two answers differ (the first few paths; pure)."""
    out = [] if out is None else out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            first_differences(a.get(k), b.get(k), f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for n, (x, y) in enumerate(zip(a, b)):
            first_differences(x, y, f"{path}[{n}]", out)
    elif a != b:
        out.append(f"{path} ({str(a)[:60]!r} vs {str(b)[:60]!r})")
    return out[:3]


def quantile(xs: list[float], q: float) -> float:
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return float("nan")


def listener_closed_after(url: str, max_seconds: float) -> float:
    """Seconds from now until a new connection to the service is refused. The signal's handler runs when the
    service's event loop next turns, which on a loaded machine is later than any fixed wait (a request sent
    0.3 s after the signal was once accepted and answered), so the late request waits for this instead."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    start = time.monotonic()
    while time.monotonic() - start < max_seconds:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
        except ConnectionRefusedError:
            return round(time.monotonic() - start, 3)
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"the service still accepted connections {max_seconds:g} s after SIGTERM")


def sigterm_in_flight(proc: subprocess.Popen, url: str, pairs: list[tuple[str, str]], args: argparse.Namespace
                      ) -> dict[str, Any]:
    """SIGTERM once the service is handling all ``args.clients`` requests and scoring their items (each the pool,
    repeated so the judge alone needs some ``SIGTERM_JUDGE_S`` for them all): whole answers, refusals after it,
    the exit code."""
    outcomes: list[str] = []
    lock = threading.Lock()
    clients, max_seconds = args.clients, args.max_seconds
    judge_s = args.latency_s * clients * len(pairs) / args.judge_concurrency if args.judge == "fake" else 0.0
    repeat = max(1, math.ceil(SIGTERM_JUDGE_S / judge_s)) if judge_s else 1
    body = {"items": [{"query_id": q, "response": r} for q, r in pairs] * repeat}

    def send() -> None:
        try:
            r = httpx.post(f"{url}/score", json=body, timeout=max_seconds)
            ok = r.status_code == 200 and len(r.json()["results"]) == len(body["items"])
            outcome = "finished" if ok else f"HTTP {r.status_code}"
        except httpx.ConnectError:
            outcome = "refused"
        except httpx.HTTPError as e:
            outcome = f"broken: {type(e).__name__}"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=send) for _ in range(clients)]
    for t in threads:
        t.start()
    deadline, in_flight, handling = time.monotonic() + 60, 0.0, 0.0
    while time.monotonic() < deadline:  # every request being handled, and items of them queued or being scored
        text = httpx.get(f"{url}/metrics", timeout=10).text
        in_flight = metric(text, "rubricrl_service_items_queued") + metric(text, "rubricrl_service_items_running")
        handling = metric(text, 'rubricrl_service_requests_in_progress{route="score"}')
        with lock:
            done = len(outcomes)
        if (handling >= clients and in_flight > 0) or done == clients:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    closed_after_s = listener_closed_after(url, max_seconds)
    late = threading.Thread(target=send)  # a request that comes after the listener closed
    late.start()
    for t in [*threads, late]:
        t.join()
    code = proc.wait(timeout=max_seconds)
    return {"sent": len(outcomes), "items_in_flight_at_signal": in_flight, "requests_at_signal": handling,
            "listener_closed_after_s": closed_after_s, "finished": outcomes.count("finished"),
            "refused": outcomes.count("refused"),
            "other": [o for o in outcomes if o not in ("finished", "refused")], "exit_code": code}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--judge", choices=("fake", "offline"), default="fake")
    ap.add_argument("--latency-s", type=float, default=0.05, help="the fake judge's seconds per call")
    ap.add_argument("--judge-concurrency", type=int, default=8, help="env.judge.concurrency of the service")
    ap.add_argument("--browser", action="store_true", help="check every app in headless Chromium too")
    ap.add_argument("--max-seconds", type=float, default=900.0, help="the load's time bound")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()

    tasks, pairs = pool()
    judge = fake_judge(args.latency_s) if args.judge == "fake" else None
    with tempfile.TemporaryDirectory(prefix="bench-serve-env-") as tmp:
        data = Path(tmp) / "data"
        publish_references(data, tasks)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_service(data, port, args, judge)
        try:
            alone = [httpx.post(f"{url}/score", json={"items": [{"query_id": q, "response": r}]},
                                timeout=300).json()["results"][0] for q, r in pairs]
            expected = [verdict(a) for a in alone]
            calls_before = judge.model_calls() if judge else 0
            load = run_load(url, pairs, expected, args.requests, args.clients, args.max_seconds)
            text = httpx.get(f"{url}/metrics", timeout=10).text
            load.update({"tiers": sorted({a["tier"] for a in alone}), "judge_limit": args.judge_concurrency,
                         "judge_peak_service": metric(text, "rubricrl_judge_in_flight_peak"),
                         "judge_peak_api": judge.peak_in_flight if judge else None,
                         "judge_calls_api": judge.model_calls() - calls_before if judge else None,
                         "rewards_missing": sum(metric(text, f'rubricrl_service_rewards_missing_total{{cause="{c}"}}')
                                                for c in ("judge", "failed", "timeout"))})
            load["sigterm"] = sigterm_in_flight(proc, url, pairs, args)
        finally:
            if proc.poll() is None:
                proc.kill()
            if judge is not None:
                judge.stop()
    report(load, args)
    if args.json is not None:
        args.json.write_text(json.dumps(load, indent=2))
    return 0


def report(f: dict[str, Any], args: argparse.Namespace) -> None:
    up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    judge = (f"fake Anthropic API (real SDK, {args.latency_s:g} s per call, cache off)" if args.judge == "fake"
             else "offline")
    print(f"bench_serve_env  ({up})")
    print(f"  judge: {judge}; browser: {'on' if args.browser else 'off'}; clients: {args.clients}")
    print(f"  pool: {len(pool()[1])} responses alone, tiers {', '.join(f['tiers'])}")
    print(f"  load: {f['requests']} requests, {f['items']} items in {f['wall_s']} s "
          f"({f['requests'] / f['wall_s']:.1f} req/s, {f['items'] / f['wall_s']:.1f} items/s)")
    print(f"  request latency: p50 {f['p50_s']:.3f} s, p99 {f['p99_s']:.3f} s")
    print(f"  lost {f['lost']}, answered twice {f['answered_twice']}, differing from alone {f['wrong']}; "
          f"rewards missing {f['rewards_missing']:g}")
    for w in f["wrong_examples"]:
        print(f"    {w}")
    print(f"  judge calls in flight: peak {f['judge_peak_api']} at the API, {f['judge_peak_service']:g} in the "
          f"service; env.judge.concurrency {f['judge_limit']}; calls {f['judge_calls_api']}")
    s = f["sigterm"]
    print(f"  SIGTERM with {args.clients} requests sent ({s['items_in_flight_at_signal']:g} items in flight): "
          f"listener closed after {s['listener_closed_after_s']:g} s; {s['finished']} finished whole, "
          f"{s['refused']} refused after it, other {s['other']}; "
          f"exit code {s['exit_code']}")


if __name__ == "__main__":
    raise SystemExit(main())
