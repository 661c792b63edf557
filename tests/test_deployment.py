"""The real chain: Prefect server, `prefect deploy`, process worker, `prefect deployment run`.

One `rubricrl serve` (server, work pool, every deployment, worker) for the module: the README's demo
deployment runs on it, and so does a scheduled run of the nightly re-selection, whose cron schedule
(time zone explicit) is visible with ``prefect deployment inspect`` and whose 02:00 UTC runs the
scheduler has queued. The worker's environment holds the settings of both runs (each names only its
own flow's section); the nightly run gets its own data directory through the process worker's ``env``
job variable, so neither run sees the other's stages."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.stages.store import StageStore
from fakes.policy_data import build_references
from tests.conftest import SERVICES_OFF

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


_LIST_DEPLOYMENTS = """
import asyncio
from prefect.client.orchestration import get_client
async def main():
    async with get_client() as c:
        flows = {f.id: f.name for f in await c.read_flows()}
        print("\\n".join(sorted(f"{flows[d.flow_id]}/{d.name}" for d in await c.read_deployments())))
asyncio.run(main())
"""


def expected_deployments() -> list[str]:
    """``flow-name/deployment`` for every deployment in prefect.yaml (flow names from the entrypoints)."""
    import importlib

    import yaml

    out = []
    for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]:
        module, fn = d["entrypoint"].split(":")
        flow = getattr(importlib.import_module(module.removesuffix(".py").replace("/", ".")), fn)
        out.append(f"{flow.name}/{d['name']}")
    return sorted(out)


def test_expected_deployments_are_the_readme_ones():
    """The twin of the listing check: the expected set is what the README promises (not derived from the server)."""
    got = expected_deployments()
    assert len(got) == len(set(got)) and {"synthesize-queries/demo", "build-rubrics/nightly",
                                           "select-rl-queries/nightly", "score-rollouts/demo"} <= set(got)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """A running `rubricrl serve --no-wait` and the environment its worker was started with."""

    def __init__(self, root: Path):
        port = _free_port()
        self.data = root / "data"  # the worker's data directory: the demo deployment writes here
        # The synthesis run makes 60 queries; the nightly runs the full profile, here it probes 4 candidates x 2
        # short samples of the tiny model.
        full = {k: v for k, v in os.environ.items() if k not in SERVICES_OFF}  # every service, as users run it
        self.env = dict(full, PREFECT_HOME=str(root / "prefect"), RUBRICRL_DATA_DIR=str(self.data),
                        PREFECT_API_URL=f"http://127.0.0.1:{port}/api", RUBRICRL_SYNTH__N_QUERIES="60",
                        RUBRICRL_SELECTION__MAX_CANDIDATES="4", RUBRICRL_SELECTION__PROBE_SAMPLES="2",
                        RUBRICRL_SELECTION__PROBE_MAX_NEW_TOKENS="16",
                        RUBRICRL_SELECTION__PROBE_MAX_PROMPT_TOKENS="512", RUBRICRL_ENV__RUNTIME__ENABLED="false",
                        # the worker asks for due runs every 2 s instead of every 10 s: the same pick-up, sooner
                        PREFECT_WORKER_QUERY_SECONDS="2", PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
        self.serve = self.run(str(BIN / "rubricrl"), "serve", "--port", str(port), "--no-wait", t=300)

    def run(self, *args: str, t: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=REPO, env=self.env, capture_output=True, text=True, timeout=t)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    s = Served(tmp_path_factory.mktemp("served"))
    try:
        yield s
    finally:
        s.run(str(BIN / "rubricrl"), "serve", "--stop", t=60)


@pytest.mark.timeout(600)
def test_deployment_runs_through_server_and_worker(served):
    assert served.serve.returncode == 0, served.serve.stdout + served.serve.stderr
    ls = served.run(sys.executable, "-c", _LIST_DEPLOYMENTS, t=60)
    assert ls.returncode == 0, ls.stderr[-3000:]
    assert ls.stdout.split() == expected_deployments()  # every deployment of prefect.yaml, nothing else
    run = served.run(str(BIN / "prefect"), "deployment", "run", "synthesize-queries/demo", "--watch",
                     "--watch-timeout", "400", t=460)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Completed" in run.stdout + run.stderr
    man = StageStore(served.data).manifest("queries")
    assert man is not None and man.row_count == 60 and man.provider == "offline"


_ARTIFACT = """
import asyncio
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
async def main():
    async with get_client() as c:
        arts = await c.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["build-rubrics-summary"])))
        print(arts[-1].data if arts else "")
asyncio.run(main())
"""
RUBRIC_STAGES = ("expansions", "requirements", "modules", "rubric_candidates", "rubric_references", "rubric_checks",
                 "rubric_items")


@pytest.mark.timeout(600)
def test_readme_build_rubrics_demo_deployment_completes_and_its_artifact_names_the_stages(served):
    """The README's second way in: `make serve`, then `prefect deployment run build-rubrics/demo --watch`."""
    assert served.serve.returncode == 0, served.serve.stdout + served.serve.stderr
    if StageStore(served.data).manifest("queries") is None:  # this test alone: the queries it builds on first
        syn = served.run(str(BIN / "prefect"), "deployment", "run", "synthesize-queries/demo", "--watch",
                         "--watch-timeout", "400", t=460)
        assert syn.returncode == 0, syn.stdout[-3000:] + syn.stderr[-3000:]
    run = served.run(str(BIN / "prefect"), "deployment", "run", "build-rubrics/demo", "--watch",
                     "--watch-timeout", "400", t=460)
    assert run.returncode == 0 and "Completed" in run.stdout + run.stderr, run.stdout[-3000:] + run.stderr[-3000:]
    items = StageStore(served.data).manifest("rubric_items")
    assert items is not None and items.provider == "offline" and items.row_count > 0
    art = served.run(sys.executable, "-c", _ARTIFACT, t=60)
    assert art.returncode == 0, art.stderr[-3000:]
    assert art.stdout.startswith("# build-rubrics"), art.stdout[:500]
    missing = [s for s in RUBRIC_STAGES if f"| {s} |" not in art.stdout]
    assert not missing, (missing, art.stdout[:2000])


@pytest.mark.timeout(900)
def test_nightly_select_schedule_visible_and_scheduled_run_completes(served, tmp_path, prefect_harness):
    assert served.serve.returncode == 0, served.serve.stdout + served.serve.stderr
    data = tmp_path / "data"
    build_references(data)  # in-process stage builds: on the harness's server, not a stray ephemeral one
    inspect = served.run(str(BIN / "prefect"), "deployment", "inspect", "select-rl-queries/nightly")
    assert inspect.returncode == 0, inspect.stdout + inspect.stderr
    flat = inspect.stdout.replace("\n", " ")
    assert "0 2 * * *" in flat and "UTC" in flat and "'profile': 'full'" in flat, inspect.stdout
    started = served.run(str(BIN / "prefect"), "deployment", "run", "select-rl-queries/nightly", "--start-in",
                         "5 seconds", "--job-variable", "env=" + json.dumps({"RUBRICRL_DATA_DIR": str(data)}),
                         "--watch", "--watch-timeout", "500", t=560)
    assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
    assert "Scheduled" in started.stdout and "Completed" in started.stdout + started.stderr
    man = StageStore(data).manifest("rl_queries")
    assert man is not None and man.stats["policy_kind"] == "tiny-random" and man.stats["candidates"] == 4
    runs = served.run(str(BIN / "python"), "-c", _SCHEDULED_RUNS)
    assert runs.returncode == 0, runs.stderr
    upcoming = json.loads(runs.stdout)
    assert upcoming and all(t.endswith("02:00:00+00:00") for t in upcoming), upcoming


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
