"""The real chain: Prefect server, `prefect deploy`, process worker, `prefect deployment run`."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.stages.store import StageStore

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


@pytest.mark.timeout(600)
def test_deployment_runs_through_server_and_worker(tmp_path):
    port = _free_port()
    data = tmp_path / "data"
    env = dict(os.environ, PREFECT_HOME=str(tmp_path / "prefect"), RUBRICRL_DATA_DIR=str(data),
               PREFECT_API_URL=f"http://127.0.0.1:{port}/api", RUBRICRL_SYNTH__N_QUERIES="60",
               PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    serve = subprocess.run([str(BIN / "rubricrl"), "serve", "--port", str(port), "--no-wait"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
    try:
        assert serve.returncode == 0, serve.stdout + serve.stderr
        ls = subprocess.run([sys.executable, "-c", _LIST_DEPLOYMENTS], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=60)
        assert ls.returncode == 0, ls.stderr[-3000:]
        assert ls.stdout.split() == expected_deployments()  # every deployment of prefect.yaml, nothing else
        run = subprocess.run([str(BIN / "prefect"), "deployment", "run", "synthesize-queries/demo", "--watch",
                              "--watch-timeout", "400"], cwd=REPO, env=env, capture_output=True, text=True, timeout=460)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "Completed" in run.stdout + run.stderr
        man = StageStore(data).manifest("queries")
        assert man is not None and man.row_count == 60 and man.provider == "offline"
    finally:
        subprocess.run([str(BIN / "rubricrl"), "serve", "--stop"], cwd=REPO, env=env, timeout=60)
