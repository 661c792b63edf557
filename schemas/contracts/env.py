"""The stages the environment publishes per scored response (paper 3.3, B.2): ``judgments``,
``rewards`` and ``check_results``; pyarrow schemas and GX suites.

``judgments`` and ``rewards`` have one row per scored response. ``judgments`` keeps every piece of evidence
(gates, our own tree-sitter and browser evidence as JSON, the judge's findings as a list of structs) so any
reward can be explained in DuckDB, e.g.::

    SELECT r.reward, f.layer, f.severity, f.item_id, f.description
    FROM rewards r JOIN judgments j USING (rollout_id), UNNEST(j.findings) AS t(f)
    WHERE r.query_id = 'q5';

The interaction probe's evidence is the ``interaction`` struct (offsets into the response)::

    SELECT rollout_id, interaction.status, f.kind, f.label, f.message, f.offset
    FROM judgments, UNNEST(interaction.failures) AS t(f);
    SELECT rollout_id, interaction.dead_controls, interaction.visual_change FROM judgments;

``rewards`` holds the number, its tier, why it is missing or runtime-invalid (``tier_cause``) and the reward
config hash it was computed with. An app that failed after a library request the sandbox's CDN mirror could
not serve has no reward (``tier_cause = 'environment_gap'``); the URLs are in ``judgments.environment_gaps``::

    SELECT r.tier_cause, count(*) FROM rewards r GROUP BY 1;
    SELECT rollout_id, u FROM judgments, UNNEST(environment_gaps) AS t(u);

``check_results`` has one row per scored response and checked rubric item, joinable to ``rubric_items`` on
(query_id, item_id = id) and to ``rewards`` / ``judgments`` on rollout_id, e.g. which items fail their checks
most often::

    SELECT i.requirement, c.status, count(*) FROM check_results c
    JOIN rubric_items i ON i.query_id = c.query_id AND i.id = c.item_id GROUP BY ALL ORDER BY 3 DESC;

Offsets (``error_offset``, and those inside ``errors_json``) are character offsets into the response.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from schemas.checks import STATUSES
from schemas.config.env import TIERS, RewardConfig
from schemas.contracts.validation import expectations, exploded, FrameSuite, rows, suite
from schemas.llm.diagnosis import LAYERS, SEVERITIES

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx


RUNTIME_STATUSES = ("ok", "page_error", "load_timeout", "unresponsive", "crashed", "reload_loop", "blank", "skipped",
                    "unavailable")
# Why a response is in the missing or runtime-invalid tier (tasks.env.score_tables.tier_cause); null in the others.
CAUSES_OF = {"missing": ("environment_gap", "browser_unavailable", "judge"),
             "runtime_invalid": ("time", "app_error", "judge")}
TIER_CAUSES = tuple(dict.fromkeys(c for causes in CAUSES_OF.values() for c in causes))

FINDING_TYPE = pa.struct([
    pa.field("layer", pa.string()), pa.field("severity", pa.string()), pa.field("item_id", pa.string()),
    pa.field("scope", pa.string()), pa.field("description", pa.string()),
    pa.field("code_quotes", pa.list_(pa.string())), pa.field("related_symbols", pa.list_(pa.string())),
    pa.field("state_variables", pa.list_(pa.string())), pa.field("context_hints", pa.list_(pa.string())),
    pa.field("explanation", pa.string()),
    pa.field("key", pa.string()),  # layer.severity.index, the attribution key
    pa.field("direct_spans", pa.list_(pa.list_(pa.int64()))),  # response offsets [start, end)
    pa.field("context_spans", pa.list_(pa.struct([pa.field("start", pa.int64()), pa.field("end", pa.int64()),
                                                   pa.field("reason", pa.string())]))),
])

INTERACTION_TYPE = pa.struct([
    pa.field("status", pa.string()),  # ok | hung | navigated | error | skipped
    pa.field("actions_run", pa.int64()), pa.field("actions_planned", pa.int64()),
    pa.field("failures", pa.list_(pa.struct([  # what fails the runtime gate: error | hang | reload
        pa.field("kind", pa.string()), pa.field("action", pa.int64()), pa.field("action_kind", pa.string()),
        pa.field("target", pa.string()), pa.field("label", pa.string()), pa.field("name", pa.string()),
        pa.field("message", pa.string()), pa.field("offset", pa.int64())]))),
    pa.field("dead_controls", pa.list_(pa.string())),  # labels of controls whose click changed nothing
    pa.field("animation_frames", pa.int64()),  # requested while idle, between the two liveness samples
    pa.field("visual_change", pa.bool_()),  # screenshots liveness_gap_s apart differ
    pa.field("dialogs", pa.int64()), pa.field("navigations", pa.int64()),
    pa.field("rechecked_from", pa.string()),  # the verdict beside other apps, when a re-check alone replaced it
    pa.field("clock", pa.string()),  # controlled (the environment's clock) | page (the page's own: clock_reason)
    pa.field("clock_reason", pa.string()),
])

JUDGMENTS_SCHEMA = pa.schema([
    pa.field("rollout_id", pa.string(), nullable=False),
    pa.field("query_id", pa.string()),
    pa.field("provider", pa.string()),  # offline | anthropic | openai | given | none (not judged)
    pa.field("model", pa.string()),
    pa.field("judge_error", pa.string()),
    pa.field("judge_attempts", pa.int64()),
    pa.field("format_valid", pa.bool_()),
    pa.field("html_offset", pa.int64()),  # h: character offset of the application in the response
    pa.field("html_length", pa.int64()),
    pa.field("source_valid", pa.bool_()),
    pa.field("runtime_valid", pa.bool_()),
    pa.field("gate_static_check", pa.bool_()),
    pa.field("gate_code_simulation", pa.bool_()),
    pa.field("gate_rubric_alignment", pa.bool_()),
    pa.field("gate_tree_sitter", pa.bool_()),
    pa.field("gate_browser", pa.bool_()),
    pa.field("runtime_status", pa.string()),
    pa.field("n_syntax_errors", pa.int64()),
    pa.field("n_page_errors", pa.int64()),
    pa.field("n_blocked_requests", pa.int64()),
    pa.field("environment_gaps", pa.list_(pa.string())),  # library URLs the mirror lacked before the app failed
    pa.field("findings", pa.list_(FINDING_TYPE)),
    pa.field("interaction", INTERACTION_TYPE),  # null when the probe did not run
    pa.field("undecided_item_ids", pa.list_(pa.string())),  # offline judge: items no evidence spoke to
    pa.field("evidence_json", pa.string()),  # syntax/page/console errors, blocked requests (response offsets)
])

REWARDS_SCHEMA = pa.schema([
    pa.field("rollout_id", pa.string(), nullable=False),
    pa.field("query_id", pa.string()),
    pa.field("reward_kind", pa.string()),
    pa.field("reward", pa.float64()),  # null = missing (judge failed): the RL job drops the response
    pa.field("tier", pa.string()),
    pa.field("tier_cause", pa.string()),  # TIER_CAUSES: why missing or runtime-invalid (null otherwise)
    pa.field("rubric_score", pa.float64()),
    pa.field("format_valid", pa.bool_()),
    pa.field("source_valid", pa.bool_()),
    pa.field("runtime_valid", pa.bool_()),
    pa.field("provider", pa.string()),
    pa.field("reward_config_hash", pa.string()),
])


def judgments_suites() -> list[FrameSuite]:
    E = expectations()
    main = suite(
        "judgments",
        E.ExpectColumnValuesToNotBeNull(column="rollout_id"),
        E.ExpectColumnValuesToBeUnique(column="rollout_id"),
        E.ExpectColumnValuesToNotBeNull(column="format_valid"),
        E.ExpectColumnValuesToNotBeNull(column="provider"),
        E.ExpectColumnValuesToBeInSet(column="runtime_status", value_set=list(RUNTIME_STATUSES)),
        E.ExpectColumnValuesToBeBetween(column="html_offset", min_value=0),
    )
    findings = suite(
        "judgments-findings",
        E.ExpectColumnValuesToBeInSet(column="layer", value_set=list(LAYERS)),
        E.ExpectColumnValuesToBeInSet(column="severity", value_set=list(SEVERITIES)),
    )

    def finding_frame(table: pa.Table):
        df = exploded("rollout_id", "findings", "finding")(table).dropna(subset=["finding"])
        df["layer"] = df["finding"].map(lambda f: f["layer"])
        df["severity"] = df["finding"].map(lambda f: f["severity"])
        return df.drop(columns=["finding"])

    return [FrameSuite("rows", rows, main, ["rollout_id"]),
            FrameSuite("findings", finding_frame, findings, ["rollout_id"])]


def rewards_suites(reward_min: float = 0.0, reward_max: float = 1.0) -> list[FrameSuite]:
    E = expectations()
    main = suite(
        "rewards",
        E.ExpectColumnValuesToNotBeNull(column="rollout_id"),
        E.ExpectColumnValuesToBeUnique(column="rollout_id"),
        E.ExpectColumnValuesToBeInSet(column="reward_kind", value_set=["hierarchical", "binary"]),
        E.ExpectColumnValuesToBeInSet(column="tier", value_set=list(TIERS)),
        E.ExpectColumnValuesToBeInSet(column="tier_cause", value_set=list(TIER_CAUSES)),
        E.ExpectColumnValuesToBeBetween(column="reward", min_value=reward_min, max_value=reward_max),
        E.ExpectColumnValuesToBeBetween(column="rubric_score", min_value=0.0, max_value=1.0),
        E.ExpectColumnValuesToNotBeNull(column="reward_config_hash"),
    )
    # A null reward is how a response is dropped from training: only a failed judgment (tier missing) may have one,
    # and a failed judgment must not carry a number.
    consistent = suite("rewards-missing", E.ExpectColumnValuesToBeInSet(column="null_iff_missing", value_set=[True]))
    # A cause only where a tier needs one, and one a missing reward can have there.
    causes = suite("rewards-cause", E.ExpectColumnValuesToBeInSet(column="cause_fits_tier", value_set=[True]))
    return [FrameSuite("rows", rows, main, ["rollout_id"]),
            FrameSuite("missing", _null_iff_missing, consistent, ["rollout_id"]),
            FrameSuite("cause", _cause_fits_tier, causes, ["rollout_id"])]



def _cause_fits_tier(table: pa.Table):
    df = table.select(["rollout_id", "tier", "tier_cause"]).to_pandas()
    df["cause_fits_tier"] = [(c in CAUSES_OF[t]) if t in CAUSES_OF else not isinstance(c, str)
                             for t, c in zip(df["tier"], df["tier_cause"])]
    return df[["rollout_id", "cause_fits_tier"]]


def _null_iff_missing(table: pa.Table):
    df = table.select(["rollout_id", "reward", "tier"]).to_pandas()
    df["null_iff_missing"] = df["reward"].isna() == (df["tier"] == "missing")
    return df[["rollout_id", "null_iff_missing"]]


def reward_suites_for(reward: RewardConfig) -> list[FrameSuite]:
    """The rewards suites with the bounds every reward of this config lies in (the gates' values and
    the valid tier's ``rubric_max``; binary rewards are 0 or 1)."""
    return rewards_suites(min(reward.format_invalid, reward.source_invalid, reward.runtime_invalid, 0.0),
                          max(reward.rubric_max, 1.0))


CHECK_RESULTS_SCHEMA = pa.schema([
    pa.field("rollout_id", pa.string(), nullable=False),
    pa.field("query_id", pa.string()),
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("scope", pa.string()),
    pa.field("status", pa.string()),  # passed | failed | inconclusive
    pa.field("step", pa.int64()),  # the failing (or stopping) step; null when passed
    pa.field("step_kind", pa.string()),
    pa.field("reason", pa.string()),
    pa.field("observed", pa.string()),
    pa.field("expected", pa.string()),
    pa.field("n_errors", pa.int64()),  # uncaught page errors during the check
    pa.field("error_offset", pa.int64()),  # the first one's response offset, when it has one
    pa.field("errors_json", pa.string()),
    pa.field("duration_s", pa.float64()),
    pa.field("clock", pa.string()),  # controlled (the environment's clock) | page (the page's own) | null: not run
    pa.field("clock_reason", pa.string()),  # why the page left the controlled clock (Web Audio, a worker, ...)
    pa.field("check_version", pa.string()),
])


def _consistent(table: pa.Table) -> pd.DataFrame:
    """A failed check names its step and why; a passed one names no failing step."""
    df = table.select(["rollout_id", "item_id", "status", "step", "reason"]).to_pandas()
    failed, passed = df["status"] == "failed", df["status"] == "passed"
    ok = (~failed | (df["step"].notna() & (df["reason"].fillna("") != ""))) & (~passed | df["step"].isna())
    return pd.DataFrame({"rollout_id": df["rollout_id"], "item_id": df["item_id"], "consistent": ok})


def check_results_suites() -> list[FrameSuite]:
    E = expectations()
    main = suite(
        "check_results",
        E.ExpectColumnValuesToNotBeNull(column="rollout_id"),
        E.ExpectColumnValuesToNotBeNull(column="item_id"),
        E.ExpectCompoundColumnsToBeUnique(column_list=["rollout_id", "item_id"]),
        E.ExpectColumnValuesToBeInSet(column="status", value_set=list(STATUSES)),
        E.ExpectColumnValuesToBeInSet(column="scope", value_set=["initial_state", "dynamic"]),
        E.ExpectColumnValuesToBeBetween(column="step", min_value=0),
        E.ExpectColumnValuesToBeBetween(column="error_offset", min_value=0),
        E.ExpectColumnValuesToNotBeNull(column="check_version"),
        E.ExpectColumnValuesToBeInSet(column="clock", value_set=["controlled", "page"]),
    )
    consistent = suite("check_results-consistent",
                       E.ExpectColumnValuesToBeInSet(column="consistent", value_set=[True]))
    return [FrameSuite("rows", rows, main, ["rollout_id", "item_id"]),
            FrameSuite("consistent", _consistent, consistent, ["rollout_id", "item_id"])]
