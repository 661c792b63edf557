"""Episodes through the RL-stack interfaces (``rubricrl.environments``) beside ``rubricrl score`` of the same apps.

Over the project's fixture tasks (published in a temporary data directory), the offline judge and the real
browser, a scripted policy answers each query with a broken app and then its fixed version:

- ``rubricrl score``: each app scored alone in this process by the command's code (``score_response``, a
  browser per call, as one ``rubricrl score`` run does);
- ``verifiers``: ``load_environment(split="all")`` evaluated with the scripted policy behind the real
  ``openai`` SDK and the local fake API (``fakes/fake_openai.py``), ``--concurrency`` rollouts at once;
- ``openenv``: ``rubricrl serve-openenv`` started as a user starts it (its own process), ``--concurrency``
  client threads running episodes over the OpenEnv WebSocket client.

Single-turn episodes write the broken app only; 3-turn ones write broken, broken, fixed. Prints, per
interface and episode length: episodes, wall time, episodes/s, step latency p50 / p99 (one app scored:
the scorer's call for verifiers, ``client.step`` for OpenEnv), and how many step rewards differ from the
same app's ``rubricrl score`` reward. Asserts nothing.

Run: ``.venv/bin/python bench/bench_environments.py [--episodes 12] [--concurrency 4]``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import _safe  # noqa: F401 - the repo on sys.path, no paid call by accident

import pyarrow as pa  # noqa: E402
from bench_serve_env import free_port, pool, publish_references, wait_healthy  # noqa: E402

from tasks.stages.store import StageStore, fingerprint  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# per query: (broken app, fixed app), indices into bench_serve_env.pool()'s pairs
SCRIPTS = {"q-counter": (1, 0), "q-button": (6, 5), "q-key": (8, 7), "q-quiz": (10, 9)}


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))] if xs else math.nan


def episode_apps(turns: int) -> dict[str, list[str]]:
    _tasks, pairs = pool()
    apps = {q: (pairs[b][1], pairs[f][1]) for q, (b, f) in SCRIPTS.items()}
    return {q: [broken] if turns == 1 else [broken, broken, fixed] for q, (broken, fixed) in apps.items()}


def publish(data: Path) -> None:
    tasks, _pairs = pool()
    publish_references(data, tasks)
    query = {t.query_id: t.query for t in tasks}
    table = pa.table({"query_id": list(SCRIPTS), "query": [query[q] for q in SCRIPTS]})
    build = StageStore(data).begin("rl_queries", fingerprint(rows=table.num_rows), table.schema)
    build.write_part("all", table)
    build.publish(provider="bench", config_hash="bench", inputs={}, config={}, validation={})


def score_alone(project: Any, apps: dict[str, list[str]]) -> tuple[dict[tuple[str, str], float | None], list[float]]:
    """Each distinct app by ``rubricrl score``'s code, alone: its reward and the time it took."""
    from rubricrl.score_cmd import score_output
    from tasks.env.score import score_response
    from tasks.llm import get_provider

    provider, tasks = get_provider("offline"), {t.query_id: t for t in pool()[0]}
    rewards, times = {}, []
    for q, texts in apps.items():
        for text in dict.fromkeys(texts):
            t0 = time.perf_counter()
            result = score_response(tasks[q], text, provider=provider, cfg=project.env)
            times.append(time.perf_counter() - t0)
            rewards[(q, text)] = score_output(result, text, None, None, project.attribution)["reward"]
    return rewards, times


class TimedScorer:
    """The scorer with each call's time kept (a verifiers step)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.times, self.seen = inner, [], []
        self._lock = threading.Lock()

    def score(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        t0 = time.perf_counter()
        out = self.inner.score(items)
        with self._lock:
            self.times.append(time.perf_counter() - t0)
            self.seen += [(it["query_id"], it["response"], a["reward"]) for it, a in zip(items, out)]
        return out


def run_verifiers(project: Any, apps: dict[str, list[str]], episodes: int, concurrency: int) -> dict[str, Any]:
    from openai import AsyncOpenAI

    from fakes.fake_openai import FakeOpenAI
    from rubricrl.adapters.client import scorer_for
    from rubricrl.environments.verifiers import load_environment

    turns = max(len(v) for v in apps.values())
    scorer = TimedScorer(scorer_for(project))
    env = load_environment(split="rl_queries", sets=[f"data_dir={project.data_dir}", "llm.provider=offline"],
                           scorer=scorer, max_turns=turns)
    queries = {t.query: q for q, t in env.tasks.items()}

    def reply(body: dict[str, Any]) -> str:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        q = next(q for text, q in queries.items() if text in users[0])
        return apps[q][min(len(users), len(apps[q])) - 1]

    rows = env.dataset.to_list()
    inputs = [rows[i % len(rows)] for i in range(episodes)]
    with FakeOpenAI(reply=reply) as api:
        def generate(batch: list[dict[str, Any]]) -> Any:  # a client per call: generate_sync runs a loop of its own
            client = AsyncOpenAI(base_url=api.base_url + "/v1", api_key="bench", max_retries=0)
            return env.generate_sync(batch, client=client, model="scripted", max_concurrent=concurrency)

        generate(inputs[:len(rows)])  # warm: the browser's first pages, the judge's rules
        scorer.times.clear()
        scorer.seen.clear()
        t0 = time.perf_counter()
        out = generate(inputs)
        wall = time.perf_counter() - t0
    errors = sum(s.get("error") is not None for s in out["state"])
    return {"episodes": len(out["state"]), "wall_s": wall, "steps": scorer.times, "seen": scorer.seen,
            "errors": errors}


def start_server(data: Path, port: int, turns: int) -> subprocess.Popen:
    """``rubricrl serve-openenv`` as a user starts it, over ``data`` with the offline judge."""
    env = {**os.environ, "RUBRICRL_DATA_DIR": str(data), "RUBRICRL_LLM__PROVIDER": "offline", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "rubricrl.cli", "serve-openenv", "--port", str(port),
                             "--max-turns", str(turns), "--set", "environments.max_sessions=64"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return wait_healthy(proc, port, "rubricrl serve-openenv", 300.0)


def run_openenv(data: Path, apps: dict[str, list[str]], episodes: int, concurrency: int) -> dict[str, Any]:
    from rubricrl.environments.openenv import AppAction, RubricEnvClient

    turns = max(len(v) for v in apps.values())
    port = free_port()
    proc = start_server(data, port, turns)
    url = f"http://127.0.0.1:{port}"
    steps, seen, lock = [], [], threading.Lock()
    order = [list(apps)[i % len(apps)] for i in range(episodes)]

    def worker(queries: list[str]) -> None:
        with RubricEnvClient(url) as env:
            for q in queries:
                env.reset(query_id=q)
                for app in apps[q]:
                    t0 = time.perf_counter()
                    r = env.step(AppAction(app=app))
                    with lock:
                        steps.append(time.perf_counter() - t0)
                        seen.append((q, app, r.reward))
                    if r.done:
                        break

    try:
        worker(list(apps))  # warm: the browser's first pages, the judge's rules
        steps.clear()
        seen.clear()
        t0 = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as ex:
            list(ex.map(worker, [order[i::concurrency] for i in range(concurrency)]))
        wall = time.perf_counter() - t0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    return {"episodes": episodes, "wall_s": wall, "steps": steps, "seen": seen, "errors": 0}


def row(name: str, r: dict[str, Any], alone: dict[tuple[str, str], float | None]) -> dict[str, Any]:
    differ = sum(1 for q, app, reward in r["seen"] if alone.get((q, app)) != reward)
    return {"interface": name, "episodes": r["episodes"], "wall_s": round(r["wall_s"], 2),
            "episodes_per_s": round(r["episodes"] / r["wall_s"], 3), "steps": len(r["steps"]),
            "step_p50_s": round(percentile(r["steps"], 0.5), 3), "step_p99_s": round(percentile(r["steps"], 0.99), 3),
            "rewards_differing_from_score": differ, "errors": r["errors"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=12)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--json", default=None, help="write the figures here")
    a = ap.parse_args()
    from schemas.config import load_config

    rows = []
    with tempfile.TemporaryDirectory(prefix="rubricrl-bench-envs-") as tmp:
        data = Path(tmp) / "data"
        publish(data)
        os.environ["RUBRICRL_DATA_DIR"] = str(data)
        project = load_config(sets=[f"data_dir={data}", "llm.provider=offline"])
        alone, times = score_alone(project, episode_apps(3))
        rows.append({"interface": "rubricrl score (alone)", "episodes": None, "wall_s": round(sum(times), 2),
                     "episodes_per_s": None, "steps": len(times), "step_p50_s": round(percentile(times, 0.5), 3),
                     "step_p99_s": round(percentile(times, 0.99), 3), "rewards_differing_from_score": 0, "errors": 0})
        for turns in (1, 3):
            apps = episode_apps(turns)
            rows.append(row(f"verifiers {turns}-turn", run_verifiers(project, apps, a.episodes, a.concurrency), alone))
            rows.append(row(f"openenv {turns}-turn", run_openenv(data, apps, a.episodes, a.concurrency), alone))
    cols = list(rows[0])
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join("-" if r[c] is None else str(r[c]) for c in cols))
    print(f"(cpu count {os.cpu_count()}; offline judge; browser on; concurrency {a.concurrency})")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
