"""Every stage's great-expectations gate, proven to reject: for each stage a good row publishes (the twin that must
stay clean) and a bad row of the kind the suite exists for stops the stage, named in the failure, unpublished.

The suites are the ones the flows pass to ``run_stage`` (same factories, same arguments)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

import pyarrow as pa
import pytest

from schemas.contracts.attribution import ATTRIBUTIONS_SCHEMA, attributions_suites
from schemas.contracts.env import JUDGMENTS_SCHEMA, REWARDS_SCHEMA, judgments_suites, rewards_suites
from schemas.contracts.evaluation import EVAL_RESULTS_SCHEMA, eval_results_suites
from schemas.contracts.llm_calls import LLM_CALLS_SCHEMA, llm_calls_suites
from schemas.contracts.queries import QUERY_CANDIDATES_SCHEMA, query_candidates_suites
from schemas.contracts.rubrics import (EXPANSIONS_SCHEMA, ITEMS_SCHEMA, MODULES_SCHEMA, REFERENCES_SCHEMA,
                                       REQUIREMENTS_SCHEMA, RUBRIC_CANDIDATES_SCHEMA, expansions_suites, items_suites,
                                       modules_suites, references_suites, requirements_suites, rubric_candidates_suites)
from schemas.contracts.selection import (PROBE_ROLLOUTS_SCHEMA, RL_QUERIES_SCHEMA, probe_rollouts_suites,
                                         rl_queries_suites)
from schemas.contracts.sft import SFT_ANSWERS_SCHEMA, sft_answers_suites
from schemas.contracts.training import (SFT_STEPS_SCHEMA, TRAIN_ROLLOUTS_SCHEMA, TRAIN_STEPS_SCHEMA, rollouts_suites,
                                        sft_steps_suites, train_steps_suites, with_judge_provider)
from tasks.stages.stage import StageSpec, run_stage
from tasks.stages.store import StageStore
from tasks.stages.validate import StageValidationError

ID_COLUMNS = ("query_id", "rollout_id", "answer_id", "response_id", "eval_id", "key", "step")
OK = {"status": "ok", "provider": "offline", "input_hash": "h", "model": "m", "prompt_version": "1", "attempts": 1}


def _default(t: pa.DataType) -> Any:
    if pa.types.is_string(t):
        return "x"
    if pa.types.is_integer(t):
        return 1
    if pa.types.is_floating(t):
        return 0.5
    if pa.types.is_boolean(t):
        return True
    if pa.types.is_list(t):
        return []
    if pa.types.is_timestamp(t):
        return datetime(2026, 1, 1, tzinfo=timezone.utc)
    return None


@dataclass
class Gate:
    stage: str
    schema: pa.Schema
    suites: Callable[[], list]
    good: dict[str, Any]  # a row that passes
    bad: dict[str, Any]  # changes that make the row what the suite exists to stop
    names: str  # the failed expectation (and column) the report must name
    row_id: dict[str, Any] = field(default_factory=dict)  # id columns of the bad row, which the report must name

    def bad_ids(self) -> dict[str, Any]:
        return {k: v for k, v in self.bad.items() if k in ID_COLUMNS}

    def row(self, **over: Any) -> dict[str, Any]:
        r = {f.name: _default(f.type) for f in self.schema}
        r.update({k: v for k, v in OK.items() if k in r})
        r.update(self.good)
        r.update(over)
        return r


_REQS = pa.Table.from_pylist([{"query_id": "q1", "requirement_id": "R1", "status": "ok"},
                              {"query_id": "qbad", "requirement_id": "R1", "status": "ok"}])
_REF = json.dumps({"initial_state": [{"covered_requirement_ids": ["R1"]}], "dynamic": []})
_REFS = pa.Table.from_pylist([{"query_id": q, "status": "ok", "requirement_ids": ["R1", "R2"], "must_cover_ids": ["R1"],
                               "uncovered_requirement_ids": []} for q in ("q1", "qbad")])
_FINDING = {"layer": "rubric_alignment", "severity": "major", "item_id": "D1", "key": "rubric_alignment.major.0"}
_ATTR_FINDING = {"key": "k", "layer": "rubric_alignment", "severity": "major", "item_id": "D1", "anchors": [],
                 "direct_spans": [{"start": 2, "end": 8}], "context_spans": [], "relations": []}

ROLLOUTS, TRAIN_STEPS, ATTRIBUTIONS = (with_judge_provider(s) for s in (TRAIN_ROLLOUTS_SCHEMA, TRAIN_STEPS_SCHEMA,
                                                                       ATTRIBUTIONS_SCHEMA))
_RL_QUERY = {"query_id": "q1", "distinct_levels": 2, "discrimination": 0.5, "coverage_factor": 1.0, "final_score": 0.4,
             "policy_kind": "checkpoint"}
_ROLLOUT = {"step": 1, "query_id": "q1", "group_id": 0, "sample": 0, "mode": "full", "reward": 0.5,
            "response_ids": [5, 6, 7], "logprobs": [-1.0, -1.0, -1.0], "token_weights": [1.0, 3.0, 1.0]}
_ATTRIBUTION = {"response_id": "r1", "status": "localised", "html_offset": 0, "source_len": 100, "n_findings": 1,
                "n_localised": 1, "weight_mode": "sign"}
_REWARD = {"rollout_id": "r1", "reward_kind": "hierarchical", "tier": "valid", "tier_cause": None, "reward": 0.7,
           "rubric_score": 0.6}
_EVAL = {"eval_id": "m:0:q1", "model_kind": "checkpoint", "run": 0, "tier": "valid", "rubric_score": 0.5,
         "screenshot_load": "stages/eval_results/screenshots/0a1b2c-load.png", "screenshot_probe": None,
         "screenshot_note": "probe: no probe ran (runtime status page_error)"}

GATES = [
    Gate("query_candidates", QUERY_CANDIDATES_SCHEMA, lambda: query_candidates_suites(["interaction"], ["cap"]),
         {"query_id": "q1", "domain": "Games", "difficulty": "easy", "category_ids": ["interaction"],
          "capability_ids": ["cap"]}, {"query_id": "qbad", "category_ids": ["made_up"]},
         "expect_column_values_to_be_in_set on 'category_id'"),
    Gate("expansions", EXPANSIONS_SCHEMA, expansions_suites, {"query_id": "q1"},
         {"query_id": "qbad", "expanded_query": None}, "expect_column_values_to_not_be_null on 'expanded_query'"),
    Gate("requirements", REQUIREMENTS_SCHEMA, requirements_suites,
         {"query_id": "q1", "requirement_id": "R1", "requirement_type": "state"},
         {"query_id": "qbad", "requirement_type": "made_up"}, "expect_column_values_to_be_in_set on 'requirement_type'"),
    Gate("modules", MODULES_SCHEMA, lambda: modules_suites(_REQS),
         {"query_id": "q1", "module_id": "M1", "kind": "state_system", "covered_requirement_ids": ["R1"]},
         {"query_id": "qbad", "covered_requirement_ids": ["R9"]}, "expect_column_values_to_be_in_set on 'covered_ids_exist'"),
    Gate("rubric_candidates", RUBRIC_CANDIDATES_SCHEMA, lambda: rubric_candidates_suites(_REQS),
         {"query_id": "q1", "candidate_id": "C1", "scope": "dynamic", "rubric_level": "core_module", "target": "state",
          "covered_requirement_ids": ["R1"]},
         {"query_id": "qbad", "rubric_level": "made_up"}, "expect_column_values_to_be_in_set on 'rubric_level'"),
    Gate("rubric_references", REFERENCES_SCHEMA, references_suites,
         {"query_id": "q1", "reference_json": _REF, "requirement_ids": ["R1", "R2"], "must_cover_ids": ["R1"]},
         {"query_id": "qbad", "must_cover_ids": ["R1", "R2"]},  # R2 must be covered, and is neither covered nor listed
         "expect_column_values_to_be_in_set on 'must_cover_accounted'"),
    Gate("rubric_items", ITEMS_SCHEMA, lambda: items_suites(_REFS),
         {"query_id": "q1", "id": "I1", "scope": "initial_state", "rubric_level": "core_module",
          "covered_requirement_ids": ["R1"], "check": None, "evidence_kind": None},  # no check, no structure: allowed
         {"query_id": "qbad", "id": "D1"},  # a dynamic id on an initial_state item
         "expect_column_values_to_be_in_set on 'id_matches_scope'"),
    # what decides an item is a kind of the vocabulary (schemas/rubric.py EVIDENCE_KINDS) or null (#41)
    Gate("rubric_items", ITEMS_SCHEMA, lambda: items_suites(_REFS),
         {"query_id": "q1", "id": "I1", "scope": "initial_state", "rubric_level": "core_module",
          "covered_requirement_ids": ["R1"], "check": None, "evidence_kind": "control_default"},
         {"query_id": "qbad", "evidence_kind": "moves by itself"},
         "expect_column_values_to_be_in_set on 'evidence_kind'"),
    *(Gate(name, JUDGMENTS_SCHEMA, judgments_suites,
           {"rollout_id": "r1", "runtime_status": "ok", "html_offset": 0, "findings": [_FINDING]},
           {"rollout_id": "rbad", "findings": [{**_FINDING, "severity": "fatal"}]},
           "expect_column_values_to_be_in_set on 'severity'") for name in ("judgments", "probe_judgments")),
    *(Gate(name, REWARDS_SCHEMA, lambda: rewards_suites(0.0, 1.0), _REWARD,
           {"rollout_id": "rbad", "tier": "valid", "reward": None},  # a judged app whose reward was lost
           "expect_column_values_to_be_in_set on 'null_iff_missing'") for name in ("rewards", "probe_rewards")),
    Gate("rewards", REWARDS_SCHEMA, lambda: rewards_suites(0.0, 1.0), _REWARD,
         {"rollout_id": "rbad", "reward": 1.7}, "expect_column_values_to_be_between on 'reward'"),
    # a cause only where the tier needs one: a valid app has none, a missing reward says why it is missing
    Gate("rewards", REWARDS_SCHEMA, lambda: rewards_suites(0.0, 1.0), _REWARD,
         {"rollout_id": "rbad", "tier_cause": "time"}, "expect_column_values_to_be_in_set on 'cause_fits_tier'"),
    Gate("rewards", REWARDS_SCHEMA, lambda: rewards_suites(0.0, 1.0), _REWARD,
         {"rollout_id": "rbad", "tier": "missing", "reward": None, "tier_cause": "app_error"},
         "expect_column_values_to_be_in_set on 'cause_fits_tier'"),
    Gate("sft_answers", SFT_ANSWERS_SCHEMA, sft_answers_suites,
         {"answer_id": "a1", "rejected": False, "reject_reason": None},
         {"answer_id": "abad", "rejected": True, "reject_reason": None},
         "expect_column_values_to_be_in_set on 'reason_matches_rejected'"),
    Gate("sft_steps", SFT_STEPS_SCHEMA, sft_steps_suites, {"step": 1, "metric": "loss", "value": 2.0},
         {"step": 2, "value": float("nan")}, "expect_column_values_to_not_be_null on 'value'"),
    Gate("probe_rollouts", PROBE_ROLLOUTS_SCHEMA, probe_rollouts_suites,
         {"rollout_id": "q1:p0", "query_id": "q1", "n_tokens": 10, "policy_kind": "checkpoint"},
         {"rollout_id": "qbad:p0", "response": None}, "expect_column_values_to_not_be_null on 'response'"),
    Gate("rl_queries", RL_QUERIES_SCHEMA, rl_queries_suites, _RL_QUERY,
         {"query_id": "qbad", "distinct_levels": 1},  # equal probe rewards: zero advantage for every response
         "expect_column_values_to_be_between on 'distinct_levels'"),
    Gate("rollouts", ROLLOUTS, rollouts_suites, _ROLLOUT,
         {"step": 2, "query_id": "qbad", "token_weights": [1.0, 3.0]},  # one weight short: shifted onto wrong tokens
         "expect_column_values_to_be_in_set on 'weights_aligned'"),
    Gate("train_steps", TRAIN_STEPS, train_steps_suites, {"step": 1, "metric": "loss", "value": 0.3},
         {"step": 3, "metric": "loss", "value": float("nan")}, "expect_column_values_to_not_be_null on 'value'"),
    Gate("train_steps", TRAIN_STEPS, train_steps_suites, {"step": 1, "metric": "rollout/staleness", "value": 0.0},
         {"step": 3, "value": 2.0}, "expect_column_values_to_be_in_set on 'rollout/staleness'"),  # two steps stale
    Gate("attributions", ATTRIBUTIONS, attributions_suites, {**_ATTRIBUTION, "findings": [_ATTR_FINDING]},
         {"response_id": "rbad", "findings": [{**_ATTR_FINDING, "direct_spans": [{"start": 90, "end": 130}]}]},
         "expect_column_pair_values_a_to_be_greater_than_b"),  # a span past the end of the source
    # Lineage: rows derived from judgments without the judge's provider
    Gate("rl_queries", RL_QUERIES_SCHEMA, rl_queries_suites, _RL_QUERY, {"query_id": "qbad", "judge_provider": None},
         "expect_column_values_to_not_be_null on 'judge_provider'"),
    Gate("rollouts", ROLLOUTS, rollouts_suites, _ROLLOUT, {"step": 2, "query_id": "qbad", "judge_provider": None},
         "expect_column_values_to_not_be_null on 'judge_provider'"),
    Gate("train_steps", TRAIN_STEPS, train_steps_suites, {"step": 1, "metric": "loss", "value": 0.3},
         {"step": 3, "metric": "loss", "judge_provider": None}, "expect_column_values_to_not_be_null on 'judge_provider'"),
    Gate("attributions", ATTRIBUTIONS, attributions_suites, _ATTRIBUTION, {"response_id": "rbad", "judge_provider": None},
         "expect_column_values_to_not_be_null on 'judge_provider'"),
    Gate("eval_results", EVAL_RESULTS_SCHEMA, eval_results_suites, _EVAL,
         {"eval_id": "m:0:qbad", "tier": "passed-ish"}, "expect_column_values_to_be_in_set on 'tier'"),
    # screenshots: a path is one kept beside the stage, relative to the data directory; a null one says why
    Gate("eval_results", EVAL_RESULTS_SCHEMA, eval_results_suites, _EVAL,
         {"eval_id": "m:0:qbad", "screenshot_load": "/tmp/elsewhere.png"},
         "expect_column_values_to_match_regex on 'screenshot_load'"),
    Gate("eval_results", EVAL_RESULTS_SCHEMA, eval_results_suites, _EVAL,
         {"eval_id": "m:0:qbad", "screenshot_load": None, "screenshot_note": None},
         "expect_column_values_to_be_in_set on 'explained'"),
    # the benchmark's own metric: a share in [0, 1], a null one says why, each detail row a known status
    Gate("eval_results", EVAL_RESULTS_SCHEMA, eval_results_suites, _EVAL,
         {"eval_id": "m:0:qbad", "official_score": 1.5}, "expect_column_values_to_be_between on 'official_score'"),
    Gate("eval_results", EVAL_RESULTS_SCHEMA, eval_results_suites, _EVAL,
         {"eval_id": "m:0:qbad", "official_score": None, "official_note": None},
         "expect_column_values_to_be_in_set on 'explained'"),
    Gate("eval_results", EVAL_RESULTS_SCHEMA, eval_results_suites, _EVAL,
         {"eval_id": "m:0:qbad", "official_detail": [{"name": "t", "passed": True, "status": "great", "score": None,
                                                       "note": None}]},
         "expect_column_values_to_be_in_set on 'status'"),
    Gate("llm_calls", LLM_CALLS_SCHEMA, llm_calls_suites,
         {"run_id": "run1", "stage": "judge", "key": "k1", "cost_usd": 0.01},
         {"key": "kbad", "cost_usd": -0.5}, "expect_column_values_to_be_between on 'cost_usd'"),
]


def _run(store: StageStore, gate: Gate, rows: list[dict[str, Any]]):
    table = pa.Table.from_pylist(rows, schema=gate.schema)
    return run_stage(store, StageSpec(gate.stage, gate.schema, gate.suites), part_keys=["all"],
                     make_part=lambda _k: table, provider="offline", config={}, config_hash="c", inputs={})


@pytest.mark.parametrize("gate", GATES, ids=lambda g: f"{g.stage}-{g.names.split(' on ')[-1]}")
def test_bad_row_stops_the_stage_and_is_named(tmp_path, gate):
    store = StageStore(tmp_path)
    with pytest.raises(StageValidationError) as e:
        _run(store, gate, [gate.row(), gate.row(**gate.bad)])
    msg = str(e.value)
    assert gate.names in msg, msg
    bad_ids = list(gate.bad_ids().values())
    assert bad_ids and all(repr(v) in msg or str(v) in msg for v in bad_ids), msg
    failed = e.value.report.failed
    assert len(failed) == 1 and failed[0].unexpected_count == 1, msg  # only the bad row, only for its defect
    assert store.manifest(gate.stage) is None  # not published


@pytest.mark.parametrize("gate", list({g.stage: g for g in GATES}.values()), ids=lambda g: g.stage)
def test_good_rows_publish(tmp_path, gate):
    """The twin: the bad row's ids with the defect taken out are published by the same suites."""
    store = StageStore(tmp_path)
    out = _run(store, gate, [gate.row(), gate.row(**gate.bad_ids())])
    assert out.manifest.row_count == 2 and out.manifest.validation["success"]
