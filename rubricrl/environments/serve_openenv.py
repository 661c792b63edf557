"""``rubricrl serve-openenv``: the package's OpenEnv server (``rubricrl_webapp.openenv``, on the current ``openenv``)
run by uvicorn in its own environment, ``.envs/openenv`` (``make envs``: openenv's ``mcp<2`` cannot sit in this
venv), over this project's published queries, relaying every app to a running ``rubricrl serve-env``.

It writes the split's tasks as ``rubricrl export-tasks`` lines to a temporary file and hands the server the rest
through the variables its ``app_from_env`` reads: the service's URL (``service.url``, else ``service.host`` and
``service.port``), the token (``service.token_env``: asked of every request, as ``serve-env`` does, and sent on
to the service), ``environments.max_turns``, ``sample_timeout_s`` and ``max_sessions``. The bind rule is
``serve-env``'s.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path

from schemas.config import Config

# `make envs` makes it in the checkout; the package's server runs nowhere else
OPENENV_BIN = Path(__file__).resolve().parents[2] / ".envs" / "openenv" / "bin"
APP = "rubricrl_webapp.openenv:app_from_env"


def missing_environment() -> str:
    return (f"rubricrl serve-openenv runs the package's OpenEnv server in {OPENENV_BIN.parent}, which is not there: "
            f"run `make envs` first (or, in any environment with openenv and the package: `uvicorn --factory {APP}`; "
            "docs/environments.md)")


def server_env(project: Config, tasks_file: Path, token: str | None) -> dict[str, str]:
    """The variables ``rubricrl_webapp.openenv.app_from_env`` reads (pure but for ``os.environ``)."""
    svc, env = project.service, project.environments
    out = {**os.environ, "RUBRICRL_TASKS": str(tasks_file),
           "RUBRICRL_SERVICE__URL": svc.url or f"http://{svc.host}:{svc.port}",
           "RUBRICRL_MAX_TURNS": str(env.max_turns), "RUBRICRL_SAMPLE_TIMEOUT_S": str(env.sample_timeout_s),
           "RUBRICRL_MAX_SESSIONS": str(env.max_sessions)}
    out.pop("RUBRICRL_OPENENV_TOKEN", None)
    if token:
        out.update(RUBRICRL_SERVICE_TOKEN=token, RUBRICRL_OPENENV_TOKEN=token)
    return out


def serve_openenv(project: Config, split: str = "rl_queries", benchmark: str | None = None) -> int:
    """Start the package's server (uvicorn in ``.envs/openenv``) until it stops; 2 when that environment is missing."""
    from rubricrl.environments.episode import load_split
    from rubricrl.export_tasks import task_lines
    from rubricrl.service.server import check_bind

    if not (OPENENV_BIN / "uvicorn").exists():
        print(missing_environment(), flush=True)
        return 2
    svc, env = project.service, project.environments
    token = os.environ.get(svc.token_env) or None
    check_bind(svc.host, token, svc.token_env)
    tasks = load_split(project, split, benchmark)
    with tempfile.TemporaryDirectory(prefix="rubricrl-openenv-") as tmp:
        tasks_file = Path(tmp) / "tasks.jsonl"
        tasks_file.write_text("".join(line + "\n" for line in task_lines(tasks)), encoding="utf-8")
        variables = server_env(project, tasks_file, token)
        print(f"rubricrl serve-openenv: http://{svc.host}:{env.openenv_port}  {len(tasks)} queries  "
              f"max_turns={env.max_turns}  scoring via {variables['RUBRICRL_SERVICE__URL']}  "
              f"token={'required' if token else 'none (loopback)'}", flush=True)
        server = subprocess.Popen([str(OPENENV_BIN / "uvicorn"), "--factory", APP, "--host", svc.host,
                                   "--port", str(env.openenv_port), "--log-level", "warning"], env=variables)
        stopped_by: list[int] = []

        def stop(signum: int, _frame: object) -> None:  # a stop of this process is the server's: uvicorn drains
            stopped_by.append(signum)
            server.send_signal(signum)

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, stop)
        code = server.wait()
        # uvicorn ends by the signal it drained on: a stop asked for, a normal exit
        return 0 if stopped_by and code in (0, -stopped_by[0]) else code
