"""Streamed scoring and one-step-off-policy rollouts in the GRPO trainer (tiny model, CPU, transformers engine).

- streamed == serial: rewards, token weights, losses and final weights equal on the same seed, although the
  scores come back out of order (``jittery_reward``); the timing split is recorded (serial: no overlap);
- kill -9 mid-step (a score call of step 2 hanging) and resume == the uninterrupted streamed run;
- off-policy: the run completes, ``rollout/staleness`` is 0 then 1, the importance ratios are logged (1 on the
  fresh step, off 1 on stale ones); a resume from a checkpoint taken while the next batch was in flight
  regenerates that batch from the checkpoint's weights: staleness 0 (docs/training.md, "One-step-off-policy rollouts").
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from training.config import demo_config
from training.grpo import run_grpo
from fakes.stream_scorers import jittery_reward

REPO = Path(__file__).resolve().parent.parent
ROLLOUT = {"queries_per_step": 2, "group_size": 4, "max_new_tokens": 8, "instruction": "Write one HTML file."}
RUN = {"steps": 2, "save_every": 1}


def _cfg(out: Path, rollout: dict | None = None, run: dict | None = None):
    return demo_config(rollout={**ROLLOUT, **(rollout or {})}, deepspeed={"micro_batch_size": 8}, optim={"lr": 1e-2},
                       run={**RUN, "out_dir": str(out), "score_fn": "fakes.stream_scorers:jittery_reward",
                            **(run or {})})


def _rows(out: Path) -> list[dict]:
    rows = pq.read_table(out / "records" / "rollouts").to_pylist()
    return sorted(rows, key=lambda r: (r["step"], r["group_id"], r["sample"]))


def _weights(out: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(out / "final_model" / "model.safetensors"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("stream")
    serial = run_grpo(_cfg(root / "serial", {"stream_scoring": False}), jittery_reward)
    streamed = run_grpo(_cfg(root / "streamed"), jittery_reward)
    return root, serial, streamed


def test_streamed_equals_serial(runs):
    root, serial, streamed = runs
    keys = ("reward/mean", "loss/policy", "loss/ratio_mean", "weights/mean", "loss/tokens")
    assert [[h[k] for k in keys] for h in streamed["history"]] == [[h[k] for k in keys] for h in serial["history"]]
    a, b = _rows(root / "serial"), _rows(root / "streamed")
    fields = ("response_ids", "logprobs", "reward", "advantage", "token_weights", "informative")
    assert [[r[f] for f in fields] for r in b] == [[r[f] for f in fields] for r in a]
    assert len({r["reward"] for r in a}) > 2  # the rewards differ, so an out-of-order merge would show
    wa, wb = _weights(root / "serial"), _weights(root / "streamed")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    for h in streamed["history"] + serial["history"]:
        assert h["time/score_s"] >= h["time/score_tail_s"] >= 0 and h["time/generate_s"] > 0
        assert h["time/overlap_s"] == pytest.approx(h["time/score_s"] - h["time/score_tail_s"], abs=1e-6)
        assert h["rollout/staleness"] == 0
    assert all(h["time/overlap_s"] == 0 for h in serial["history"])


def test_kill_mid_step_then_resume_equals_uninterrupted(runs, tmp_path):
    root, _, streamed = runs
    out, marker = tmp_path / "killed", tmp_path / "stalled"
    sets = [f"train.rollout.{k}={v}" for k, v in ROLLOUT.items()] + [
        "train.deepspeed.micro_batch_size=8", "train.optim.lr=0.01", "train.run.steps=2", "train.run.save_every=1",
        f"train.run.out_dir={out}", "train.run.score_fn=fakes.stream_scorers:stalling_reward"]
    cmd = [sys.executable, "-m", "training", "--profile", "demo"] + [a for s in sets for a in ("--set", s)]
    # the in-process runs of this session set a rendezvous port for their own process group; the job needs its own
    env = {k: v for k, v in os.environ.items() if k not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE",
                                                           "LOCAL_RANK")}
    env.update(STALL_STEP="2", STALL_MARKER=str(marker), PYTHONPATH=str(REPO))
    log = open(tmp_path / "job.log", "wb")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 300
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, (tmp_path / "job.log").read_text(errors="replace")[-3000:]
    os.killpg(proc.pid, signal.SIGKILL)  # mid-step: step 2 generated, one score call in flight
    proc.wait()
    log.close()
    assert not (out / "final_model").exists() and (out / "checkpoints" / "step_000001").exists()
    resumed = run_grpo(_cfg(out, run={"resume": True}), jittery_reward)
    assert resumed["start_step"] == 1 and resumed["steps_run"] == 1
    assert resumed["history"][0]["loss/policy"] == streamed["history"][1]["loss/policy"]
    assert [r for r in _rows(out) if r["step"] == 2] == [r for r in _rows(root / "streamed") if r["step"] == 2]
    wa, wb = _weights(root / "streamed"), _weights(out)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_off_policy_records_staleness_and_ratios_and_resumes_fresh(tmp_path):
    out = tmp_path / "off"
    summary = run_grpo(_cfg(out, {"off_policy": True}, {"steps": 3}), jittery_reward)
    hist = summary["history"]
    assert [h["rollout/staleness"] for h in hist] == [0, 1, 1]
    assert hist[0]["loss/ratio_mean"] == pytest.approx(1.0, abs=1e-3)  # sampled by the weights it updates
    assert all(abs(h["loss/ratio_mean"] - 1.0) > 1e-3 and h["loss/ratio_max"] > 1.0 for h in hist[1:])
    # the checkpoint after step 2 was written while step 3's batch was already generated (and being scored):
    # that batch is not in the checkpoint, so a run resumed there regenerates it with the checkpoint's weights
    shutil.rmtree(out / "checkpoints" / "step_000003")
    resumed = run_grpo(_cfg(out, {"off_policy": True}, {"steps": 3, "resume": True}), jittery_reward)
    assert resumed["start_step"] == 2 and [h["rollout/staleness"] for h in resumed["history"]] == [0]
    assert resumed["history"][0]["loss/ratio_mean"] == pytest.approx(1.0, abs=1e-3)
    steps = pq.read_table(out / "records" / "train_steps").to_pylist()
    assert {(r["step"], r["value"]) for r in steps if r["metric"] == "rollout/staleness"} == {(1, 0), (2, 1), (3, 0)}


def test_off_policy_without_streaming_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="stream_scoring=true"):
        run_grpo(_cfg(tmp_path, {"off_policy": True, "stream_scoring": False}), jittery_reward)


def test_the_tail_starts_when_the_last_group_is_generated_not_when_a_worker_takes_it():
    """With one worker, the second group waits for the first call: that wait is scoring the step still owes
    after generation, so it belongs to the tail (sleeps are lower bounds, whatever the machine's load)."""
    from training.rollout import Rollout
    from training.stream import ScoreStream

    def slow(prompts, responses, token_ids, **ctx):
        time.sleep(0.5)
        return [0.0] * len(responses), [[0] * len(t) for t in token_ids], {}

    class Tok:
        def decode(self, ids, skip_special_tokens=True):
            return "x" * len(ids)

    stream = ScoreStream(slow, Tok(), {"step": 1}, workers=1)
    for i in range(2):
        stream.submit([{"query": "q", "query_id": f"q{i}"}], [Rollout([1], [2, 3], [-1.0, -1.0], True)], [i])
    stream.generation_done()
    scored, timing = stream.finish()
    assert scored.rewards == [0.0, 0.0]
    assert timing["score_tail_s"] >= 0.95, timing  # both calls after the last arrival; 0.5 if the wait were left out
