"""Streamed scoring: each finished group goes to the environment while the rest is still generated.

:class:`ScoreStream` calls the trainer's ``score_fn`` (contract in ``training/grpo.py``) once per
submitted chunk (one finished group, or several), on a background worker: a thread in this process
(``runner="threads"``), or a Ray task (``runner="ray"``: ``score_fn`` is reached there by its import
path, ``train.run.score_fn``, so nothing unpicklable crosses). At most ``workers`` calls are in flight;
``submit`` blocks for a free slot (back-pressure) and never drops a chunk. ``finish`` waits for every
chunk and returns one :class:`Scored` aligned with the submission order, so the trainer's advantages,
weights and loss are exactly what one serial call would give (streaming changes timing, not results).

A call that raises, or runs past ``timeout_s``, gives missing rewards (``None``: dropped from the loss)
with ``judge_failed`` set for its responses, and is logged; it never produces a made-up reward and never
makes the step wait forever (a hung thread is abandoned, a hung Ray task cancelled). A result that
breaks the contract (wrong lengths, bad codes) is a bug in the score function: ``finish`` raises.

Each call's ``ctx`` gains ``part`` (the chunk's submission index) and ``offset`` (its first response's
index in the step), so a scorer can write its records per part and keep step-wide ids; with a timeout,
also ``deadline`` (Unix time after which the stream no longer waits for this call: its rewards are then
counted missing, so a scorer that finishes later must not publish records for them; the score-step flow
drops its records then).

Timing (``finish``'s dict; seconds, all wall-clock from the stream's creation, which the caller makes
just before generation starts):

- ``generate_s``: creation -> ``generation_done()`` (the last response generated);
- ``score_s``: first submission -> last score returned (the span scoring was active);
- ``score_tail_s``: last generated response -> last score (what scoring adds after generation);
- ``overlap_s``: time generation and scoring were both active (``score_s - score_tail_s``, >= 0);
- ``score_busy_s``: summed ``time_score_s`` the calls reported; ``attribute_s``: summed attribution time.

In serial mode (one call after generation) overlap is 0 and the tail is the whole scoring time.
"""
from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tasks.attribution.weights import OTHER, membership_codes
from training.rollout import Rollout

log = logging.getLogger("rubricrl.train")
ScoreFn = Callable[..., tuple[list[float | None], list[list[int]], dict[str, Any]]]
REPO = Path(__file__).resolve().parent.parent


@dataclass
class Scored:
    rewards: list[float | None]
    membership: list[np.ndarray]  # (T_i,) int8 codes per response
    info: dict[str, Any]
    time_score_s: float
    time_attribute_s: float


def score_args(queries: list[dict[str, str]], rollouts: list[Rollout], group_ids: list[int],
               tokenizer: Any) -> tuple[list[str], list[str], list[list[int]], dict[str, Any]]:
    """The score_fn's positional arguments and per-response keywords for these rollouts."""
    responses = [tokenizer.decode(r.response_ids, skip_special_tokens=True) for r in rollouts]
    token_ids = [list(r.response_ids) for r in rollouts]
    return ([q["query"] for q in queries], responses, token_ids,
            {"query_ids": [q["query_id"] for q in queries], "group_ids": list(group_ids)})


def check_scored(result: tuple[Any, Any, Any], token_ids: list[list[int]], elapsed: float) -> Scored:
    """Check what a score_fn returned (clear errors, nothing silently fixed)."""
    rewards, membership, info = result
    n = len(token_ids)
    if len(rewards) != n or len(membership) != n:
        raise ValueError(f"score_fn returned {len(rewards)} rewards and {len(membership)} membership arrays for {n} "
                         "responses; return one of each per response, in order")
    codes = [membership_codes(m, f"score_fn response {i}") for i, m in enumerate(membership)]
    for i, (m, ids) in enumerate(zip(codes, token_ids)):
        if len(m) != len(ids):
            raise ValueError(f"score_fn: response {i} has {len(ids)} token ids but {len(m)} membership codes; align the "
                             "weights with the generated token ids (one per id)")
    info = dict(info or {})
    attribute = float(info.pop("time_attribute_s", 0.0))
    score = float(info.pop("time_score_s", max(elapsed - attribute, 0.0)))
    return Scored(list(rewards), codes, info, score, attribute)


def score_rollouts(score_fn: ScoreFn, queries: list[dict[str, str]], rollouts: list[Rollout], group_ids: list[int],
                   tokenizer: Any, ctx: dict[str, Any]) -> Scored:
    """One score_fn call on these rollouts, in this thread, its result checked."""
    prompts, responses, token_ids, kw = score_args(queries, rollouts, group_ids, tokenizer)
    t0 = time.perf_counter()
    result = score_fn(prompts, responses, token_ids, **kw, **ctx)
    return check_scored(result, token_ids, time.perf_counter() - t0)


def failed_part(token_ids: list[list[int]]) -> Scored:
    """Missing rewards for a chunk whose call failed: dropped from the loss, counted as judge failures."""
    n = len(token_ids)
    return Scored([None] * n, [np.full(len(t), OTHER, dtype=np.int8) for t in token_ids],
                  {"judge_failed": [True] * n}, 0.0, 0.0)  # other info lists: None there (merge_scored)


def merge_scored(parts: list[Scored]) -> Scored:
    """Concatenate chunk results in order; an info list some chunks lack is filled with None there."""
    keys = [k for p in parts for k in p.info]
    info: dict[str, Any] = {}
    for k in dict.fromkeys(keys):
        info[k] = [v for p in parts for v in (p.info.get(k) or [None] * len(p.rewards))]
    return Scored([r for p in parts for r in p.rewards], [m for p in parts for m in p.membership], info,
                  sum(p.time_score_s for p in parts), sum(p.time_attribute_s for p in parts))


def reorder(scored: Scored, positions: list[int]) -> Scored:
    """``scored`` (response k at ``positions[k]``) in position order."""
    order = sorted(range(len(positions)), key=positions.__getitem__)
    info = {k: [v[i] for i in order] if isinstance(v, list) else v for k, v in scored.info.items()}
    return Scored([scored.rewards[i] for i in order], [scored.membership[i] for i in order], info,
                  scored.time_score_s, scored.time_attribute_s)


def stream_timing(t_start: float, t_gen_done: float | None, t_first_submit: float | None,
                  t_last_score: float | None) -> dict[str, float]:
    """The timing dict of the module docstring from four instants (pure)."""
    gen_end = t_gen_done if t_gen_done is not None else t_start
    if t_first_submit is None or t_last_score is None:
        return {"generate_s": gen_end - t_start, "score_s": 0.0, "score_tail_s": 0.0, "overlap_s": 0.0}
    score = max(t_last_score - t_first_submit, 0.0)
    tail = max(t_last_score - max(gen_end, t_first_submit), 0.0)
    return {"generate_s": gen_end - t_start, "score_s": score, "score_tail_s": tail, "overlap_s": max(score - tail, 0.0)}


def resolve_score_fn(spec: str):
    """``train.run.score_fn`` ('package.module:function') as the function: the job and every Ray worker use this."""
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"run.score_fn={spec!r}: use 'package.module:function'")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"run.score_fn={spec!r} cannot be imported ({e}); check the module path and function name") from e
    if not callable(fn):
        raise ValueError(f"run.score_fn={spec!r} is not callable")
    return fn


def _call_by_path(spec: str, prompts: list[str], responses: list[str], token_ids: list[list[int]],
                  kw: dict[str, Any]) -> tuple[Any, Any, Any, float]:
    """Ray side: import the score function by its path and call it (returns plain, picklable values)."""
    t0 = time.perf_counter()
    rewards, membership, info = resolve_score_fn(spec)(prompts, responses, token_ids, **kw)
    return list(rewards), [list(map(int, m)) for m in membership], dict(info or {}), time.perf_counter() - t0


def ray_remote(ray_address: str | None, workers: int) -> Any:
    """``_call_by_path`` as a Ray task, on ``ray_address`` or a local instance started once per process."""
    try:
        import ray
    except ImportError as e:
        raise ValueError("env.task_runner is 'ray' but ray is not installed; pip install ray==2.60.0 "
                         "(pyproject pins it), or set env.task_runner=threads") from e
    if not ray.is_initialized():
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
        if ray_address is None:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": path}})
        else:
            ray.init(address=ray_address, runtime_env={"env_vars": {"PYTHONPATH": path}})
    return ray.remote(num_cpus=1, max_retries=0)(_call_by_path)


def stream_workers(task_runner: str, workers: int, n_groups: int) -> int:
    """Score calls a step's stream keeps in flight. Threads: every finished group at once (a waiting thread costs
    nothing; the shared browser's slots and the process-wide judge bound limit the work), so generation never
    waits for a scorer. Ray: ``env.workers`` tasks, each a process with its own browser."""
    return max(n_groups, 1) if task_runner == "threads" else workers


@dataclass
class _Part:
    index: int
    offset: int
    token_ids: list[list[int]]
    args: tuple[list[str], list[str], list[list[int]], dict[str, Any]]
    t_submit: float
    deadline: float | None  # Unix time the stream stops waiting (ctx["deadline"]); None: no timeout
    done: threading.Event = field(default_factory=threading.Event)
    result: Scored | None = None
    error: str | None = None
    contract_error: Exception | None = None
    t_done: float | None = None
    released: bool = False
    ray_ref: Any = None


class ScoreStream:
    """Background scoring of one step's chunks; see the module docstring."""

    def __init__(self, score_fn: ScoreFn, tokenizer: Any, ctx: dict[str, Any], *, workers: int,
                 runner: str = "threads", ray_address: str | None = None, timeout_s: float | None = None,
                 score_fn_path: str | None = None):
        if workers < 1:
            raise ValueError(f"workers={workers}; set env.workers to at least 1")
        if runner not in ("threads", "ray"):
            raise ValueError(f"runner={runner!r}; use env.task_runner 'threads' or 'ray'")
        if runner == "ray" and not score_fn_path:
            raise ValueError("the Ray runner reaches score_fn by its import path; pass score_fn_path "
                             "(train.run.score_fn, 'package.module:function')")
        self.score_fn, self.tokenizer, self.ctx = score_fn, tokenizer, dict(ctx)
        self.workers, self.runner, self.timeout_s, self.score_fn_path = workers, runner, timeout_s, score_fn_path
        self._remote = ray_remote(ray_address, workers) if runner == "ray" else None
        self._slots = threading.Semaphore(workers)
        self._lock = threading.Lock()
        self._parts: list[_Part] = []
        self._n = 0
        self.t_start = time.perf_counter()
        self.t_gen_done: float | None = None
        self._t_arrival: float | None = None
        self._finished = False

    # -- producer side ---------------------------------------------------------------------------------
    def submit(self, queries: list[dict[str, str]], rollouts: list[Rollout], group_ids: list[int], *,
               part: int | None = None, offset: int | None = None) -> None:
        """One finished group (or chunk): scoring starts now in the background; blocks only for back-pressure
        (at most ``workers`` calls in flight), never drops anything. ``part`` / ``offset`` (the ctx the call
        gets): default the submission index and the running response count; the trainer passes the group's
        index and its first response's index in prompt order, so ids and record names do not depend on
        which group finished first."""
        if self._finished:
            raise RuntimeError("ScoreStream.submit after finish(); make a new stream per step")
        if not (len(queries) == len(rollouts) == len(group_ids)):
            raise ValueError(f"submit got {len(queries)} queries, {len(rollouts)} rollouts and {len(group_ids)} group "
                             "ids; pass one of each per response")
        if not rollouts:
            return
        self._t_arrival = time.perf_counter()  # when the group was generated, before any wait for a worker
        args = score_args(queries, rollouts, group_ids, self.tokenizer)
        while not self._slots.acquire(timeout=0.2):
            self._expire_overdue()  # a hung call must not hold its slot forever
        t_submit = time.perf_counter()
        deadline = None if self.timeout_s is None else time.time() + self.timeout_s
        part = _Part(len(self._parts) if part is None else part, self._n if offset is None else offset, args[2], args,
                     t_submit, deadline)
        self._n += len(rollouts)
        self._parts.append(part)
        threading.Thread(target=self._run, args=(part,), name=f"score-part-{part.index}", daemon=True).start()

    def generation_done(self) -> None:
        """The last response of the step is generated (the start of the scoring tail): the last group's arrival,
        not the end of a ``submit`` that waited for a worker (that wait is part of the tail)."""
        if self.t_gen_done is None:
            self.t_gen_done = self._t_arrival if self._t_arrival is not None else time.perf_counter()

    # -- workers ---------------------------------------------------------------------------------------
    def offsets(self) -> list[int]:
        """Per submitted response (submission order), its ``offset`` position: to put ``finish``'s result
        back in the caller's order."""
        return [p.offset + k for p in self._parts for k in range(len(p.token_ids))]

    def _run(self, part: _Part) -> None:
        prompts, responses, token_ids, kw = part.args
        ctx = {**self.ctx, "part": part.index, "offset": part.offset}
        if part.deadline is not None:
            ctx["deadline"] = part.deadline
        try:
            t0 = time.perf_counter()
            if self._remote is None:
                raw = self.score_fn(prompts, responses, token_ids, **kw, **ctx)
                elapsed = time.perf_counter() - t0
            else:
                import ray

                part.ray_ref = self._remote.remote(self.score_fn_path, prompts, responses, token_ids, {**kw, **ctx})
                *raw, elapsed = ray.get(part.ray_ref)
            try:
                part.result = check_scored(tuple(raw), token_ids, elapsed)
            except ValueError as e:
                part.contract_error = e
        except Exception as e:  # noqa: BLE001 - an infrastructure failure: this chunk's rewards are missing
            part.error = f"{type(e).__name__}: {e}"
        finally:
            part.t_done = time.perf_counter()
            part.done.set()
            self._release(part)

    def _release(self, part: _Part) -> None:
        with self._lock:
            if not part.released:
                part.released = True
                self._slots.release()

    def _overdue(self, part: _Part, now: float) -> bool:
        return self.timeout_s is not None and not part.done.is_set() and now - part.t_submit > self.timeout_s

    def _expire_overdue(self) -> None:
        now = time.perf_counter()
        for p in self._parts:
            if self._overdue(p, now):
                self._release(p)

    # -- consumer side ---------------------------------------------------------------------------------
    def finish(self) -> tuple[Scored, dict[str, float]]:
        """Waits for every submitted chunk; Scored aligned with submission order, and the timing dict."""
        self._finished = True
        self.generation_done()
        results, t_last = [], None
        for p in self._parts:
            wait = None if self.timeout_s is None else max(p.t_submit + self.timeout_s - time.perf_counter(), 0.0)
            if not p.done.wait(wait):
                self._abandon(p)
                results.append(failed_part(p.token_ids))
                t_last = time.perf_counter()
                continue
            if p.contract_error is not None:
                raise p.contract_error
            if p.error is not None or p.result is None:
                log.error("score part %d (responses %d-%d, step %s) failed, its %d rewards are missing: %s", p.index,
                          p.offset, p.offset + len(p.token_ids) - 1, self.ctx.get("step"), len(p.token_ids), p.error)
                results.append(failed_part(p.token_ids))
            else:
                results.append(p.result)
            t_last = p.t_done if t_last is None else max(t_last, p.t_done or t_last)
        first = self._parts[0].t_submit if self._parts else None
        timing = stream_timing(self.t_start, self.t_gen_done, first, t_last)
        merged = merge_scored(results) if results else Scored([], [], {}, 0.0, 0.0)
        timing["score_busy_s"], timing["attribute_s"] = merged.time_score_s, merged.time_attribute_s
        return merged, timing

    def _abandon(self, p: _Part) -> None:
        log.error("score part %d (responses %d-%d, step %s) passed its %.0f s timeout; its %d rewards are missing",
                  p.index, p.offset, p.offset + len(p.token_ids) - 1, self.ctx.get("step"), self.timeout_s,
                  len(p.token_ids))
        self._release(p)
        if p.ray_ref is not None:
            import ray

            ray.cancel(p.ray_ref, force=True)
