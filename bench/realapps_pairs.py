"""Within-task pairs of apps and how a score orders them (pure functions): the development set's arithmetic.

An app is (task, model, reward, label). A pair is two apps of the same task whose labels differ (label ties are
skipped: nothing to order); an app without a label or without a reward is in no pair (the reader of the labels
says how many were dropped and why, never silently). A pair is ``right`` when the reward orders it as the label
does, ``tie`` when the two rewards are equal, else ``wrong``. Ties count as misses in ``rate``, as
``tasks.evaluation.agreement.pairwise_within`` counts them; ``untied_rate`` is the share right among the pairs
the reward did order. ``order_pairs`` orders the same pairs by another score (the benchmark's VLM judge), so the
two figures are on one set of pairs.

``official_label`` makes an app's label from the ``official_detail`` rows of its eval_results row (the
benchmark's own Playwright tests as ``bench_official.py`` ran them): the share of its judged tests that passed,
where a test that could not be judged here (no reference screenshot, a library the mirror lacks) or that hit a
time limit (``timedOut``: on a loaded machine the runner's clock, not the app, may have ended it) is not judged;
an app with no judged test gets no label, with the reason.

Run: ``pairs = within_pairs([App(task, model, reward, label), ...]); figures(pairs)``;
``order_pairs(pairs, {(model, task): score})``; ``group_spread(apps)``; ``official_label(detail, note)``.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Iterable

from tasks.evaluation.official import HARNESS_CHANGED_SCRIPT

EPS = 1e-9
NOT_JUDGED = ("no_reference", "unserved")  # official_detail statuses the environment could not judge


@dataclass(frozen=True)
class App:
    task: str
    model: str
    reward: float | None
    label: float | None


@dataclass(frozen=True)
class Pair:
    task: str
    a: App
    b: App
    verdict: str  # right | wrong | tie


@dataclass(frozen=True)
class Figures:
    pairs: int
    right: int
    ties: int

    @property
    def wrong(self) -> int:
        return self.pairs - self.right - self.ties

    @property
    def rate(self) -> float | None:
        """Share of pairs ordered right, ties counted as misses."""
        return self.right / self.pairs if self.pairs else None

    @property
    def untied_rate(self) -> float | None:
        """Share of pairs ordered right among those the score did not tie."""
        return self.right / (self.pairs - self.ties) if self.pairs > self.ties else None


def order(sa: float, sb: float, la: float, lb: float, eps: float = EPS) -> str:
    """``tie`` when the scores are equal, ``right`` when they order the two as the labels do, else ``wrong``."""
    if abs(sa - sb) <= eps:
        return "tie"
    return "right" if (sa > sb) == (la > lb) else "wrong"


def within_pairs(apps: Iterable[App], eps: float = EPS) -> list[Pair]:
    """Every pair of apps of one task with both rewards and labels present and different labels."""
    by_task: dict[str, list[App]] = defaultdict(list)
    for app in apps:
        if app.reward is not None and app.label is not None:
            by_task[app.task].append(app)
    out = []
    for task in sorted(by_task):
        for a, b in combinations(sorted(by_task[task], key=lambda x: x.model), 2):
            if abs(a.label - b.label) > eps:
                out.append(Pair(task, a, b, order(a.reward, b.reward, a.label, b.label, eps)))
    return out


@dataclass(frozen=True)
class Groups:
    """A task's labelled, rewarded apps as one GRPO group: how many groups there are, how many the reward leaves
    with no spread at all (every app the same reward: zero advantage, nothing learnt), how many the labels do,
    and how many of the reward's flat groups have labels that differ (a gradient the reward throws away)."""
    groups: int
    flat: int
    labels_flat: int
    flat_labels_differ: int


def group_spread(apps: Iterable[App], eps: float = EPS) -> Groups:
    """The groups of ``apps`` (a task's apps with both a reward and a label; a group needs two)."""
    by_task: dict[str, list[App]] = defaultdict(list)
    for app in apps:
        if app.reward is not None and app.label is not None:
            by_task[app.task].append(app)
    groups = [g for g in by_task.values() if len(g) > 1]
    flat_r = [max(a.reward for a in g) - min(a.reward for a in g) <= eps for g in groups]  # type: ignore[type-var,operator]
    flat_l = [max(a.label for a in g) - min(a.label for a in g) <= eps for g in groups]  # type: ignore[type-var,operator]
    return Groups(len(groups), sum(flat_r), sum(flat_l), sum(r and not lab for r, lab in zip(flat_r, flat_l)))


def figures(pairs: Iterable[Pair]) -> Figures:
    verdicts = Counter(p.verdict for p in pairs)
    return Figures(sum(verdicts.values()), verdicts["right"], verdicts["tie"])


def order_pairs(pairs: Iterable[Pair], score: dict[tuple[str, str], float],
                eps: float = EPS) -> tuple[Figures, int]:
    """How ``score`` ((model, task) -> value) orders the same pairs: its figures over the pairs it scores both
    apps of, and how many pairs it could not (an app it has no score for)."""
    verdicts, unscored = [], 0
    for p in pairs:
        sa, sb = score.get((p.a.model, p.task)), score.get((p.b.model, p.task))
        if sa is None or sb is None:
            unscored += 1
            continue
        verdicts.append(order(sa, sb, p.a.label, p.b.label, eps))  # type: ignore[arg-type]
    c = Counter(verdicts)
    return Figures(len(verdicts), c["right"], c["tie"]), unscored


def official_label(detail: list[dict[str, Any]] | None, note: str | None = None,
                   timeouts_judged: bool = False) -> tuple[float | None, str | None]:
    """(label, why there is none) from one app's ``official_detail`` rows. ``timeouts_judged``: count a test
    that timed out as failed (as ``official_score`` does) instead of not judged."""
    detail = detail or []
    if not detail:
        return None, f"no official test ran ({note or 'no reason recorded'})"
    if note and HARNESS_CHANGED_SCRIPT in note:  # its tests ran on a page the answer is not
        return None, HARNESS_CHANGED_SCRIPT
    passed = failed = 0
    skipped: Counter = Counter()
    for d in detail:
        status = d.get("status")
        if d.get("passed") is True:
            passed += 1
        elif status in NOT_JUDGED or d.get("passed") is None:
            skipped[status or "not judged"] += 1
        elif status == "timedOut" and not timeouts_judged:
            skipped["timedOut"] += 1
        else:
            failed += 1
    if passed + failed == 0:
        return None, "no test judged: " + ", ".join(f"{n} {s}" for s, n in sorted(skipped.items()))
    return passed / (passed + failed), None
