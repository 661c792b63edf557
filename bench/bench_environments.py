"""Episodes through the package's stack interfaces (environments/rubricrl_webapp, each in its ``make envs``
environment) beside ``rubricrl score`` of the same apps.

Over the project's fixture tasks, the offline judge and the real browser: ``rubricrl serve-env`` runs as a user
starts it (its own process) and a scripted policy answers each query with a broken app and then its fixed
version:

- ``rubricrl score``: each app scored alone in this process by the command's code (a browser per call);
- ``skyrl``: ``skyrl_gym.make("rubricrl-webapp")`` stepped in .envs/skyrl;
- ``openenv``: the package's OpenEnv server (uvicorn) and its async client, in .envs/openenv;
- ``trl``: the ``environment_factory`` class's ``submit_app`` tool, in .envs/trl (the calls GRPOTrainer makes);

``--concurrency`` episodes at once (threads) in each. The verifiers environment is not here: ``vf-eval``'s own
start (its chat program, a model endpoint) would dominate, and its step is the same ``POST /score`` call.
Single-turn episodes write the broken app only; 3-turn ones write broken, broken, fixed. Prints, per interface
and episode length: episodes, wall time, episodes/s, step latency p50 / p99 (one app scored), and how many step
rewards differ from the same app's ``rubricrl score`` reward. Asserts nothing.

Run: ``make envs`` once, then ``.venv/bin/python bench/bench_environments.py [--episodes 12] [--concurrency 4]``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import _safe  # noqa: F401 - the repo on sys.path, no paid call by accident

import pyarrow as pa  # noqa: E402
from bench_serve_env import free_port, pool, publish_references, start_service  # noqa: E402

from tasks.stages.store import StageStore, fingerprint  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
STACKS = ("skyrl", "openenv", "trl")
# per query: (broken app, fixed app), indices into bench_serve_env.pool()'s pairs
SCRIPTS = {"q-counter": (1, 0), "q-button": (6, 5), "q-key": (8, 7), "q-quiz": (10, 9)}

# run by a stack's Python: episodes of (query, apps) at `concurrency`, each step timed; prints steps as JSON
DRIVER = r"""
import asyncio, json, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
stack, url, tasks, episodes, concurrency = json.loads(sys.stdin.read())

def skyrl(q, apps):
    import skyrl_gym
    env = skyrl_gym.make("rubricrl-webapp", env_config={"service_url": url},
                         extras={"reward_spec": {"task": tasks[q]}, "max_turns": len(apps)})
    env.init([])
    for app in apps:
        t0 = time.perf_counter()
        out = env.step(app)
        yield app, env.get_metrics()[f"turn_{env.turns}_reward"], time.perf_counter() - t0
        if out["done"]:
            return

def trl(q, apps):
    from rubricrl_webapp.trl import WebAppToolEnv
    env = WebAppToolEnv(service_url=url)
    env.reset(task=tasks[q], max_turns=len(apps))
    for app in apps:
        t0 = time.perf_counter()
        env.submit_app(app)
        yield app, env._rewards[-1], time.perf_counter() - t0
        if env._done:
            return

def openenv(q, apps):
    from rubricrl_webapp.openenv import AppAction, WebAppClient
    async def run():
        out = []
        async with WebAppClient(base_url=BASE) as env:
            await env.reset(query_id=q)
            for app in apps:
                t0 = time.perf_counter()
                r = await env.step(AppAction(app=app))
                out.append((app, r.reward, time.perf_counter() - t0))
                if r.done:
                    break
        return out
    yield from asyncio.run(run())

if stack == "skyrl":
    from rubricrl_webapp.skyrl import register
    register()
if stack == "openenv":
    import uvicorn
    from rubricrl_webapp.openenv import build_app
    rows = [{"task": t, "prompt": []} for t in tasks.values()]
    server = uvicorn.Server(uvicorn.Config(build_app(rows, url, None, max_turns=3), host="127.0.0.1", port=0,
                                           log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    BASE = "http://127.0.0.1:%d" % server.servers[0].sockets[0].getsockname()[1]
run = {"skyrl": skyrl, "trl": trl, "openenv": openenv}[stack]

def episode(item):
    q, apps = item
    return [(q, app, reward, s) for app, reward, s in run(q, apps)]

for warm in episodes[:len(tasks)]:  # the browser's first pages, the judge's rules
    episode(warm)
t0 = time.perf_counter()
with ThreadPoolExecutor(concurrency) as ex:
    steps = [s for e in ex.map(episode, episodes) for s in e]
print(json.dumps({"wall_s": time.perf_counter() - t0, "steps": steps}))
"""


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


def run_stack(stack: str, url: str, apps: dict[str, list[str]], episodes: int, concurrency: int) -> dict[str, Any]:
    """``episodes`` episodes through ``stack``'s interface, in its own environment (.envs/<stack>)."""
    tasks = {t.query_id: t.model_dump(mode="json") for t in pool()[0] if t.query_id in apps}
    order = [(q, apps[q]) for q in [list(apps)[i % len(apps)] for i in range(episodes)]]
    done = subprocess.run([str(REPO / ".envs" / stack / "bin" / "python"), "-c", DRIVER], capture_output=True,
                          text=True, input=json.dumps([stack, url, tasks, order, concurrency]), timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{stack}: {done.stderr[-3000:]}")
    out = json.loads(done.stdout.splitlines()[-1])
    return {"episodes": episodes, "wall_s": out["wall_s"], "steps": [s[3] for s in out["steps"]],
            "seen": [(q, app, reward) for q, app, reward, _s in out["steps"]], "errors": 0}


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
        port = free_port()
        service = start_service(data, port, argparse.Namespace(judge_concurrency=8, browser=True), None)
        try:
            for turns in (1, 3):
                apps = episode_apps(turns)
                for stack in STACKS:
                    r = run_stack(stack, f"http://127.0.0.1:{port}", apps, a.episodes, a.concurrency)
                    rows.append(row(f"{stack} {turns}-turn", r, alone))
        finally:
            service.send_signal(signal.SIGTERM)
            service.wait(timeout=120)
    cols = list(rows[0])
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join("-" if r[c] is None else str(r[c]) for c in cols))
    print(f"(cpu count {os.cpu_count()}; offline judge; browser on; concurrency {a.concurrency})")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
