"""Cost before spending: how many LLM calls a profile makes per stage, and what they would cost.

Call counts follow the configuration (paper scale with ``--profile full``): query synthesis makes one
call per candidate, each of the six rubric stages (checks included) one per query, SFT one per query and teacher,
selection one judge call per probe sample, GRPO one judge call per response (B x G per step).
Tokens per call are the means of this data directory's ledger for the same stage (run the demo
first; the offline provider's ledger holds rendered-prompt input estimates and rule-made outputs,
which are usually shorter than a model's: treat output figures from an offline ledger as a floor).
Stages without ledger rows use a stated default guess. Prompt caching and batch discounts are left
out.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from schemas.config import Config
from schemas.config_llm import Prices
from schemas.config_rubrics import RUBRIC_STAGES


def call_counts(cfg: Config) -> dict[str, int]:
    s = cfg.synth
    n_q = s.n_queries
    counts = {"query_candidates": math.ceil(round(n_q * (1 + s.oversample), 6))}
    counts.update({st: n_q for st in RUBRIC_STAGES})
    n_sft = min(n_q, cfg.sft.max_queries or n_q)
    counts["sft_answers"] = n_sft * max(1, len(cfg.sft.teachers))
    n_probe = min(n_q, cfg.selection.max_candidates or n_q)
    counts["judgments (selection probes)"] = n_probe * cfg.selection.probe_samples
    counts["judgments (GRPO)"] = cfg.train.run.steps * cfg.train.rollout.queries_per_step * cfg.train.rollout.group_size
    return counts


@dataclass
class StageCost:
    stage: str
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float
    basis: str


def per_call_tokens(ledger_rows: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for r in ledger_rows:
        if r["cached"]:
            continue
        s = sums[r["stage"]]
        s[0] += r["input_tokens"]
        s[1] += r["output_tokens"]
        s[2] += 1
    return {k: (v[0] / v[2], v[1] / v[2]) for k, v in sums.items() if v[2]}


DEFAULT_TOKENS = {"query_candidates": (600, 300), "sft_answers": (900, 12000), "judgments": (9000, 2500)}


def estimate_profile(cfg: Config, ledger_rows: list[dict[str, Any]], prices: Prices) -> list[StageCost]:
    means = per_call_tokens(ledger_rows)
    out = []
    for stage, calls in call_counts(cfg).items():
        key = stage.split(" ")[0]
        if key in means:
            tin, tout = means[key]
            basis = "ledger mean"
        else:
            tin, tout = DEFAULT_TOKENS.get(key, (3000, 1500))
            basis = "default guess (no ledger rows for this stage yet)"
        cost = calls * (tin * prices.input + tout * prices.output) / 1e6
        out.append(StageCost(stage, calls, int(calls * tin), int(calls * tout), cost, basis))
    return out


def format_costs(rows: list[StageCost], model: str) -> str:
    head = f"{'stage':<30} {'calls':>9} {'input tok':>14} {'output tok':>14} {'usd':>12}  basis"
    lines = [f"dry run, model {model} (nothing was called)", head]
    for r in rows:
        lines.append(f"{r.stage:<30} {r.calls:>9} {r.input_tokens:>14} {r.output_tokens:>14} {r.usd:>12.2f}  {r.basis}")
    tot = sum(r.usd for r in rows)
    lines.append(f"{'total':<30} {sum(r.calls for r in rows):>9} {sum(r.input_tokens for r in rows):>14} "
                 f"{sum(r.output_tokens for r in rows):>14} {tot:>12.2f}")
    return "\n".join(lines)
