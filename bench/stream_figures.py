"""The figures ``bench_stream.py`` prints, from what it measured: one GRPO step's serial and streamed arms, where
the time goes, the goals, the one-step-off-policy steps. Every line says its judge was the local fake."""
from __future__ import annotations

import statistics
from argparse import Namespace
from dataclasses import dataclass
from typing import Any


@dataclass
class Call:
    """One score call, as the bench saw it (where the time goes)."""

    offset: int
    start: float
    browser_s: float  # check_many wall time in this call
    score_s: float  # score_step's scoring phase: static, browser, judge, rewards
    attribute_s: float
    end: float


def overhead(c: Call) -> float:
    """A call's wall time outside score_step's own phases (the scorer's wrapping: Prefect runs, records)."""
    return c.end - c.start - c.score_s - c.attribute_s


@dataclass
class Arm:
    """One scoring arm of the step: its scores, the seconds it took, the judge's peak in flight, the update."""

    scored: Any
    score_s: float  # serial: the one score call; streamed: the stream's start to its last score
    cpu_s: float
    peak: int
    calls: list[Call]
    update_s: float | None  # None: not run (the streamed step adds the serial step's)
    timing: dict[str, float] | None = None
    mark: dict[str, float] | None = None


@dataclass
class Measured:
    setup_s: list[float]  # perf_counter marks: start, tiny model, DeepSpeed engine, warm-up
    pool_size: int
    lats: list[float]  # the step's drawn judge latencies, per response
    gen_s: float
    parts: list[tuple[float, list[int]]]
    serial: Arm
    streamed: Arm
    off_policy: list[dict[str, float]]
    load: str


def row(text: str) -> None:  # every figure says its judge was the local fake (no API key, nothing billed)
    print(f"{text}  [offline: fake judge API]")


def update_s(m: Measured) -> float:
    """The update's duration: the serial step's, or the mean of both steps' under ``--update-twice``."""
    if m.streamed.update_s is None:
        return m.serial.update_s
    return statistics.mean([m.serial.update_s, m.streamed.update_s])


def step_bound(m: Measured) -> float:
    """The goal for a streamed step: 1.15 x (max(generation, scoring) + update)."""
    return 1.15 * (max(m.gen_s, m.serial.score_s) + update_s(m))


def print_step(args: Namespace, m: Measured) -> None:
    """The set-up, the two steps' phases, their ratio and the scoring tail."""
    se, st, n, lats = m.serial, m.streamed, args.n, m.lats
    gen_end = max(at for at, _ in m.parts)
    serial_step = m.gen_s + se.score_s + se.update_s
    streamed_step = st.score_s + (se.update_s if st.update_s is None else st.update_s)
    tail = st.mark["last_scored"] - st.mark["gen_end"]
    # What the judge alone forces: a response cannot be scored before its group is generated + its own latency.
    floor = max(at + max(lats[i] for i in idx) for at, idx in m.parts)
    print(f"bench_stream: B={args.groups} x G={args.group_size} = {n} responses over {m.pool_size} fixture tasks; "
          f"judge = fake Anthropic API via the real SDK (offline: no real judge), latency lognormal median "
          f"{args.median_s:g} s / p95 {args.p95_s:g} s x {args.latency_scale:g} (drawn: median "
          f"{statistics.median(lats):.2f} s, max {max(lats):.2f} s); judge concurrency {args.judge_concurrency}, "
          f"browser slots {args.browser_concurrency}, stream workers {args.workers}, gen slots {args.slots}, "
          f"parts: {'one per response' if args.per_response else 'one per group'}, scorer {args.scorer}")
    t = m.setup_s
    row(f"setup (untimed in both modes): tiny model {t[1] - t[0]:.1f} s, DeepSpeed engine "
        f"{t[2] - t[1]:.1f} s, browser + SDK warm-up {t[3] - t[2]:.1f} s")
    unit = "responses" if args.per_response else "groups"
    row(f"generation (replayed)        {m.gen_s:8.2f} s  {unit} finish at {min(at for at, _ in m.parts):.2f} .. {gen_end:.2f} s")
    row(f"serial scoring               {se.score_s:8.2f} s  (score {se.scored.time_score_s:.2f} s, attribute "
        f"{se.scored.time_attribute_s:.2f} s; judge peak in flight {se.peak}; bench process CPU {se.cpu_s:.1f} s)")
    row(f"update (real DeepSpeed)      {update_s(m):8.2f} s  " + (
        "(run after the serial scoring; the streamed step adds this measured duration)" if st.update_s is None
        else f"(serial step {se.update_s:.2f} s, streamed step {st.update_s:.2f} s)"))
    row(f"serial step                  {serial_step:8.2f} s  = generation + scoring + update")
    row(f"streamed step                {streamed_step:8.2f} s  (scoring busy {st.timing['score_busy_s']:.2f} s summed "
        f"over calls; submit blocked {st.mark['blocked_s']:.2f} s; judge peak in flight {st.peak}; "
        f"bench process CPU {st.cpu_s:.1f} s)")
    row(f"scoring tail                 {tail:8.2f} s  = {100 * tail / se.score_s:.1f}% of serial scoring "
        f"(ScoreStream's own: {st.timing['score_tail_s']:.2f} s; floor set by judge latency alone: "
        f"{max(floor - gen_end, 0):.2f} s)")
    row(f"ratio serial / streamed      {serial_step / streamed_step:8.2f} x")


def print_calls(m: Measured) -> None:
    """Where the time goes: the serial call, the streamed calls on average, the last scored part."""
    (sc,), lats = m.serial.calls, m.lats
    row(f"where the time goes, serial call: browser {sc.browser_s:.2f} s, judge + gates {sc.score_s - sc.browser_s:.2f} "
        f"s, attribution {sc.attribute_s:.2f} s, outside score_step {overhead(sc):.2f} s")
    part_at = {idx[0]: (at, idx) for at, idx in m.parts}
    per = [(c, part_at[c.offset][0]) for c in m.streamed.calls]
    t0s = m.streamed.mark["t0"]
    row(f"  streamed calls ({len(per)}): mean browser {statistics.mean(c.browser_s for c, _ in per):.2f} s, mean judge "
        f"+ gates {statistics.mean(c.score_s - c.browser_s for c, _ in per):.2f} s, mean wait for a worker "
        f"{statistics.mean(c.start - t0s - a for c, a in per):.2f} s, mean outside score_step "
        f"{statistics.mean(overhead(c) for c, _ in per):.2f} s")
    c, a = max(per, key=lambda x: x[0].end)
    row(f"  last scored part: generated at {a:.2f} s, call started {c.start - t0s:.2f} s, browser {c.browser_s:.2f} s, "
        f"judge + gates {c.score_s - c.browser_s:.2f} s (its max drawn latency "
        f"{max(lats[i] for i in part_at[c.offset][1]):.2f} s), attribution {c.attribute_s:.2f} s, "
        f"scored at {c.end - t0s:.2f} s")


def print_goals(args: Namespace, m: Measured) -> None:
    """Equal results in both modes, and the two goals of the streamed step."""
    se, st, n, bound = m.serial, m.streamed, args.n, step_bound(m)
    streamed_step = st.score_s + (se.update_s if st.update_s is None else st.update_s)
    tail = st.mark["last_scored"] - st.mark["gen_end"]
    same_r = sum(a == b for a, b in zip(se.scored.rewards, st.scored.rewards))
    same_m = sum((a == b).all() for a, b in zip(se.scored.membership, st.scored.membership))
    missing = sum(r is None for r in st.scored.rewards)
    row(f"results equal: rewards {same_r}/{n}, membership {same_m}/{n}; missing rewards (streamed) {missing}")
    row(f"goal tail <= 10% of serial scoring: {'PASS' if tail <= 0.10 * se.score_s else 'FAIL'} "
        f"({100 * tail / se.score_s:.1f}%)")
    row(f"goal streamed <= 1.15 x (max(gen, scoring) + update) = {bound:.2f} s: "
        f"{'PASS' if streamed_step <= bound else 'FAIL'} ({streamed_step:.2f} s, {streamed_step / (bound / 1.15):.3f} x)")


def print_off_policy(m: Measured) -> None:
    """Each off-policy step's period and exposed tail, and the goals on the steady steps."""
    rows, serial_score, bound = m.off_policy, m.serial.score_s, step_bound(m)
    steady = rows[1:-1]  # the first step generates two batches, the last one none
    for k, r in enumerate(rows):
        row(f"off-policy step {k}: period {r['period']:7.2f} s, exposed tail {r['exposed']:6.2f} s (the stream's "
            f"tail {r['tail']:.2f} s, the rest hidden behind the next batch's generation), missing rewards {int(r['missing'])}"
            + ("" if 0 < k < len(rows) - 1 else "  (not steady state)"))
    worst_exposed, worst_period = max(r["exposed"] for r in steady), max(r["period"] for r in steady)
    row(f"goal (off-policy) exposed tail <= 10% of serial scoring: "
        f"{'PASS' if worst_exposed <= 0.10 * serial_score else 'FAIL'} (worst steady step {worst_exposed:.2f} s, "
        f"{100 * worst_exposed / serial_score:.1f}%)")
    row(f"goal (off-policy) step period <= 1.15 x (max(gen, scoring) + update) = {bound:.2f} s: "
        f"{'PASS' if worst_period <= bound else 'FAIL'} (worst steady step {worst_period:.2f} s, "
        f"{worst_period / (bound / 1.15):.3f} x)")
