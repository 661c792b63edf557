"""What ``rubricrl run`` prints when it stops: a few figures per flow that ran, so a newcomer sees at a glance
that the paper's loop ran (or where it went flat), and the warnings of a degenerate run.

The figures are read back from the published stages, the same rows a user opens in DuckDB:

- build-rubrics: items per query; generate-sft: accepted teacher answers; train-sft: the loss and the
  examples cut by ``train_sft.run.max_seq_len``;
- select-rl-queries: the share of valid probe apps, the tiers, the distinct probe rewards, the size of
  ``rl_queries``;
- train-rl: the mean reward of the first and last steps, the share of its apps that reached the rubric
  (tier valid);
- evaluate: per policy, the pass rate, the mean reward and the share of valid apps.

A degenerate output (every probe or train-rl reward equal, no valid app at all, an empty selection) is a
warning line: such a run taught nothing. ``summarize`` is pure (rows in, lines out); ``run_summary`` reads
the store.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from statistics import mean
from typing import Any, Callable

Rows = list[dict[str, Any]]
Reader = Callable[[str], "Rows | None"]  # stage -> its rows, None when it is not published

VALID = "valid"
FORMAT_INVALID = "format_invalid"


@dataclass
class Summary:
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # a degenerate output, one sentence each

    def text(self) -> str:
        out = ["", "Summary of this run:", *(f"  {x}" for x in self.lines)]
        out += [f"  WARNING degenerate output: {p}" for p in self.problems]
        return "\n".join(out)


def _share(rows: Rows, tier: str) -> float:
    return sum(1 for r in rows if r.get("tier") == tier) / len(rows) if rows else 0.0


def _tiers(rows: Rows) -> str:
    return ", ".join(f"{t} {n}" for t, n in sorted(Counter(str(r.get("tier")) for r in rows).items()))


def _rewards(rows: Rows) -> list[float]:
    return [float(r["reward"]) for r in rows if r.get("reward") is not None]


def _app_figures(label: str, rows: Rows, s: Summary) -> None:
    """Tiers and rewards of one flow's scored apps, and the two ways they can be flat."""
    rewards = _rewards(rows)
    s.lines.append(f"{label}: {len(rows)} apps, {_share(rows, VALID):.0%} valid ({_tiers(rows)}); "
                   f"mean reward {mean(rewards) if rewards else float('nan'):.3f}, "
                   f"{len(set(rewards))} distinct rewards")
    if rows and all(r.get("tier") == FORMAT_INVALID for r in rows):
        s.problems.append(f"{label}: every app is format-invalid (no complete HTML document)")
    elif len(rewards) > 1 and len(set(rewards)) == 1:
        s.problems.append(f"{label}: every reward is {rewards[0]:.3f}, so no group has an advantage")


def _metric(rows: Rows, name: str) -> list[tuple[int, float]]:
    return sorted((int(r["step"]), float(r["value"])) for r in rows if r["metric"] == name)


def summarize(flows: list[str], read: Reader) -> Summary:
    """The figures of the flows that ran (``flows``, in order), from their stages' rows."""
    s = Summary()
    for name in flows:
        if name == "synthesize-queries" and (q := read("queries")) is not None:
            s.lines.append(f"synthesize-queries: {len(q)} queries")
        elif name == "build-rubrics" and (items := read("rubric_items")) is not None:
            per = Counter(r["query_id"] for r in items)
            s.lines.append(f"build-rubrics: {len(items)} rubric items for {len(per)} queries "
                           f"({min(per.values(), default=0)}-{max(per.values(), default=0)} per query)")
        elif name == "generate-sft" and (a := read("sft_answers")) is not None:
            s.lines.append(f"generate-sft: {len(a)} teacher answers")
        elif name == "train-sft" and (steps := read("sft_steps")) is not None:
            loss, cut = _metric(steps, "loss/sft"), _metric(steps, "rollout/examples_cut")
            if loss:
                s.lines.append(f"train-sft: {len(loss)} steps, loss {loss[0][1]:.3f} -> {loss[-1][1]:.3f}, "
                               f"{int(sum(v for _, v in cut))} examples cut by train_sft.run.max_seq_len")
        elif name == "select-rl-queries" and (probe := read("probe_rewards")) is not None:
            _app_figures("select-rl-queries probe", probe, s)
            sel = read("rl_queries") or []
            s.lines.append(f"select-rl-queries: {len(sel)} rl_queries selected")
            if not sel:
                s.problems.append("select-rl-queries: rl_queries is empty")
        elif name == "train-rl" and (rewards := read("rewards")) is not None:
            steps = read("train_steps") or []
            mean_r = _metric(steps, "reward/mean")
            if mean_r:
                s.lines.append(f"train-rl: {len(mean_r)} steps, reward/mean first step {mean_r[0][1]:.3f}, "
                               f"last step {mean_r[-1][1]:.3f}")
            _app_figures("train-rl rollouts", rewards, s)
            if rewards and not any(r.get("tier") == VALID for r in rewards):
                s.problems.append("train-rl: no app reached the rubric (none is valid)")
        elif name == "evaluate" and (ev := read("eval_results")) is not None:
            for model in sorted({r["model"] for r in ev}, key=[r["model"] for r in ev].index):
                rows = [r for r in ev if r["model"] == model]
                rewards = _rewards(rows)
                s.lines.append(f"evaluate {model}: pass rate {sum(bool(r['passed']) for r in rows) / len(rows):.0%}, "
                               f"mean reward {mean(rewards) if rewards else float('nan'):.3f}, "
                               f"{_share(rows, VALID):.0%} valid, {len(rows)} apps")
            if ev and all(r.get("tier") == FORMAT_INVALID for r in ev):
                s.problems.append("evaluate: every app of every policy is format-invalid")
    return s


def run_summary(store: Any, flows: list[str]) -> Summary:
    """:func:`summarize` over the published stages of ``store`` (a ``StageStore``)."""
    def read(stage: str) -> Rows | None:
        return None if store.manifest(stage) is None else store.read(stage).to_pylist()

    return summarize(flows, read)
