"""score_batch judges each app as soon as its own browser check ends, never after the whole batch's loads,
and the verdicts are the ones the batch gets app by app."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from schemas.config.env import EnvConfig, RuntimeConfig
from schemas.rubric import Task
from tasks.env.runtime import BrowserRuntime
from tasks.env.score import ScoreInput, score_batch
from tasks.llm import get_provider

FIX = Path(__file__).parent / "fixtures" / "env"
TASK = Task.model_validate_json((FIX / "task_counter.json").read_text())
CLEAN = (FIX / "clean.txt").read_text()
# The same app, with a script that keeps the main thread for SLOW_S before the page can fire its load event.
SLOW_S = 2.5
SLOW = CLEAN.replace("<script>", "<script>\n  const until = Date.now() + %d; while (Date.now() < until) {}\n"
                     % int(SLOW_S * 1000), 1)


class Recording:
    """The offline judge, noting when each app's call starts."""

    def __init__(self) -> None:
        self.inner, self.started, self.lock = get_provider("offline"), {}, threading.Lock()

    def complete(self, request):
        with self.lock:
            self.started[request.key] = time.perf_counter()
        return self.inner.complete(request)

    def complete_many(self, requests, concurrency=None):  # a batch-at-once caller's way in, the same record
        with ThreadPoolExecutor(max_workers=max(1, len(requests))) as pool:
            return list(pool.map(self.complete, requests))


def test_a_loaded_app_is_judged_while_a_slow_one_still_loads():
    assert SLOW != CLEAN
    cfg = EnvConfig(runtime=RuntimeConfig(load_timeout_s=SLOW_S + 4, hard_limit_s=SLOW_S + 10))
    judge = Recording()
    with BrowserRuntime(cfg.runtime) as rt:
        rt.check(CLEAN)  # the browser is up before the clock matters
        res = score_batch([ScoreInput("slow", TASK, SLOW), ScoreInput("quick", TASK, CLEAN)], provider=judge,
                          runtime=rt, cfg=cfg)
        alone = [score_batch([ScoreInput(k, TASK, r)], provider=get_provider("offline"), runtime=rt, cfg=cfg)[0]
                 for k, r in (("slow", SLOW), ("quick", CLEAN))]
    # The quick app's judge call did not wait for the slow app's load (it blocks its page for SLOW_S).
    assert judge.started["slow"] - judge.started["quick"] > SLOW_S / 2, judge.started
    # Correct twins: both apps work (the slow one only loads late), and batching changes no verdict.
    assert [r.reward for r in res] == [r.reward for r in alone]
    assert all(r.runtime_valid is True and r.evidence.runtime_status == "ok" for r in res), \
        [r.evidence.runtime_status for r in res]
