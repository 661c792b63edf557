"""The package's OpenEnv server and async client on the current ``openenv`` package, in its own environment
(.envs/openenv: openenv 0.10, whose mcp<2 cannot sit beside verifiers 0.4): the server, uvicorn in that
environment, relays each app to the reward service on 127.0.0.1 (the real browser, the offline judge) and lists
its tasks; the client is OpenEnv's async EnvClient with the token as ``headers=``. A 2-turn episode: the first
step's reward equals ``rubricrl score`` alone and its feedback is what the service found; the fix scores
higher and ends the episode; a request without the token is refused; a missing reward is None, never a 0.
``rubricrl serve-openenv`` runs that server from .envs/openenv over the project's published queries (its own
process, as a user starts it), and without .envs/openenv says how to make it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from rubricrl.export_tasks import task_lines
from tasks.llm import get_provider
from tests.fixtures.environments import BROKEN, FIXED, STACKS, in_stack, offline_service
from tests.fixtures.service import alone, fixture_tasks

pytestmark = pytest.mark.skipif(not (STACKS / "openenv").exists(), reason="no .envs/openenv: run `make envs`")
TASK = next(t for t in fixture_tasks() if t.query_id == "q-counter")

# the OpenEnv server (uvicorn in a thread) and one episode through the async client, in .envs/openenv
EPISODE = """
import asyncio, json, sys, threading, time
import httpx, uvicorn
from rubricrl_webapp.openenv import AppAction, WebAppClient, build_app
url, rows, apps = json.loads(sys.stdin.read())
server = uvicorn.Server(uvicorn.Config(build_app(rows, url, None, max_turns=2, server_token="s3cret"),
                                       host="127.0.0.1", port=0, log_level="warning"))
threading.Thread(target=server.run, daemon=True).start()
while not server.started:
    time.sleep(0.05)
base = "http://127.0.0.1:%d" % server.servers[0].sockets[0].getsockname()[1]
auth = {"Authorization": "Bearer s3cret"}
out = {"refused": httpx.post(base + "/rubricrl-webapp/tasks", json={"split": "all"}).status_code,
       "tasks": httpx.post(base + "/rubricrl-webapp/tasks", json={"split": "all"}, headers=auth).json()}

async def episode():
    async with WebAppClient(base_url=base, headers=auth) as env:
        first = await env.reset(query_id="q-counter")
        steps = [(await env.step(AppAction(app=a))) for a in apps]
        return first, steps

first, steps = asyncio.run(episode())
out["prompt"] = first.observation.prompt
out["steps"] = [{"reward": s.reward, "done": s.done, "feedback": s.observation.feedback,
                 "error": s.observation.error} for s in steps]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    with offline_service(tmp_path_factory.mktemp("openenv") / "data") as running:
        yield running


def episode(url: str, apps: list[str]) -> dict:
    return in_stack("openenv", EPISODE, [url, [json.loads(line) for line in task_lines([TASK])], apps])


def test_two_turn_episode_through_the_async_client_with_the_token_as_headers(svc):
    out = episode(svc.url, [BROKEN, FIXED])
    assert out["refused"] == 401
    assert out["tasks"]["tasks"] == [{"index": 0, "query_id": "q-counter", "query": TASK.query}]
    assert out["prompt"] == json.loads(task_lines([TASK])[0])["prompt"]
    offline = get_provider("offline")
    broken = alone(svc.engine.project, TASK, BROKEN, offline)["reward"]
    fixed = alone(svc.engine.project, TASK, FIXED, offline)["reward"]
    first, second = out["steps"]
    assert first["reward"] == pytest.approx(broken) and not first["done"]
    assert first["feedback"].startswith(f"Your app scored {broken:g}") and "TypeError" in first["feedback"]
    assert second["reward"] == pytest.approx(fixed) and second["done"] and fixed > broken


def test_a_missing_reward_is_none_and_ends_the_episode():
    out = episode("http://127.0.0.1:9", [FIXED])  # nothing listens there: no answer from the service
    [step] = out["steps"]
    assert step["reward"] is None and step["done"] and "gave no answer" in step["error"]


# one step through OpenEnv's async client against a running server, in .envs/openenv
STEP = """
import asyncio, json, sys
from rubricrl_webapp.openenv import AppAction, WebAppClient
base, app = json.loads(sys.stdin.read())

async def one():
    async with WebAppClient(base_url=base) as env:
        await env.reset(query_id="q-counter")
        return await env.step(AppAction(app=app))

r = asyncio.run(one())
print(json.dumps({"reward": r.reward, "done": r.done, "feedback": r.observation.feedback}))
"""


def test_rubricrl_serve_openenv_runs_the_package_server_over_the_published_queries(svc, unused_port):
    repo = STACKS.parent
    env = {**os.environ, "PYTHONPATH": str(repo)}
    env.pop("RUBRICRL_SERVICE_TOKEN", None)
    sets = [f"data_dir={svc.engine.project.data_dir}", f"service.url={svc.url}", "environments.max_turns=2",
            f"environments.openenv_port={unused_port}"]
    proc = subprocess.Popen([sys.executable, "-m", "rubricrl.cli", "serve-openenv", "--split", "all",
                             *[a for kv in sets for a in ("--set", kv)]], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    base = f"http://127.0.0.1:{unused_port}"
    try:
        deadline = time.monotonic() + 300  # the command and its server start under load: a minute here
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "late"
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        listed = httpx.post(base + "/rubricrl-webapp/tasks", json={"split": "all"}).json()["tasks"]
        assert {t["query_id"] for t in listed} == {t.query_id for t in fixture_tasks()}
        # OpenEnv's own CLI judges the running server by its HTTP profile (its `serve` is not implemented in
        # 0.10, and validating the package directory builds a Docker image: docs/environments.md)
        said = subprocess.run([str(STACKS / "openenv" / "bin" / "openenv"), "validate", "--url", base, "--json"],
                              capture_output=True, text=True, timeout=120)
        report = json.loads(said.stdout)
        assert report["passed"] and not report["summary"]["failed_criteria"], said.stdout
        meta = httpx.get(base + "/metadata").json()
        assert meta["name"] == "rubricrl-webapp" and "rubric" in meta["description"], meta
        step = in_stack("openenv", STEP, [base, BROKEN])
        broken = alone(svc.engine.project, TASK, BROKEN, get_provider("offline"))["reward"]
        assert step["reward"] == pytest.approx(broken) and not step["done"] and "TypeError" in step["feedback"]
    finally:
        proc.terminate()  # the command hands the stop to its uvicorn, which drains
        try:
            stopped = proc.wait(timeout=60)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # whatever of its session is left
            except ProcessLookupError:
                pass
    assert stopped == 0


def test_rubricrl_serve_openenv_without_its_environment_says_how_to_make_it(monkeypatch, tmp_path, capsys):
    from rubricrl.environments import serve_openenv
    from schemas.config import load_config

    monkeypatch.setattr(serve_openenv, "OPENENV_BIN", tmp_path / "none" / "bin")
    assert serve_openenv.serve_openenv(load_config(sets=[f"data_dir={tmp_path}"])) == 2
    said = capsys.readouterr().out
    assert "make envs" in said and "uvicorn --factory rubricrl_webapp.openenv:app_from_env" in said


@pytest.fixture
def unused_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
