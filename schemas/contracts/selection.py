"""The ``probe_rollouts`` and ``rl_queries`` stages (select-rl-queries, paper D.2): schemas and GX suites.

``probe_rollouts``: k responses per candidate query sampled from the current policy (which one is in
every row). They are scored into ``probe_judgments`` / ``probe_rewards`` (the schemas of
``schemas/contracts/env.py``, separate stages so the RL job's own ``judgments``/``rewards`` stay untouched).
``rl_queries``: the selected queries with every score component and the reason; the train-rl job reads
``query_id``, ``query`` (the expanded query) and ``rubric_json``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from schemas.contracts.validation import expectations, FrameSuite, rows, suite

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx

PROBE_ROLLOUTS_SCHEMA = pa.schema([
    pa.field("rollout_id", pa.string(), nullable=False),  # <query_id>:p<sample>
    pa.field("query_id", pa.string()),
    pa.field("sample", pa.int64()),
    pa.field("response", pa.string()),
    pa.field("n_tokens", pa.int64()),
    pa.field("finished", pa.bool_()),  # stopped on the end-of-turn token (False: hit the length limit)
    pa.field("policy_checkpoint", pa.string()),
    pa.field("policy_kind", pa.string()),  # checkpoint | tiny-random (no checkpoint found)
    pa.field("seed", pa.int64()),
])

POLICY_KINDS = ["checkpoint", "tiny-random"]

RL_QUERIES_SCHEMA = pa.schema([
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("query", pa.string()),  # the expanded query (rubric stage 1), as the policy sees it
    pa.field("rubric_json", pa.string()),  # CompactRubric JSON
    pa.field("category_ids", pa.list_(pa.string())),
    pa.field("capability_ids", pa.list_(pa.string())),
    pa.field("persona_id", pa.string()),
    pa.field("difficulty", pa.string()),
    pa.field("domain", pa.string()),
    pa.field("probe_samples", pa.int64()),
    pa.field("probe_rewards", pa.list_(pa.float64())),  # null entries: missing rewards
    pa.field("mean_reward", pa.float64()),
    pa.field("distinct_levels", pa.int64()),
    pa.field("reward_std", pa.float64()),
    pa.field("discrimination", pa.float64()),
    pa.field("weakness", pa.float64()),
    pa.field("base_score", pa.float64()),
    pa.field("coverage_factor", pa.float64()),
    pa.field("final_score", pa.float64()),
    pa.field("rank", pa.int64()),  # order of the greedy pick (1 = first)
    pa.field("reason", pa.string()),
    pa.field("policy_checkpoint", pa.string()),
    pa.field("policy_kind", pa.string()),
    pa.field("judge_provider", pa.string()),  # who judged the probes behind the scores (offline | anthropic | ...)
])


def probe_rollouts_suites() -> list[FrameSuite]:
    E = expectations()
    return [FrameSuite("rows", rows, suite(
        "probe_rollouts",
        E.ExpectColumnValuesToNotBeNull(column="rollout_id"),
        E.ExpectColumnValuesToBeUnique(column="rollout_id"),
        E.ExpectColumnValuesToNotBeNull(column="query_id"),
        E.ExpectColumnValuesToNotBeNull(column="response"),
        E.ExpectColumnValuesToBeBetween(column="n_tokens", min_value=0),
        E.ExpectColumnValuesToNotBeNull(column="policy_checkpoint"),
        E.ExpectColumnValuesToBeInSet(column="policy_kind", value_set=POLICY_KINDS),
    ), ["rollout_id"])]


def rl_queries_suites() -> list[FrameSuite]:
    E = expectations()
    return [FrameSuite("rows", rows, suite(
        "rl_queries",
        E.ExpectColumnValuesToNotBeNull(column="query_id"),
        E.ExpectColumnValuesToBeUnique(column="query_id"),
        E.ExpectColumnValuesToNotBeNull(column="query"),
        E.ExpectColumnValuesToNotBeNull(column="rubric_json"),
        # Equal probe rewards give zero advantage: such a query is never in the RL set (paper D.2).
        E.ExpectColumnValuesToBeBetween(column="distinct_levels", min_value=2),
        E.ExpectColumnValuesToBeBetween(column="discrimination", min_value=0.0, max_value=1.0, strict_min=True),
        E.ExpectColumnValuesToBeBetween(column="coverage_factor", min_value=0.0, max_value=1.0),
        E.ExpectColumnValuesToBeBetween(column="final_score", min_value=0.0, strict_min=True),
        E.ExpectColumnValuesToNotBeNull(column="reason"),
        E.ExpectColumnValuesToBeInSet(column="policy_kind", value_set=POLICY_KINDS),
        E.ExpectColumnValuesToNotBeNull(column="judge_provider"),
    ), ["query_id"])]
