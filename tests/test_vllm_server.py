"""serve-judge without vLLM's start-up cost: ``fakes/fake_vllm_server.py`` stands in for the
server module. Start, readiness, the printed settings (they load and build a priced provider), a
clean stop on SIGTERM (the process group is gone), and a server that dies while starting (its log
tail in the error, nothing left running). The real server runs in ``test_open_judge_vllm.py``."""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from schemas.config import load_config
from schemas.config.llm import ServerConfig
from tasks.llm import get_provider
from tasks.llm import vllm_server as vs
from fakes.open_judge import free_port

REPO = Path(__file__).resolve().parent.parent
FAKE = "fakes.fake_vllm_server"


def _model_dir(root: Path, name: str) -> Path:
    d = root / name
    d.mkdir()
    (d / "config.json").write_text("{}")
    return d


def _gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_start_settings_and_stop(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(vs, "SERVER_MODULE", FAKE)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    server = vs.VLLMServer(_model_dir(tmp_path, "judge-7b"), ServerConfig(port=free_port()), log_path=tmp_path / "s.log")
    with server:
        pid = server.proc.pid
        assert server.name == "judge-7b" and server._answers()
        sets = [part for part in shlex.split(vs.settings_line(server.base_url, server.name)) if part != "--set"]
        cfg = load_config(sets=[*sets, f"data_dir={tmp_path}"])  # the printed items are valid settings, priced
        p = get_provider(config=cfg.resolved_llm())
        assert (p.name, p.model, p.base_url, cfg.llm.price("judge-7b").output) == ("openai", "judge-7b",
                                                                                  server.base_url, 0.0)
    assert server.proc is None and _gone(pid)


def test_server_that_dies_while_starting_names_its_log(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(vs, "SERVER_MODULE", FAKE)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    server = vs.VLLMServer(_model_dir(tmp_path, "broken"), ServerConfig(port=free_port(), start_timeout_s=20),
                           log_path=tmp_path / "s.log")
    with pytest.raises(vs.ServerStartError, match="(?s)exited with code 3.*no config.json loader"):
        server.start()
    assert server.proc is None


def test_not_a_model_dir_names_the_fix(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="config.json"):
        vs.VLLMServer(tmp_path)


def test_serve_judge_prints_settings_and_stops_on_sigterm(tmp_path) -> None:
    model, port = _model_dir(tmp_path, "judge"), free_port()
    script = textwrap.dedent(f"""
        import sys
        from schemas.config.llm import ServerConfig
        from tasks.llm import vllm_server as vs
        vs.SERVER_MODULE = {FAKE!r}
        sys.exit(vs.serve_judge({str(model)!r}, ServerConfig(port={port}), log_path={str(tmp_path / 's.log')!r}))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if line.startswith("use:") or not line:
            break
    assert lines[-1].startswith("use: --set llm.provider=openai --set llm.base_url=http://127.0.0.1:"), lines
    assert "llm.model=judge" in lines[-1] and "llm.prices.judge=" in lines[-1]
    child = subprocess.run(["pgrep", "-f", f"{FAKE} .*--port {port}"], capture_output=True, text=True).stdout.split()
    assert child
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "judge server stopped" in out
    assert all(_gone(int(pid)) for pid in child)


def test_the_kv_cache_setting_wins_or_a_disagreeing_environment_is_an_error(monkeypatch) -> None:
    """VLLM_CPU_KVCACHE_SPACE in the environment never silently beats llm.server.cpu_kvcache_gb or
    train.rollout.vllm_cpu_kvcache_gb: the setting is what vLLM gets, and an exported value that disagrees
    stops the start, naming both."""
    from training.rollout import VLLMEngine

    cfg = ServerConfig(cpu_kvcache_gb=3)
    assert vs.server_env(cfg, gpu=False, environ={})["VLLM_CPU_KVCACHE_SPACE"] == "3"
    assert vs.server_env(cfg, gpu=False, environ={"VLLM_CPU_KVCACHE_SPACE": "3"})["VLLM_CPU_KVCACHE_SPACE"] == "3"
    assert "VLLM_CPU_KVCACHE_SPACE" not in vs.server_env(cfg, gpu=True, environ={})  # a GPU has no CPU cache
    with pytest.raises(ValueError, match=r"VLLM_CPU_KVCACHE_SPACE=8 .*llm\.server\.cpu_kvcache_gb=3"):
        vs.server_env(cfg, gpu=False, environ={"VLLM_CPU_KVCACHE_SPACE": "8"})
    for name in ("VLLM_ENABLE_V1_MULTIPROCESSING", "OMP_NUM_THREADS"):  # the engine sets them: restore after
        monkeypatch.setenv(name, os.environ.get(name, "1"))
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "8")
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(ValueError, match=r"VLLM_CPU_KVCACHE_SPACE=8 .*train\.rollout\.vllm_cpu_kvcache_gb=1"):
        VLLMEngine("no-model", 8, 1.0, 64, cpu_kvcache_gb=1)  # refused before vLLM is imported or a model read
