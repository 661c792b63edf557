"""Message Batches through the real SDKs against the fakes (Anthropic Message Batches and the OpenAI
Batch API): lifecycle with out-of-order results and one errored item resubmitted once through the
normal path, splitting by request and byte limits, resume after ``kill -9`` during polling, and the
batch discount in the ledger."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tasks.llm.batch import split_batches
from tasks.llm.cache import CallStore
from fakes.llm_fixtures import request
from fakes.llm_wire import KEY_ENV, SECRET, Wire, make_wire

REPO = Path(__file__).resolve().parent.parent
KINDS = ["anthropic", "openai"]
ERRORED_N = 3


def errored_item(custom_id: str, params: dict) -> str:
    users = [m for m in params["messages"] if m["role"] == "user"]
    text = users[0]["content"] if isinstance(users[0]["content"], str) else users[0]["content"][0]["text"]
    return "errored" if f"n={ERRORED_N}." in text else "succeeded"


@pytest.fixture(params=KINDS)
def wire(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    w = make_wire(request.param, tmp_path, monkeypatch, batch_outcome=errored_item, polls_to_end=2)
    yield w
    w.api.stop()


def batch_creates(wire: Wire) -> int:
    return len(wire.api.seen("/v1/messages/batches" if wire.kind == "anthropic" else "/v1/batches", "POST"))


def test_split_batches_respects_both_limits() -> None:
    groups, too_big = split_batches([10, 10, 10, 50, 200, 10], max_requests=2, max_bytes=60)
    assert groups == [[0, 1], [2, 3], [5]] and too_big == [4]
    assert split_batches([], 5, 5) == ([], [])


def test_batch_lifecycle_out_of_order_with_one_errored_item(wire: Wire) -> None:
    p = wire.provider()
    reqs = [request(i) for i in range(6)]
    results = p.complete_bulk(reqs, poll_interval_s=0.01)
    assert [r.output.n for r in results] == list(range(6))  # matched by custom_id despite reversed results
    assert batch_creates(wire) == 1
    assert wire.model_calls() == 1  # the errored item, resubmitted once through the normal path
    rows = {r["key"]: r for r in p.store.ledger_rows()}
    assert not rows[f"row-{ERRORED_N}"]["batch"] and rows[f"row-{ERRORED_N}"]["cost_usd"] > 0
    batched = [r for k, r in rows.items() if k != f"row-{ERRORED_N}"]
    assert all(r["batch"] and not r["cached"] and r["cost_usd"] > 0 and r["latency_s"] > 0 for r in batched)
    # billed at the batch discount: half the normal price of the same tokens
    normal = p.complete(request(100))
    assert batched[0]["cost_usd"] < normal.cost_usd
    assert [b["status"] for b in p.store.batches()] == ["ended"]
    # a second run is pure cache: nothing new reaches the server and nothing is billed twice
    before = len(wire.api.log)
    again = wire.provider().complete_bulk(reqs, poll_interval_s=0.01)
    assert len(wire.api.log) == before and all(r.cached and r.cost_usd == 0 for r in again)


def test_batches_split_by_request_limit(wire: Wire) -> None:
    from schemas.config.llm import BatchConfig

    p = wire.provider(batch=BatchConfig(max_requests=2, poll_interval_s=0.01))
    results = p.complete_bulk([request(i) for i in range(10, 15)])
    assert all(r.ok for r in results) and batch_creates(wire) == 3 and wire.model_calls() == 0


def test_resume_after_kill_during_polling(wire: Wire) -> None:
    wire.api.hold.set()  # batches stay in progress until released
    env = {**os.environ, KEY_ENV[wire.kind]: SECRET, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "fakes.bulk_client", wire.kind, wire.base_url,
                             str(wire.store_path), "8"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    status_path = "/v1/messages/batches/" if wire.kind == "anthropic" else "/v1/batches/"
    deadline = time.monotonic() + 60
    while len(wire.api.seen(status_path, "GET")) < 3:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the client never polled"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL and batch_creates(wire) == 1
    with CallStore(wire.store_path) as store:
        assert [b["status"] for b in store.batches()] == ["open"] and store.batches()[0]["n_items"] == 8
    wire.api.hold.clear()
    p = wire.provider()
    results = p.complete_bulk([request(i) for i in range(8)], poll_interval_s=0.01)
    assert [r.output.n for r in results] == list(range(8))
    assert batch_creates(wire) == 1  # resumed polling, never resubmitted
    assert wire.model_calls() == 1  # only the errored item, through the normal path
    assert sum(r.batch for r in results) == 7
