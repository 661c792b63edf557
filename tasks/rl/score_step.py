"""One GRPO step's environment work: score the rollouts (gates, judge, hierarchical reward) and
attribute every finding to the generated tokens (paper 3.4, B.3, B.4).

Returns per response the reward (``None`` = missing: the trainer drops it), the membership code of
every generated token id (``tasks.attribution.weights``: direct / context / other; the trainer turns
codes into weights with the one rule there, since it computes the advantages), ``uniform`` for
findings that could not be localised, and the judgments / rewards / check_results / attributions rows
for the stages; each attributions row names ``rule``, the weight rule the trainer applies to it (the one
``train.objective.mode`` selects). Token spans come from the generated ids (``token_offsets_array``),
never from re-tokenising the text. The ``score-step`` flow (``flows/score_step.py``) runs it once
per GRPO step.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from schemas.config.attribution import AttributionConfig, WeightRule
from schemas.config.env import EnvConfig
from schemas.contracts.attribution import ATTRIBUTIONS_SCHEMA
from schemas.rubric import Task
from tasks.attribution.api import AttributionTrace, trace_row
from tasks.attribution.tokens import token_membership, token_offsets_array
from tasks.env.publish import ScoredTables
from tasks.env.score_tables import scored_tables
from tasks.env.rewards import passed as pass_rule
from tasks.env.score import ScoreInput, score_batch
from tasks.llm.base import Provider


@dataclass
class StepScore:
    rewards: list[float | None]
    membership: list[np.ndarray]  # (T_i,) int8 codes per response
    uniform: list[bool]
    passed: list[bool]
    tier: list[str]
    scored: ScoredTables  # the judgments, rewards and check_results rows
    attributions: pa.Table
    time_score_s: float
    time_attribute_s: float


def score_step(rollout_ids: list[str], query_ids: list[str], responses: list[str], token_ids: list[list[int]],
               tasks: dict[str, Task], tokenizer: Any, *, provider: Provider | None, env: EnvConfig,
               attribution: AttributionConfig, rule: WeightRule = "sign") -> StepScore:
    missing = sorted({q for q in query_ids if q not in tasks})
    if missing:
        raise ValueError(f"rollouts name queries without a task: {missing[:5]}; train on the rl_queries stage")
    t0 = time.perf_counter()
    results = score_batch([ScoreInput(k, tasks[q], r) for k, q, r in zip(rollout_ids, query_ids, responses)],
                          provider=provider, cfg=env, attribution=attribution)
    scored = scored_tables(results, tasks, env)
    t1 = time.perf_counter()
    membership, uniform, rows = [], [], []
    for res, ids, text in zip(results, token_ids, responses):
        offsets = token_offsets_array(ids, tokenizer, expected_text=text)
        trace = res.attribution if res.attribution is not None else AttributionTrace(h=res.html_offset or 0,
                                                                                       source_len=res.html_length)
        membership.append(token_membership(offsets, trace.direct_response(), trace.context_response()))
        uniform.append(trace.status == "unlocalised")
        rows.append(trace_row(trace, res.key, res.query_id, offsets=[tuple(map(int, o)) for o in offsets],
                              rule=rule))
    tier = scored.rewards.column("tier").to_pylist()
    passed = [pass_rule(r.format_valid, r.source_valid, r.runtime_valid,
                        r.rubric_severities() if r.gates.get("rubric_alignment") is not None else None)
              is True for r in results]
    return StepScore([r.reward for r in results], membership, uniform, passed, tier, scored,
                     pa.Table.from_pylist(rows, schema=ATTRIBUTIONS_SCHEMA), t1 - t0, time.perf_counter() - t1)
