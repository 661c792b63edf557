"""``rubricrl serve``: a local Prefect server (SQLite, 127.0.0.1), the process work pool, every
deployment from ``prefect.yaml``, and a worker. ``--no-wait`` leaves them running in the
background (PIDs in ``<PREFECT_HOME>/rubricrl-serve.json``); ``rubricrl serve --stop`` ends them.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _prefect() -> str:
    exe = Path(sys.executable).parent / "prefect"
    return str(exe) if exe.exists() else (shutil.which("prefect") or "prefect")


def _env(port: int) -> dict[str, str]:
    env = dict(os.environ)
    env["PREFECT_API_URL"] = f"http://127.0.0.1:{port}/api"
    env.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "rubricrl")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _home(env: dict[str, str]) -> Path:
    home = Path(env.get("PREFECT_HOME", Path.home() / ".prefect"))
    home.mkdir(parents=True, exist_ok=True)
    return home


def _wait_healthy(port: int, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the Prefect server exited with code {proc.returncode}; see its log")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the Prefect server did not answer on 127.0.0.1:{port} within {timeout_s:.0f}s")


def _run(args: list[str], env: dict[str, str]) -> None:
    res = subprocess.run(args, env=env, cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({res.returncode}):\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")


def stop(env: dict[str, str] | None = None) -> int:
    env = env or dict(os.environ)
    pidfile = _home(env) / "rubricrl-serve.json"
    if not pidfile.exists():
        print("nothing to stop")
        return 0
    for pid in json.loads(pidfile.read_text()).values():
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    pidfile.unlink()
    return 0


def _terminate(signum: int, _frame: object) -> None:
    # a service manager stops us with SIGTERM: unwind like Ctrl-C so the finally block stops server and worker
    raise KeyboardInterrupt(f"signal {signum}")


def serve(port: int = 4200, pool: str = "rubricrl-process", once: bool = False) -> int:
    if not once:
        signal.signal(signal.SIGTERM, _terminate)
    env = _env(port)
    home = _home(env)
    logs = home / "logs"
    logs.mkdir(exist_ok=True)
    prefect = _prefect()
    server = subprocess.Popen([prefect, "server", "start", "--host", "127.0.0.1", "--port", str(port)], env=env,
                              cwd=REPO, stdout=open(logs / "server.log", "ab"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    worker = None
    pidfile = home / "rubricrl-serve.json"
    pidfile.write_text(json.dumps({"server": server.pid}))  # `serve --stop` works from the first second on
    try:
        _wait_healthy(port, server)
        _run([prefect, "work-pool", "create", pool, "--type", "process", "--overwrite"], env)
        _run([prefect, "--no-prompt", "deploy", "--all"], env)
        worker = subprocess.Popen([prefect, "worker", "start", "--pool", pool], env=env, cwd=REPO,
                                  stdout=open(logs / "worker.log", "ab"), stderr=subprocess.STDOUT,
                                  start_new_session=True)
        pidfile.write_text(json.dumps({"server": server.pid, "worker": worker.pid}))
        print(f"Prefect UI: http://127.0.0.1:{port}  (logs in {logs})")
        print(f"Run a deployment: PREFECT_API_URL={env['PREFECT_API_URL']} prefect deployment run synthesize-queries/demo")
        if once:
            return 0
        print("Ctrl-C stops the server and the worker.")
        while server.poll() is None and worker.poll() is None:
            time.sleep(1)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        if not once:
            for p in (worker, server):
                if p is not None and p.poll() is None:
                    os.killpg(p.pid, signal.SIGTERM)
            pidfile.unlink(missing_ok=True)
