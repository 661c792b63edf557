"""The scoring engine behind ``rubricrl serve-env`` and the in-process adapters: one per process.

Each item is scored by the code ``rubricrl score`` runs (``tasks.env.score.score_response``, then
``rubricrl.score_cmd.score_output``) on a worker thread, ``service.workers`` at a time, under the
process-wide bounds every scorer shares: the one browser for the run's runtime settings
(``shared_runtime``, ``env.runtime.concurrency`` apps at once; a timeout beside other apps re-checked,
``rubricrl.service.browser``), one judge provider whose calls in flight
are held to ``env.judge.concurrency`` across all requests (``tasks.rl.judge_limit.SharedLimit``), and
that provider's LLM cache, ledger and budget (``llm.*``). A ``query_id`` resolves against the published
rubric references and items (``tasks.rubrics.load_tasks``), re-read when a newer version is published.

An item whose scoring raises, or that is not scored within ``service.request_timeout_s``, is answered
``reward: null`` with the reason; nothing is made up.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rubricrl.score_cmd import score_output
from rubricrl.service.browser import ServiceBrowser
from rubricrl.service.requests import Job
from schemas.config import Config
from schemas.config.train import RULE_OF_MODE
from schemas.rubric import Task
from tasks.stages.store import StageStore

# The keys of an answer whose scoring never produced a result (raised, or ran out of time): the
# ``rubricrl score`` contract with nothing decided.
_UNSCORED = {"format_valid": None, "source_valid": None, "runtime_valid": None, "reward": None, "html_offset": None,
             "findings": [], "evidence": {}, "reward_kind": None, "rubric_score": None, "gates": {}, "judge": {},
             "tier": "missing"}


def answer(job: Job, out: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
    """One item's answer: its place in the request, its query, what ``rubricrl score`` prints, and why the
    reward is null when it is (the judge's error, or ``reason``)."""
    if out.get("reward") is None and reason is None:
        judge = out.get("judge") or {}
        reason = judge.get("error") or (out.get("evidence") or {}).get("runtime_error") or \
            "no verdict: a gate neither our evidence nor the judge decided"
    out = {"index": job.index, "query_id": job.task.query_id, **out,
           "reason": reason if out.get("reward") is None else None}
    return observed(job, out) if job.observe else out


def observed(job: Job, out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with what the environment found, written for the policy's next turn, and whether nothing is
    left to fix (``observe: true`` items: a repair episode's client in another process)."""
    from rubricrl.environments.observation import passed, render_observation, requirements_of

    return {**out, "observation": render_observation(out, job.response, requirements_of(job.task.rubric)),
            "passed": passed(out)}


# What the run measured, not what it decided: times inside the evidence (a check's duration, the probe's
# liveness gap as the page clock saw it) and whether a verdict came from a re-check (taken beside other apps)
_TIMINGS = ("duration_s", "gap_s", "runtime_rechecked_from")


def verdict(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without its place in the request, what the run measured (times, a re-check's origin) and the
    judge's ``cached`` flag: what must be the same however loaded the service is and whatever else it scores
    (pure)."""
    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in _TIMINGS}
        return [strip(x) for x in v] if isinstance(v, list) else v

    out = strip({k: v for k, v in answer.items() if k != "index"})
    out["judge"] = {k: v for k, v in (out.get("judge") or {}).items() if k != "cached"}
    return out


def unscored(job: Job, reason: str) -> dict[str, Any]:
    return answer(job, dict(_UNSCORED), reason)


def missing_answer(query_id: str, reason: str, index: int = 0) -> dict[str, Any]:
    """An answer with nothing decided, for a scorer's caller that ran out of time or reached no scorer
    (``rubricrl.environments``): the same keys as every answer (pure)."""
    return {"index": index, "query_id": query_id, **_UNSCORED, "reason": reason}


@dataclass
class Scored:
    job: Job
    answer: dict[str, Any]
    latency_s: float  # from submission to answer: queue, browser, judge, reward


class TaskIndex:
    """The published tasks by query id, reloaded when the references or items are re-published."""

    def __init__(self, store: StageStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._version: tuple[str | None, str | None] | None = None
        self._tasks: dict[str, Task] = {}

    def _published(self) -> tuple[str | None, str | None]:
        refs, items = self.store.manifest("rubric_references"), self.store.manifest("rubric_items")
        return (refs.version if refs else None, items.version if items else None)

    def get_many(self, query_ids: list[str]) -> dict[str, Task]:
        from tasks.rubrics import load_tasks

        with self._lock:
            version = self._published()
            if version != self._version:
                self._tasks = {t.query_id: t for t in load_tasks(self.store)} if version[0] else {}
                self._version = version
            return {q: self._tasks[q] for q in query_ids if q in self._tasks}

    def describe(self) -> str:
        with self._lock:
            if not self._tasks:
                return f"no rubric references are published in {self.store.root}"
            return f"{len(self._tasks)} published queries in {self.store.root}"


class ScoreEngine:
    """Scores items by ``rubricrl score``'s code under the process-wide bounds (see the module docstring)."""

    def __init__(self, project: Config) -> None:
        from tasks.env.runtime import shared_runtime
        from tasks.llm import get_provider
        from tasks.rl.judge_limit import SharedLimit

        self.project, self.cfg, self.env = project, project.service, project.env
        self.provider = SharedLimit(get_provider(config=project.resolved_llm()), self.env.judge.concurrency)
        # the browser starts here, so a machine without one fails before the service listens
        self.runtime = ServiceBrowser(shared_runtime(self.env.runtime)) if self.env.runtime.enabled else None
        self.tasks = TaskIndex(StageStore(project.data_dir))
        self.tokenizer = None
        if self.cfg.tokenizer is not None:
            from rubricrl.score_cmd import load_tokenizer

            self.tokenizer = load_tokenizer(self.cfg.tokenizer)
        self._pool = ThreadPoolExecutor(max_workers=self.cfg.workers, thread_name_prefix="rubricrl-score")
        self._lock = threading.Lock()
        self.submitted = self.running = 0
        self.recorder = None
        if self.cfg.keep_scores:
            from rubricrl.service.score_log import ScoreRecorder

            self.recorder = ScoreRecorder(project, self.provider.name)

    @property
    def provider_name(self) -> str:
        return self.provider.name

    def queued(self) -> int:
        with self._lock:
            return self.submitted - self.running

    def score_one(self, job: Job) -> dict[str, Any]:
        """One item by ``rubricrl score``'s code; never raises (a failure is a null reward with the reason)."""
        from tasks.env.score import score_response

        try:
            result = score_response(job.task, job.response, diagnosis=job.diagnosis, provider=self.provider,
                                    runtime=self.runtime, cfg=self.env)
            return answer(job, score_output(result, job.response, job.advantage, self.tokenizer,
                                            self.project.attribution, RULE_OF_MODE[self.project.train.objective.mode]))
        except Exception as e:  # the environment failed, not the app: a missing reward (paper B.4)
            return unscored(job, f"scoring failed: {type(e).__name__}: {e}")

    def submit(self, job: Job) -> Future:
        """A future of ``Scored``; cancel() before it starts drops it from the queue."""
        started = time.perf_counter()
        with self._lock:
            self.submitted += 1

        def run() -> Scored:
            with self._lock:
                self.running += 1
            try:
                return Scored(job, self.score_one(job), time.perf_counter() - started)
            finally:
                with self._lock:
                    self.running -= 1
                    self.submitted -= 1

        fut = self._pool.submit(run)
        fut.add_done_callback(lambda f: self._forget_cancelled(f))
        return fut

    def _forget_cancelled(self, f: Future) -> None:
        if f.cancelled():
            with self._lock:
                self.submitted -= 1

    def timed_out(self, job: Job, started: float) -> Scored:
        limit = self.cfg.request_timeout_s
        return Scored(job, unscored(job, f"not scored within the request's time limit of {limit:g} s "
                                         "(service.request_timeout_s)"), time.perf_counter() - started)

    def score_jobs(self, jobs: list[Job]) -> list[Scored]:
        """All items, in request order, within the request's time limit (blocking; the adapters' local route)."""
        started = time.perf_counter()
        futures = [self.submit(j) for j in jobs]
        wait_futures(futures, timeout=self.cfg.request_timeout_s)
        out = []
        for job, f in zip(jobs, futures):
            if f.done() and not f.cancelled():
                out.append(f.result())
            else:
                f.cancel()
                out.append(self.timed_out(job, started))
        return out

    def record(self, request_id: str, route: str, scored: list[Scored]) -> None:
        """Keep answered items as ``service_scores`` rows (when ``service.keep_scores`` is on)."""
        if self.recorder is not None and scored:
            self.recorder.add(request_id, route, scored)

    def close(self) -> None:
        """Finish the items in flight, then publish the kept scores; the browser closes at interpreter exit."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self.recorder is not None:
            self.recorder.close()


@lru_cache(maxsize=2)
def process_engine(config_json: str) -> ScoreEngine:
    """The process's one engine for a resolved configuration (the adapters' in-process route), closed at
    interpreter exit (its kept scores published)."""
    import atexit

    engine = ScoreEngine(Config.model_validate_json(config_json))
    atexit.register(engine.close)
    return engine
