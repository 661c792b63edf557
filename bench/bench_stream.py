"""Bench: one GRPO step's wall time with serial versus streamed scoring, in one run.

Real pieces everywhere except the judge API and the generation: responses are real apps (the project's
fixtures and the offline teacher's answers) for tasks with rubrics from the fixtures, tokenised with the
tiny policy's locally built tokenizer; scoring is the trainer's real path (``training/stream.ScoreStream``
or one ``score_rollouts`` call) around the real ``tasks.rl.score_step.score_step``: tree-sitter, the
headless browser with its interaction probe, the judge through the real ``anthropic`` SDK, attribution.
The judge is the local fake API (fakes/) answering a diagnosis that quotes the app's code, after a
long-tailed latency (lognormal, median 8 s, p95 30 s, times ``--latency-scale``) seeded per response, so
both modes wait the same latency for the same response. Generation is replayed: each response takes its
real token count / a tokens-per-second rate in one of ``--gen-slots`` sequence slots (continuous
batching), a group is finished when its last member is, and the rate is set so generation lasts
``--gen-s``, by default ``--gen-ratio`` x the measured serial scoring time: 1.3, the ratio the issue cites
(verl users: 180 s of rollout against a 140 s reward stage); ``--gen-ratio 1`` is the hardest case, where
scoring that is throughput-bound cannot start before the first group is generated, so the tail is at least
that first wait. The update is a real DeepSpeed
step of the tiny policy on the step's batch (real rewards and token membership), run once after the
serial scoring; the streamed step adds its measured duration (``--update-twice`` runs it again).
``--off-policy-steps N`` (N >= 3) then replays N more steps of the one-step-off-policy loop (fresh batches,
so fresh judge draws): step period and the tail left exposed once the next batch's generation hides the rest.

Serial step = generation + one score call + update (the phases do not overlap, so generation is not
slept through: its replayed time is added). Streamed step = the replay with each finished group
submitted to a ScoreStream, then the update. Goals: scoring tail (last generated -> last
scored) <= 10% of the serial scoring time; streamed step <= 1.15 x (max(generation, scoring) + update).

Run: ``python bench/bench_stream.py [--groups 8] [--group-size 8] [--latency-scale 0.25] [--workers N]
[--gen-s S | --gen-ratio R] [--gen-slots K] [--checks 6]``. Defaults: the paper's step, B=64 x G=8 = 512 responses (about
4 minutes here); ``--groups 8`` for a quick run, where one long-tailed judge draw is most of the scoring time.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import heapq
import json
import os
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident
from stream_figures import Arm, Call, Measured, print_calls, print_goals, print_off_policy, print_step  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "tests" / "fixtures"
MARK = re.compile(r"<!-- rollout (\S+) -->")
# Per task: the fixture responses written for it (the offline teacher's answer is added to each).
POOL = {
    "env/task_counter.json": ["env/clean.txt", "env/network.txt", "env/throws.txt", "env/syntax_error.txt",
                              "env/truncated.txt", "env/no_html.txt", "checks/apps/counter.html",
                              "checks/apps/counter_broken.html"],
    "quiz": ["env/interaction/quiz_ok.txt", "env/interaction/quiz_throws.txt"],
    "key": ["env/interaction/key_ok.html", "env/interaction/key_throws.html"],
    "button": ["env/interaction/button_wired.html", "env/interaction/button_unwired.html"],
    "anim": ["env/interaction/anim_runs.html", "env/interaction/anim_stops.html"],
    "form": ["env/interaction/form_prevented.html", "env/interaction/form_reload.html"],
}


def with_checks(task: Any, files: list[str], n: int) -> Any:
    """The task with ``n`` more dynamic items, each carrying an executable check written for its apps (the
    hand-labelled checks of bench_checks; those of every app when its own are fewer)."""
    import bench_checks
    from schemas.rubric import CompactItem

    by_app = bench_checks.apps_and_checks()
    own = [c for f in files for _i, c, _l in by_app.get(f, [])]
    pool = own + [c for cs in by_app.values() for _i, c, _l in cs]
    items = [CompactItem(id=f"K{k + 1}", requirement=f"executable check {k + 1}", level="correct_rule", check=c)
             for k, c in enumerate(pool[:n])]
    return task.model_copy(update={"rubric": task.rubric.model_copy(update={"dynamic": [*task.rubric.dynamic, *items]})})


def load_pool(checks: int = 0) -> list[tuple[Any, list[str]]]:
    """(task, candidate responses) for every task of POOL; raw HTML files answer in a fenced block; with
    ``checks``, each task's rubric gets that many items with executable checks."""
    from schemas.rubric import Task
    from tasks.sft.teacher import offline_teacher_answer

    inter = json.loads((FIX / "env/interaction/tasks.json").read_text())
    out = []
    for name, files in POOL.items():
        task = (Task.model_validate_json((FIX / name).read_text()) if name.endswith(".json")
                else Task.model_validate(inter[name]))
        task = with_checks(task, files, checks) if checks else task
        texts = [(FIX / f).read_text() for f in files]
        texts = [t if f.endswith(".txt") else f"Here is the app.\n\n```html\n{t}```\n" for f, t in zip(files, texts)]
        out.append((task, texts + [offline_teacher_answer(task)]))
    return out


def marked(response: str, key: str) -> str:
    """The response with a comment naming its rollout inside the app: every response differs (as sampled
    rollouts do) and the fake judge seeds its latency by it."""
    tag = f"<!-- rollout {key} -->"
    for anchor in ("</body>", "</html>", "```\n"):
        i = response.rfind(anchor)
        if i >= 0:
            return response[:i] + tag + response[i:]
    return response + tag


def latency_key(body: Any) -> str:
    m = MARK.search(json.dumps(body))
    return m.group(1) if m else json.dumps(body, sort_keys=True)


def judge_reply(body: dict[str, Any]) -> str:
    """A diagnosis for the app in the prompt, by a rule seeded by the rollout: none, a major finding on a
    dynamic item, or a minor on an initial-state item, quoting one line of the app's script (attribution
    has real work), with the rubric's own ids."""
    from fakes.llm_fixtures import last_user_text

    text = last_user_text(body)
    app = text.split("Application source:", 1)[-1].split("Executable check results", 1)[0]
    ids = re.findall(r'"id":\s*"([A-Z]\d+)"', text.split("Application source:", 1)[0])
    script = app.split("<script>", 1)[-1].split("</script>", 1)[0] if "<script>" in app else ""
    lines = [ln.strip() for ln in script.splitlines() if len(ln.strip()) >= 12 and ln.strip().endswith(";")]
    layers = {k: {"name": k, "critical": [], "major": [], "minor": []}
              for k in ("static_check", "code_simulation", "rubric_alignment")}
    pick = int(hashlib.sha256(latency_key(body).encode()).hexdigest(), 16)
    dyn, init = [i for i in ids if i.startswith("D")], [i for i in ids if i.startswith("I")]
    if lines and pick % 3 and dyn and init:
        severity, item = ("major", dyn[pick % len(dyn)]) if pick % 3 == 1 else ("minor", init[pick % len(init)])
        layers["rubric_alignment"][severity].append({
            "item_id": item, "scope": "dynamic" if item.startswith("D") else "initial_state",
            "description": "the handler does not update the shown state", "code_quotes": [lines[pick % len(lines)]],
            "related_symbols": [], "state_variables": [], "context_hints": [], "explanation": "bench"})
    return json.dumps(layers)


@dataclass
class Step:
    queries: list[dict[str, str]]  # one per response (flat), as the trainer passes them
    rollouts: list[Any]
    group_ids: list[int]
    groups: list[list[int]]  # response indices per group
    markers: list[str]


def build_step(pool, tok, cfg, n_groups: int, group_size: int, seed: int, step: int) -> Step:
    import random

    from training.rollout import Rollout, build_prompt, encode_prompts

    rnd = random.Random(seed * 7919 + step)
    queries, rollouts, gids, groups, markers = [], [], [], [], []
    for g in range(n_groups):
        task, cands = pool[g % len(pool)]
        (pids,), _ = encode_prompts(tok, [build_prompt(tok, task.query, cfg.rollout.instruction)],
                                    cfg.rollout.max_prompt_tokens)
        groups.append([])
        for j in range(group_size):
            key = f"s{step}-g{g}-{j}"
            text = marked(rnd.choice(cands), key)
            ids = tok(text, add_special_tokens=False).input_ids
            if tok.decode(ids, skip_special_tokens=True) != text:
                raise RuntimeError(f"the tiny tokenizer does not round-trip response {key}; the score step needs "
                                   "token ids that decode to the response text")
            groups[-1].append(len(rollouts))
            queries.append({"query": task.query, "query_id": task.query_id})
            rollouts.append(Rollout(list(pids), ids, [-6.2] * len(ids), True))
            gids.append(g)
            markers.append(key)
    return Step(queries, rollouts, gids, groups, markers)


def finish_times(step: Step, slots: int, gen_s: float, per_response: bool = False) -> list[tuple[float, list[int]]]:
    """The parts scoring receives, (generated at, response indices), in step order (pure). Responses take
    their token count / rate in ``slots`` sequence slots, queued in group order; the rate is set so the last
    one ends at ``gen_s``. A group is ready when its last member is (the trainer's parts); ``per_response``:
    each response alone, when it is generated (as vLLM yields finished requests)."""
    ends = [0.0] * len(step.rollouts)
    free = [0.0] * max(1, slots)
    for i, r in enumerate(step.rollouts):
        start = heapq.heappop(free)
        ends[i] = start + len(r.response_ids)
        heapq.heappush(free, ends[i])
    scale = gen_s / max(ends)
    if per_response:
        return [(scale * ends[i], [i]) for i in range(len(ends))]
    return [(scale * max(ends[i] for i in g), list(g)) for g in step.groups]


class Judge:
    """The fake judge API with a peak-in-flight counter (judge concurrency actually reached)."""

    def __init__(self, latency) -> None:
        from fakes.fake_anthropic import FakeAnthropic

        outer = self
        self.inflight = self.peak = 0
        self.lock = threading.Lock()

        class Counting(FakeAnthropic):
            def model_call(self, body, ok, error):  # type: ignore[override]
                with outer.lock:
                    outer.inflight += 1
                    outer.peak = max(outer.peak, outer.inflight)
                try:
                    return super().model_call(body, ok, error)
                finally:
                    with outer.lock:
                        outer.inflight -= 1

        self.api = Counting(latency_s=latency, reply=judge_reply).start()

    def reset_peak(self) -> None:
        with self.lock:
            self.peak = self.inflight


_local = threading.local()


def time_browser() -> None:
    """Bench-only instrumentation: the browser's wall time per score call, from ``check_each`` (score_batch's
    call, in the scoring thread) to its last app's verdict; summed when a call checks more than once."""
    from tasks.env.runtime import BrowserRuntime

    orig = BrowserRuntime.check_each

    def timed(self, htmls, checks=None):
        t0, ends = time.perf_counter(), []
        futures = orig(self, htmls, checks)
        for f in futures:
            f.add_done_callback(lambda _f: ends.append(time.perf_counter()))
        if hasattr(_local, "browser"):  # a score call of this bench is timing this thread
            _local.browser.append((t0, ends, len(futures)))
        return futures

    BrowserRuntime.check_each = timed  # type: ignore[method-assign]


def browser_s() -> float:
    """This thread's browser wall time since its last ``_local.browser = []``."""
    return sum(max(ends) - t0 for t0, ends, n in getattr(_local, "browser", []) if n and len(ends) == n)


def make_score_fn(tasks, tokenizer_path: str, provider, env, attribution, calls: list[Call]):
    """The score_fn contract (training/grpo.py) around the real score_step; records each call in ``calls``."""
    from tasks.attribution.tokens import load_tokenizer
    from tasks.rl.score_step import score_step

    tok = load_tokenizer(tokenizer_path)  # as the score-step flow loads the policy's tokenizer

    def score_fn(prompts, responses, token_ids, *, query_ids, group_ids, step, rank, offset=0, **_):
        ids = [f"s{step:05d}-r{rank}-{offset + i:04d}" for i in range(len(responses))]
        _local.browser, start = [], time.perf_counter()
        out = score_step(ids, query_ids, responses, token_ids, tasks, tok, provider=provider, env=env,
                         attribution=attribution)
        calls.append(Call(offset, start, browser_s(), out.time_score_s, out.time_attribute_s, time.perf_counter()))
        info = {"uniform": out.uniform, "passed": out.passed, "tier": out.tier,
                "judge_failed": [r is None for r in out.rewards], "time_score_s": out.time_score_s,
                "time_attribute_s": out.time_attribute_s}
        return out.rewards, [m.tolist() for m in out.membership], info

    return score_fn


def flow_score_fn(calls: list[Call]):
    """The train-rl job's real scorer, the ``score-step`` Prefect flow, timed per call like ``make_score_fn``."""
    from flows.score_step import score_step_flow

    def score_fn(prompts, responses, token_ids, **kw):
        _local.browser, start = [], time.perf_counter()
        rewards, membership, info = score_step_flow(prompts, responses, token_ids, **kw)
        calls.append(Call(kw.get("offset", 0), start, browser_s(), info["time_score_s"], info["time_attribute_s"],
                          time.perf_counter()))
        return rewards, membership, info

    return score_fn


def flow_run_dir(root: Path, tasks: dict[str, Any], api_url: str, env: Any) -> Path:
    """What train-rl writes into a run folder for the score-step flow: the resolved config and the queries."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from schemas.config import load_config, write_config
    from schemas.layout import RUN_CONFIG, RUN_QUERIES, runs_dir

    run = runs_dir(root, "train-rl") / "bench"
    sets = ["llm.provider=anthropic", f"llm.base_url={api_url}", "llm.cache=false", f"train.run.out_dir={run}",
            f"env.judge.concurrency={env.judge.concurrency}", f"env.runtime.concurrency={env.runtime.concurrency}"]
    cfg = load_config("demo", sets=sets, environ={})
    cfg.data_dir = root
    write_config(cfg, run / RUN_CONFIG)
    pq.write_table(pa.Table.from_pylist([{"query_id": q, "query": t.query, "rubric_json": t.rubric.model_dump_json()}
                                         for q, t in tasks.items()]), run / RUN_QUERIES)
    return run


class Update:
    """A real DeepSpeed step of the tiny policy on the step's batch (rewards and membership as scored)."""

    def __init__(self, cfg, model_dir: Path) -> None:
        import torch

        from training.engine import build_engine, init_distributed, load_policy

        init_distributed(cfg.deepspeed.dist_backend)
        model, self.tok = load_policy(model_dir, cfg.deepspeed.precision, torch.device("cpu"))
        self.cfg, self.engine = cfg, build_engine(cfg, model, 1)

    def __call__(self, step: Step, scored, run: bool = True) -> float | None:
        """The update's seconds; ``run=False`` only packs the batch (the streamed step then adds the serial
        step's measured update: same batch, same work)."""
        from schemas.config.attribution import AttributionConfig
        from training.grpo import build_packed, effective_rewards
        from training.update import make_micro_batches, run_update

        t0 = time.perf_counter()
        packed, _ = build_packed(self.cfg, step.rollouts, scored, effective_rewards(self.cfg, scored),
                                 step.group_ids, AttributionConfig())
        n_tok = sum(len(p.response_ids) for p in packed if p.include)
        if not run:
            return None
        if n_tok:
            run_update(self.engine, make_micro_batches(packed, self.cfg.deepspeed.micro_batch_size,
                                                       self.tok.pad_token_id), n_tok, 1,
                       temperature=self.cfg.rollout.temperature, eps_low=self.cfg.objective.eps_low,
                       eps_high=self.cfg.objective.eps_high)
        return time.perf_counter() - t0


def replay(step: Step, stream, parts: list[tuple[float, list[int]]]) -> float:
    """Replay generation into ``stream``: each part submitted when it is generated (from the stream's start);
    the seconds ``submit`` blocked (back-pressure)."""
    t0, blocked = stream.t_start, 0.0
    for k in sorted(range(len(parts)), key=lambda k: parts[k][0]):
        at, idx = parts[k]
        time.sleep(max(t0 + at - time.perf_counter(), 0.0))
        b0 = time.perf_counter()
        stream.submit([step.queries[i] for i in idx], [step.rollouts[i] for i in idx], [step.group_ids[i] for i in idx],
                      part=k, offset=idx[0])  # as the trainer: ids and order do not depend on who finished first
        blocked += time.perf_counter() - b0
    stream.generation_done()
    return blocked


def run_streamed(step: Step, score_fn, tok, parts: list[tuple[float, list[int]]], workers: int, calls: list[Call],
                 ctx: dict[str, Any]):
    """Replay generation into a real ScoreStream and wait for its scores."""
    from training.stream import ScoreStream, reorder

    stream = ScoreStream(score_fn, tok, ctx, workers=workers)
    blocked = replay(step, stream, parts)
    scored, timing = stream.finish()
    done = time.perf_counter()
    return reorder(scored, stream.offsets()), timing, {"t0": stream.t_start, "done": done, "blocked_s": blocked,
                                                     "gen_end": stream.t_start + max(at for at, _ in parts),
                                                     "last_scored": max(c.end for c in calls)}


def run_off_policy(steps: list[Step], parts: list[list[tuple[float, list[int]]]], score_fn, tok, workers: int,
                   ctx: dict[str, Any], update_s: float) -> list[dict[str, float]]:
    """The trainer's one-step-off-policy loop (``Trainer.step`` with ``train.rollout.off_policy``): batch k+1 is
    generated right after batch k, while k's scores come in; then k's scores are awaited and k's update runs
    (its measured duration, slept: on the GPU an update does not take the scorers' CPU). Per step: ``period``
    (previous update's end to this one's), ``exposed`` (the wait for this batch's scores after the next batch
    was generated: the tail generation did not hide) and the stream's own tail."""
    from training.stream import ScoreStream

    def generate(k: int):
        stream = ScoreStream(score_fn, tok, {**ctx, "step": ctx["step"] + k}, workers=workers)
        replay(steps[k], stream, parts[k])
        return stream

    rows, t_prev, pending = [], time.perf_counter(), None
    for k in range(len(steps)):
        stream = pending if pending is not None else generate(k)
        pending = generate(k + 1) if k + 1 < len(steps) else None
        w0 = time.perf_counter()
        scored, timing = stream.finish()
        exposed = time.perf_counter() - w0
        time.sleep(update_s)
        now = time.perf_counter()
        rows.append({"period": now - t_prev, "exposed": exposed, "tail": timing["score_tail_s"],
                     "missing": sum(r is None for r in scored.rewards)})
        t_prev = now
    return rows


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def parse_args() -> argparse.Namespace:
    from schemas.config.env import EnvConfig
    from training.stream import stream_workers

    env0 = EnvConfig()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=64, help="queries per step (B; the paper's: 64)")
    ap.add_argument("--group-size", type=int, default=8, help="responses per query (G)")
    ap.add_argument("--latency-scale", type=float, default=0.25, help="judge latency factor (median 8 s x this)")
    ap.add_argument("--median-s", type=float, default=8.0)
    ap.add_argument("--p95-s", type=float, default=30.0)
    ap.add_argument("--workers", type=int, default=None,
                    help="ScoreStream workers (default: the trainer's rule, training.stream.stream_workers)")
    ap.add_argument("--judge-concurrency", type=int, default=env0.judge.concurrency)
    ap.add_argument("--browser-concurrency", type=int, default=env0.runtime.concurrency)
    ap.add_argument("--gen-s", type=float, default=0.0, help="generation time (0: --gen-ratio x serial scoring)")
    ap.add_argument("--gen-ratio", type=float, default=1.3,
                    help="generation / serial scoring time when --gen-s is 0 (1.3: verl's 180 s rollout / 140 s reward)")
    ap.add_argument("--gen-slots", type=int, default=0, help="sequences generated at once (0: a quarter of B x G)")
    ap.add_argument("--per-response", action="store_true",
                    help="submit each response when it is generated (default: each group, as the trainer does)")
    ap.add_argument("--scorer", choices=["direct", "flow"], default="direct",
                    help="direct: score_step in a score_fn; flow: the score-step Prefect flow (train-rl's scorer)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--off-policy-steps", type=int, default=0,
                    help="also run this many steps (>= 3) of the one-step-off-policy loop on fresh batches: steady-state "
                         "step period and the tail left exposed (0: skip)")
    ap.add_argument("--checks", type=int, default=0,
                    help="executable checks per response (rubric items with a check, written for the apps)")
    ap.add_argument("--update-twice", action="store_true",
                    help="run the real update after the streamed scoring too (default: its measured duration)")
    args = ap.parse_args()
    if args.off_policy_steps and args.off_policy_steps < 3:
        raise SystemExit("--off-policy-steps needs at least 3 steps: the first generates two batches and "
                         "the last none, so only the steps between show the steady state")
    args.n = args.groups * args.group_size
    if args.workers is None:
        args.workers = stream_workers(env0.task_runner, env0.workers, args.n if args.per_response else args.groups)
    args.slots = args.gen_slots or max(1, args.n // 4)
    return args


def make_scorer(args: argparse.Namespace, stack: contextlib.ExitStack, tmp: Path, tasks: dict[str, Any], judge: Judge,
                env: Any, model_dir: Path, calls: list[Call]) -> tuple[Any, dict[str, Any]]:
    """The score function of ``--scorer`` and the context every call gets."""
    if args.scorer == "flow":
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")  # one line per flow and task run otherwise
        from prefect.testing.utilities import prefect_test_harness

        stack.enter_context(prefect_test_harness(server_startup_timeout=180))
        run_dir = flow_run_dir(tmp / "data", tasks, judge.api.base_url, env)
        return flow_score_fn(calls), {"rank": 0, "model_path": str(model_dir), "out_dir": str(run_dir)}
    from schemas.config.attribution import AttributionConfig
    from schemas.config.llm import LLMConfig
    from tasks.llm.factory import make_provider
    from tasks.rl.judge_limit import SharedLimit

    # the run's one provider, judge concurrency bound process-wide, as the score-step flow builds it
    provider = SharedLimit(make_provider("anthropic", base_url=judge.api.base_url, config=LLMConfig(
        store_path=str(tmp / "llm.sqlite"), cache=False)), env.judge.concurrency)
    return make_score_fn(tasks, str(model_dir), provider, env, AttributionConfig(), calls), {"rank": 0}


def serial_arm(step: Step, score_fn, tok, base: dict[str, Any], judge: Judge, calls: list[Call], update: Update) -> Arm:
    """One score call after the whole batch, as with rollout.stream_scoring=false; then the real update."""
    from training.stream import score_rollouts

    judge.reset_peak()
    calls.clear()
    c0, t0 = cpu_s(), time.perf_counter()
    scored = score_rollouts(score_fn, step.queries, step.rollouts, step.group_ids, tok, {**base, "step": 1})
    score_s = time.perf_counter() - t0
    cpu, peak, own = cpu_s() - c0, judge.peak, list(calls)
    return Arm(scored, score_s, cpu, peak, own, update(step, scored))


def streamed_arm(args: argparse.Namespace, step: Step, score_fn, tok, parts: list[tuple[float, list[int]]],
                 base: dict[str, Any], judge: Judge, calls: list[Call], update: Update) -> Arm:
    """The same responses submitted as their groups are generated; the update only when ``--update-twice``."""
    judge.reset_peak()
    calls.clear()
    c0 = cpu_s()
    scored, timing, mark = run_streamed(step, score_fn, tok, parts, args.workers, calls, {**base, "step": 2})
    own = list(calls)  # the streamed arm's own calls (the off-policy arm adds more)
    cpu, peak = cpu_s() - c0, judge.peak
    return Arm(scored, mark["done"] - mark["t0"], cpu, peak, own, update(step, scored, run=args.update_twice),
               timing, mark)


def measure(args: argparse.Namespace) -> Measured:
    """Set up (tiny policy, DeepSpeed engine, fake judge, warm-up), then the serial, streamed and off-policy arms."""
    from schemas.config.env import EnvConfig, JudgeConfig, RuntimeConfig
    from fakes.http_fake import LongTail
    from training.config import demo_config
    from training.stream import score_rollouts
    from training.tiny import build_tiny_model

    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")  # the local fake's; _safe dropped the real ones
    lat = LongTail(median_s=args.median_s, p95_s=args.p95_s, scale=args.latency_scale, seed=args.seed, key=latency_key)
    env = EnvConfig(judge=JudgeConfig(concurrency=args.judge_concurrency),
                    runtime=RuntimeConfig(concurrency=args.browser_concurrency))
    mb = max(d for d in range(1, 9) if args.n % d == 0)
    cfg = demo_config(rollout={"queries_per_step": args.groups, "group_size": args.group_size},
                      deepspeed={"micro_batch_size": mb})
    pool = load_pool(args.checks)
    tasks = {t.query_id: t for t, _ in pool}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        t_setup = [time.perf_counter()]
        model_dir = build_tiny_model(Path(tmp) / "tiny")
        t_setup.append(time.perf_counter())
        update = Update(cfg, model_dir)
        tok = update.tok
        t_setup.append(time.perf_counter())
        judge = Judge(lat)
        calls: list[Call] = []
        time_browser()
        score_fn, base = make_scorer(args, stack, Path(tmp), tasks, judge, env, model_dir, calls)
        warm = build_step(pool, tok, cfg, min(2, args.groups), 2, args.seed, 0)  # browser, SDK pool, caches
        score_rollouts(score_fn, warm.queries, warm.rollouts, warm.group_ids, tok, {**base, "step": 0})
        t_setup.append(time.perf_counter())
        step = build_step(pool, tok, cfg, args.groups, args.group_size, args.seed, 1)
        lats = [lat.draw(m) for m in step.markers]
        serial = serial_arm(step, score_fn, tok, base, judge, calls, update)
        gen_s = args.gen_s or args.gen_ratio * serial.score_s
        parts = finish_times(step, args.slots, gen_s, args.per_response)
        streamed = streamed_arm(args, step, score_fn, tok, parts, base, judge, calls, update)
        op_rows: list[dict[str, float]] = []
        if args.off_policy_steps:
            op_steps = [build_step(pool, tok, cfg, args.groups, args.group_size, args.seed, 3 + k)
                        for k in range(args.off_policy_steps)]
            op_parts = [finish_times(s, args.slots, gen_s, args.per_response) for s in op_steps]
            op_rows = run_off_policy(op_steps, op_parts, score_fn, tok, args.workers, {**base, "step": 3},
                                     serial.update_s if streamed.update_s is None else streamed.update_s)
        judge.api.stop()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return Measured(t_setup, len(pool), lats, gen_s, parts, serial, streamed, op_rows, load)


def main() -> int:
    args = parse_args()
    m = measure(args)
    print_step(args, m)
    print_calls(m)
    print_goals(args, m)
    if m.off_policy:
        print_off_policy(m)
    print(f"load: {m.load}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
