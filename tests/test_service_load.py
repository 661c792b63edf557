"""The reward service held under load and stopped by SIGTERM, as a user starts it (``rubricrl serve-env`` in its
own process), through the bench at a small scale (``bench/bench_serve_env.py`` prints the full-size figures):
no request lost or answered twice, every answer equal to the same response scored alone, the judge bound never
exceeded (counted at the fake API and in the service), SIGTERM answers the requests in flight and refuses new
ones; and the refusal to listen beyond loopback without a token."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO

CLIENTS, LIMIT, REQUESTS = 16, 4, 64  # four rounds of every client: the full size is the bench's


def test_load_on_loopback_loses_nothing_and_holds_the_judge_bound(tmp_path):
    out = tmp_path / "load.json"
    proc = subprocess.run([sys.executable, "bench/bench_serve_env.py", "--requests", str(REQUESTS),
                           "--clients", str(CLIENTS), "--latency-s", "0.02", "--judge-concurrency", str(LIMIT), "--max-seconds", "240",
                           "--json", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    f = json.loads(out.read_text())
    assert (f["lost"], f["answered_twice"], f["wrong"]) == (0, 0, 0), f["wrong_examples"]
    assert f["requests"] == REQUESTS and f["p50_s"] <= f["p99_s"]
    assert 1 <= f["judge_peak_api"] <= LIMIT and f["judge_peak_service"] <= LIMIT
    assert f["judge_calls_api"] == f["judged_items"]  # cache off: every app with HTML reached the judge, once
    assert {"valid", "format_invalid", "source_invalid"} <= set(f["tiers"]) and f["rewards_missing"] == 0
    s = f["sigterm"]
    # the signal came while every request was being handled and items of them scored
    assert s["requests_at_signal"] == CLIENTS and s["items_in_flight_at_signal"] > 0
    assert s["finished"] == CLIENTS and s["refused"] == 1 and s["other"] == [] and s["exit_code"] == 0


def test_serve_env_refuses_a_non_loopback_address_without_a_token():
    env = {k: v for k, v in os.environ.items() if k != "RUBRICRL_SERVICE_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "rubricrl.cli", "serve-env", "--host", "0.0.0.0", "--port", "1"],
                          cwd=REPO, env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "0.0.0.0 is not a loopback address" in proc.stderr and "$RUBRICRL_SERVICE_TOKEN" in proc.stderr
    assert "bind 127.0.0.1" in proc.stderr
