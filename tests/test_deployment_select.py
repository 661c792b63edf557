"""The nightly re-selection deployment: its cron schedule (time zone explicit) is visible with
``prefect deployment inspect`` on a local server, the scheduler has queued 02:00 UTC runs, and a
scheduled run of it completes through the process worker."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.stages.store import StageStore
from tests.fixtures.policy_data import build_references
from tests.test_deployment import _free_port

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


@pytest.mark.timeout(900)
def test_nightly_select_schedule_visible_and_scheduled_run_completes(tmp_path, prefect_harness):
    port = _free_port()
    data = tmp_path / "data"
    build_references(data)  # in-process stage builds: on the harness's server, not a stray ephemeral one
    # The nightly runs the full profile; here it probes 4 candidates x 2 short samples of the tiny model.
    env = dict(os.environ, PREFECT_HOME=str(tmp_path / "prefect"), RUBRICRL_DATA_DIR=str(data),
               PREFECT_API_URL=f"http://127.0.0.1:{port}/api", RUBRICRL_SELECTION__MAX_CANDIDATES="4",
               RUBRICRL_SELECTION__PROBE_SAMPLES="2", RUBRICRL_SELECTION__PROBE_MAX_NEW_TOKENS="16",
               RUBRICRL_SELECTION__PROBE_MAX_PROMPT_TOKENS="512", RUBRICRL_ENV__RUNTIME__ENABLED="false",
               PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    run = lambda *a, t=120: subprocess.run(list(a), cwd=REPO, env=env, capture_output=True, text=True,  # noqa: E731
                                           timeout=t)
    serve = run(str(BIN / "rubricrl"), "serve", "--port", str(port), "--no-wait", t=300)
    try:
        assert serve.returncode == 0, serve.stdout + serve.stderr
        inspect = run(str(BIN / "prefect"), "deployment", "inspect", "select-rl-queries/nightly")
        assert inspect.returncode == 0, inspect.stdout + inspect.stderr
        flat = inspect.stdout.replace("\n", " ")
        assert "0 2 * * *" in flat and "UTC" in flat and "'profile': 'full'" in flat, inspect.stdout
        started = run(str(BIN / "prefect"), "deployment", "run", "select-rl-queries/nightly", "--start-in",
                      "5 seconds", "--watch", "--watch-timeout", "500", t=560)
        assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
        assert "Scheduled" in started.stdout and "Completed" in started.stdout + started.stderr
        man = StageStore(data).manifest("rl_queries")
        assert man is not None and man.stats["policy_kind"] == "tiny-random" and man.stats["candidates"] == 4
        runs = run(str(BIN / "python"), "-c", _SCHEDULED_RUNS)
        assert runs.returncode == 0, runs.stderr
        upcoming = json.loads(runs.stdout)
        assert upcoming and all(t.endswith("02:00:00+00:00") for t in upcoming), upcoming
    finally:
        run(str(BIN / "rubricrl"), "serve", "--stop", t=60)


_SCHEDULED_RUNS = """
import asyncio, json
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName, FlowRunFilter, FlowRunFilterState, FlowRunFilterStateName

async def main():
    async with get_client() as c:
        dep = await c.read_deployment_by_name("select-rl-queries/nightly")
        for _ in range(30):
            runs = await c.read_flow_runs(deployment_filter=DeploymentFilter(id={"any_": [dep.id]}),
                flow_run_filter=FlowRunFilter(state=FlowRunFilterState(name=FlowRunFilterStateName(any_=["Scheduled"]))))
            auto = [r for r in runs if r.auto_scheduled]
            if auto:
                break
            await asyncio.sleep(2)
        print(json.dumps(sorted(r.expected_start_time.astimezone(__import__("datetime").timezone.utc).isoformat() for r in auto)))

asyncio.run(main())
"""
