"""Streamed scoring through the real score-step flow: the real browser, the real attribution and the real
Anthropic SDK against the fake server (fakes/), one ScoreStream over three parts (one worker, so the
scripted faults land on known parts):

- part 0 (two valid apps): one of its two judge calls gets a 500 -> that response's reward is missing
  (judge_failed), the other's is scored;
- part 1: the browser is killed as the part starts (a crash mid-stream), then its first judge call hangs past
  the stream's timeout -> the part's rewards are missing and the stream does not wait for the hang; when the
  hung call returns after all (the fake ends its delays when it stops), the part's late records are dropped,
  not published for rewards the step counted missing;
- part 2: scored normally after both faults (the relaunched browser loaded its apps): nothing else lost.

Also: ``env.judge.concurrency`` bounds judge calls in flight across concurrent score calls of one process.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from schemas.layout import RUN_RECORDS
from tasks.attribution.tokens import load_tokenizer
from training.rollout import Rollout
from training.stream import ScoreStream
from fakes.fake_anthropic import FakeAnthropic
from fakes.http_fake import Scripted
from tests.test_score_step_weights import APP, BROKEN, DEFAULTS
from tests.test_score_step_weights import _run_dir as run_dir_with

REPO = Path(__file__).resolve().parent.parent
TIMEOUT_S, HANG_S = 20.0, 240.0  # a normal part takes a few seconds; the hang is far past the timeout


def _diagnosis(body) -> str:
    layer = lambda name: {"name": name, "critical": [], "major": [], "minor": []}  # noqa: E731
    return json.dumps({k: layer(k) for k in ("static_check", "code_simulation", "rubric_alignment")})


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    import sys

    sys.path.insert(0, str(REPO / "tests" / "fixtures" / "attribution"))
    from make_tokenizer import byte_level

    return byte_level(tmp_path_factory.mktemp("tok"))


def _run_dir(root: Path, base_url: str) -> Path:
    return run_dir_with(root, DEFAULTS, ("llm.provider=anthropic", f"llm.base_url={base_url}", "llm.retry.max_retries=0",
                                         f"llm.store_path={root / 'llm.sqlite'}", "env.judge.concurrency=2",
                                         "env.checks.enabled=false"))


def test_judge_failure_hang_and_browser_crash_mid_stream(prefect_harness, tmp_path, tokenizer_dir, monkeypatch):
    from flows.score_step import score_step_flow
    from tasks.rl.step_run import step_run
    from tasks.env.runtime import shared_runtime

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    tok = load_tokenizer(tokenizer_dir)
    with FakeAnthropic(reply=_diagnosis) as api:
        run = _run_dir(tmp_path, api.base_url)
        runtime = shared_runtime(step_run(str(run)).cfg.env.runtime)
        restarts0 = runtime.restarts

        def scorer(*args, **ctx):
            if ctx["part"] == 0:
                api.push(Scripted(status=500))
            if ctx["part"] == 1:
                for pid in runtime.browser_pids():
                    os.kill(pid, 9)
                api.push(Scripted(delay_s=HANG_S))
            return score_step_flow(*args, **ctx)

        stream = ScoreStream(scorer, tok, {"step": 1, "rank": 0, "model_path": str(tokenizer_dir), "out_dir": str(run)},
                             workers=1, timeout_s=TIMEOUT_S)
        t0 = time.monotonic()
        for part in range(3):  # unique texts (no cache hits); part 0: two valid apps (a judge failure on either
            # is a missing reward; a broken app's reward is set by the gates, with or without the judge)
            second = APP.replace("Counter display", "Counter display B") if part == 0 else BROKEN
            texts = [APP.replace("Counter display", f"Counter display {part}"), second + f"\n<!-- {part} -->"]
            rollouts = [Rollout([1, 2], tok.encode(t).ids, [-1.0] * len(tok.encode(t).ids), True) for t in texts]
            stream.submit([{"query_id": "q1", "query": "Build a counter app."}] * 2, rollouts, [part, part])
        scored, timing = stream.finish()
        elapsed = time.monotonic() - t0
    hung = stream._parts[1]  # the fake has stopped, so the hung call has returned: the part's flow ends now
    assert hung.done.wait(60) and hung.result is not None, f"the abandoned part did not finish its flow: {hung.error}"
    r = scored.rewards
    assert elapsed < HANG_S, "the stream waited for the hung judge call"
    assert (r[0] is None) != (r[1] is None) and r[2] is None and r[3] is None, r
    assert None not in (r[4], r[5]) and r[4] > r[5], r  # the twins: scored, the valid app above the broken one
    assert scored.info["judge_failed"][2:] == [True, True, False, False]
    assert scored.info["judge_failed"][:2] == [r[0] is None, r[1] is None]
    assert runtime.restarts > restarts0, "the browser was not relaunched after the crash"
    parts = sorted(p.name for p in (run / RUN_RECORDS / "rewards").glob("*.parquet"))
    assert parts == ["step-000001-rank0-p0000.parquet", "step-000001-rank0-p0002.parquet"]
    ids = pq.read_table(run / RUN_RECORDS / "rewards" / parts[1]).column("rollout_id").to_pylist()
    assert ids == ["s00001-r0-0004", "s00001-r0-0005"]  # step-wide ids, as a serial call names them
    assert timing["score_tail_s"] > 0 and timing["score_s"] >= timing["score_tail_s"]


def test_judge_concurrency_is_process_wide(monkeypatch, tmp_path):
    from schemas.config.llm import LLMConfig
    from tasks.llm.factory import make_provider
    from tasks.rl.judge_limit import SharedLimit
    from fakes.llm_fixtures import echo_reply, request

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeAnthropic(reply=echo_reply, latency_s=0.3) as api:
        inner = make_provider("anthropic", base_url=api.base_url, config=LLMConfig(store_path=str(tmp_path / "s.db")))
        shared = SharedLimit(inner, 2)
        out: dict[int, list] = {}
        calls = [threading.Thread(target=lambda k=k: out.setdefault(k, shared.complete_many(
            [request(10 * k + i) for i in range(4)], concurrency=4))) for k in range(2)]
        for t in calls:
            t.start()
        for t in calls:
            t.join(60)
    assert shared.peak == 2, shared.peak  # two calls of width 4 each: still 2 in flight in the process
    assert [[res.output.n for res in out[k]] for k in range(2)] == [[0, 1, 2, 3], [10, 11, 12, 13]]
