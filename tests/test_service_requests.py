"""The reward service's pure parts: request validation (each refusal names the field and the limit), the
bind and token rules, and the adapters' conversions to OpenRLHF's and verl's forms."""
from __future__ import annotations

import json
import math

import pytest

from rubricrl.adapters.openrlhf import openrlhf_answer, openrlhf_items, renamed, response_of
from rubricrl.adapters.verl import group_mean_fill, verl_score
from rubricrl.service.metrics import missing_cause
from rubricrl.service.requests import RequestError, decode_json, parse_request
from rubricrl.service.server import check_bind, is_loopback
from schemas.config.service import ServiceConfig
from tests.fixtures.service import FIX, fixture_tasks

CFG = ServiceConfig(max_items=8, max_response_chars=1000)
TASK = json.loads((FIX / "task_counter.json").read_text())


class Published:
    """The published tasks of a data dir, as the engine's index answers them."""

    def __init__(self) -> None:
        self.tasks = {t.query_id: t for t in fixture_tasks()}

    def get_many(self, query_ids):
        return {q: self.tasks[q] for q in query_ids if q in self.tasks}

    def describe(self):
        return f"{len(self.tasks)} published queries"


def refused(data, has_tokenizer: bool = False) -> RequestError:
    with pytest.raises(RequestError) as e:
        parse_request(data, CFG, Published(), has_tokenizer)
    return e.value


def test_good_items_resolve_their_tasks_in_request_order():
    jobs = parse_request({"items": [{"query_id": "q-key", "response": "a"}, {"task": TASK, "response": "b"}]}, CFG,
                         Published(), False)
    assert [(j.index, j.task.query_id, j.response) for j in jobs] == [(0, "q-key", "a"), (1, "q-counter", "b")]


@pytest.mark.parametrize("data, status, field, limit", [
    ({"items": [{"query_id": "q-key", "response": "x" * 1001}]}, 413, "items[0].response", "1000 characters"),
    ({"items": [{"query_id": "q-key", "response": "x"}] * 9}, 413, "items", "8 items"),
    ({"items": [{"query_id": "q-key"}]}, 422, "items[0].response", None),
    ({"items": [{"response": "x"}]}, 422, "items[0]", None),
    ({"items": [{"query_id": "q-key", "task": TASK, "response": "x"}]}, 422, "items[0]", None),
    ({"items": [{"query_id": "q-nope", "response": "x"}]}, 422, "items[0].query_id", None),
    ({"items": [{"task": {"query_id": "q"}, "response": "x"}]}, 422, "items[0].task", None),
    ({"items": [{"query_id": "q-key", "response": "x", "diagnosis": {"static_check": 3}}]}, 422,
     "items[0].diagnosis", None),
    ({"items": [{"query_id": "q-key", "response": "x", "advantage": 1.0}]}, 422, "items[0].advantage", None),
    ({"items": [{"query_id": "q-key", "response": "x", "advantage": "nan"}]}, 422, "items[0].advantage", None),
    ({"items": [{"query_id": "q-key", "response": "\ud800"}]}, 422, "items[0].response", None),
    ({"items": [{"query_id": "q-key", "response": "x", "extra": 1}]}, 422, "items[0].extra", None),
    ({"items": []}, 422, "items", None),
    ({"responses": []}, 422, "items", None),
    ([1, 2], 422, "items", None),
])
def test_each_bad_request_names_its_field_and_limit(data, status, field, limit):
    e = refused(data)
    assert (e.status, e.field) == (status, field), e
    assert e.body()["error"]["field"] == field and field in e.body()["error"]["message"]
    if limit is not None:
        assert limit in e.limit and "service." in e.limit


def test_unknown_query_id_says_what_is_published_and_how_to_fix():
    msg = str(refused({"items": [{"query_id": "q-nope", "response": "x"}]}))
    assert "'q-nope'" in msg and "4 published queries" in msg and "build-rubrics" in msg


def test_an_advantage_with_the_tokenizer_is_kept():
    jobs = parse_request({"items": [{"query_id": "q-key", "response": "x", "advantage": -0.5}]}, CFG, Published(), True)
    assert jobs[0].advantage == -0.5


@pytest.mark.parametrize("raw, words", [(b"\xff\xfe{}", "not UTF-8"), (b'{"items": [', "not valid JSON")])
def test_bytes_that_are_not_utf8_json_are_a_400_on_the_body(raw, words):
    with pytest.raises(RequestError) as e:
        decode_json(raw)
    assert e.value.status == 400 and e.value.field == "body" and words in str(e.value)


@pytest.mark.parametrize("host, loop", [("127.0.0.1", True), ("127.3.4.5", True), ("::1", True), ("[::1]", True),
                                        ("localhost", True), ("0.0.0.0", False), ("10.0.0.2", False),
                                        ("::", False), ("example.org", False)])
def test_loopback_addresses(host, loop):
    assert is_loopback(host) is loop


def test_a_non_loopback_bind_needs_a_token_of_some_length():
    check_bind("127.0.0.1", None, "TOK")
    check_bind("0.0.0.0", "x" * 16, "TOK")
    with pytest.raises(ValueError, match=r"not a loopback address and \$TOK"):
        check_bind("0.0.0.0", None, "TOK")
    with pytest.raises(ValueError, match="at least 16"):
        check_bind("127.0.0.1", "short", "TOK")


def test_openrlhf_request_becomes_items_with_the_response_after_the_prompt():
    items = openrlhf_items({"query": ["<|im_start|>user\nhi<|im_end|>\nANSWER<|im_end|>"],
                            "prompts": ["<|im_start|>user\nhi<|im_end|>\n"], "labels": ["q-key"]})
    assert items == [{"query_id": "q-key", "response": "ANSWER<|im_end|>"}]
    # a decode that changed the prompt's start still finds the response after the prompt's end
    assert response_of("  user: hello there\nANSWER", "user:  hello there\n") is None
    assert response_of("X" + "p" * 300 + "ANSWER", "p" * 300) == "ANSWER"


@pytest.mark.parametrize("data, field", [
    ({"query": ["a"], "prompts": ["a"]}, "labels"),
    ({"query": ["a", "b"], "prompts": ["a"], "labels": ["q"]}, "labels"),
    ({"query": ["a"], "prompts": ["a"], "labels": [None]}, "labels[0]"),
    ({"query": ["zzz"], "prompts": ["a prompt"], "labels": ["q"]}, "query[0]"),
])
def test_bad_openrlhf_requests_name_the_openrlhf_field(data, field):
    with pytest.raises(RequestError) as e:
        openrlhf_items(data)
    assert e.value.field == field


def test_item_errors_are_renamed_to_openrlhf_fields():
    assert renamed(RequestError(422, "items[3].query_id", "m")).field == "labels[3]"
    assert renamed(RequestError(413, "items[2].response", "m", "1 characters")).field == "query[2]"
    assert renamed(RequestError(413, "items", "m", "8 items")).field == "query"


ANSWERS = [{"reward": 0.82, "tier": "valid", "rubric_score": 0.74, "format_valid": True, "source_valid": True,
            "runtime_valid": True, "reason": None},
           {"reward": None, "tier": "missing", "rubric_score": None, "format_valid": True, "source_valid": None,
            "runtime_valid": None, "reason": "the judge reply is not valid JSON"}]


def test_openrlhf_answer_has_a_reward_per_sample_and_nan_for_a_missing_one():
    out = openrlhf_answer(ANSWERS)
    assert out["rewards"][0] == 0.82 and math.isnan(out["rewards"][1]) and out["scores"][0] == 0.82
    logs = out["extra_logs"]
    assert logs["rubricrl/reward_missing"] == [0.0, 1.0] and logs["rubricrl/tier"][0] == 3.0
    assert math.isnan(logs["rubricrl/tier"][1]) and all(len(v) == 2 for v in logs.values())


def test_verl_score_is_numeric_with_nan_for_undecided():
    ok, missing = verl_score(ANSWERS[0]), verl_score(ANSWERS[1])
    assert ok == {"score": 0.82, "reward_missing": 0.0, "tier": 3.0, "rubric_score": 0.74, "format_valid": 1.0,
                  "source_valid": 1.0, "runtime_valid": 1.0}
    assert math.isnan(missing["score"]) and missing["reward_missing"] == 1.0 and missing["format_valid"] == 1.0
    assert math.isnan(missing["source_valid"])


def test_missing_causes():
    assert missing_cause(ANSWERS[0]) is None and missing_cause(ANSWERS[1]) == "judge"
    assert missing_cause({"reward": None, "reason": "scoring failed: ValueError: x"}) == "failed"
    assert missing_cause({"reward": None, "reason": "not scored within ... (service.request_timeout_s)"}) == "timeout"


def test_group_mean_fill_keeps_each_group_mean():
    nan = math.nan
    assert group_mean_fill([1.0, nan, 0.2, nan, nan], ["a", "a", "a", "b", "b"]) == pytest.approx([1.0, 0.6, 0.2, 0, 0])
    assert group_mean_fill([0.5, nan], [("q", 0), ("q", 1)]) == [0.5, 0.0]  # another row: another group


def test_an_observed_item_is_answered_the_repair_turn_and_passed():
    from rubricrl.environments.observation import render_observation, requirements_of
    from rubricrl.service.engine import answer, unscored

    jobs = parse_request({"items": [{"query_id": "q-counter", "response": "app", "observe": True},
                                    {"query_id": "q-counter", "response": "app"}]}, CFG, Published(), False)
    out = {"reward": 0.2, "tier": "runtime_invalid", "runtime_valid": False, "gates": {"runtime": False},
           "findings": [{"severity": "major", "item_id": "I1", "description": "the count never changes"}]}
    seen, plain = answer(jobs[0], out), answer(jobs[1], out)
    want = render_observation({**out, "index": 0, "query_id": "q-counter", "reason": None}, "app",
                              requirements_of(jobs[0].task.rubric))
    assert seen["observation"] == want and seen["passed"] is False and "the count never changes" in want
    assert "observation" not in plain and "passed" not in plain  # only asked for
    lost = unscored(jobs[0], "scoring failed: boom")
    assert lost["passed"] is False and "could not be scored: scoring failed: boom" in lost["observation"]
