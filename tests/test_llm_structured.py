"""Structured outputs: each structured call sends its output model's JSON schema, strict, tightened
by the validation context; the fakes reject what the real APIs reject; the ledger counts replies
valid on the first try. Twins: replies pydantic accepts (the paper's q5 rubric answers, a judge
diagnosis) are accepted by the schema sent, so the grammar never forbids a good answer."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from schemas.llm.diagnosis import Diagnosis
from schemas.llm.json_schema import bounded, request_schema, strict
from schemas.llm.rubric_construction import CandidateSet, Expansion, FinalReference, ModuleMap, RequirementMap
from tasks.llm.base import LLMRequest
from tasks.llm.replies import TextOutput
from tasks.llm.ledger import format_summary, summarize
from fakes.http_fake import Scripted
from fakes.llm_fixtures import PROMPT_DIR, request
from fakes.llm_wire import make_wire
from fakes.structured_check import anthropic_schema, openai_schema
from tests.fixtures.rubrics.support import Q5, STAGE_FILES

VALID_IDS = {"I1", "D1"}
GOOD = {"static_check": {"name": "static_check", "critical": [], "major": [], "minor": []},
        "code_simulation": {"name": "code_simulation", "critical": [], "major": [
            {"description": "count never resets", "code_quotes": ["count += 1"]}], "minor": []},
        "rubric_alignment": {"name": "rubric_alignment", "critical": [], "minor": [], "major": [
            {"item_id": "D1", "scope": "dynamic", "description": "Increment adds 2"}]}}


def _judge_request(i: int) -> LLMRequest:
    return LLMRequest(stage="judgments", key=f"j{i}", prompt="echo", variables={"item": f"app-{i}", "n": i},
                      output_model=Diagnosis, validation_context={"valid_ids": VALID_IDS}, prompt_dir=PROMPT_DIR,
                      max_tokens=512)


def _complete(d: dict) -> dict:
    """A reply as a strict schema makes the model write it: every field the schema has present (``undecided`` is
    the offline rule's, not in the judge's schema)."""
    return Diagnosis.model_validate(d, context={"valid_ids": VALID_IDS}).model_dump(mode="json", exclude={"undecided"})


@pytest.fixture(params=["anthropic", "openai"])
def wire(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    w = make_wire(request.param, tmp_path, monkeypatch, reply=lambda body: json.dumps(_complete(GOOD)))
    yield w
    w.api.stop()


def _sent(wire) -> list[dict | None]:
    path = "/v1/messages" if wire.kind == "anthropic" else "/v1/chat/completions"
    pick = anthropic_schema if wire.kind == "anthropic" else openai_schema
    return [pick(s.body) for s in wire.api.seen(path, "POST") if s.path == path]


def test_judge_call_sends_its_schema_and_is_valid_first_try(wire) -> None:
    p = wire.provider()
    r = p.complete(_judge_request(1))
    assert r.ok and r.first_try_valid and r.attempts == 1
    (schema,) = _sent(wire)
    assert schema is not None  # the fake already refused a malformed one with a 400
    defs = schema["$defs"]
    assert defs["Layer_code_simulation"]["properties"]["name"]["const"] == "code_simulation"
    assert sorted(defs["RubricFinding"]["properties"]["item_id"]["enum"]) == sorted(VALID_IDS)
    if wire.kind == "openai":
        fmt = wire.api.seen("/v1/chat/completions", "POST")[0].body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        jsonschema.validate(_complete(GOOD), schema)
    rows = p.store.ledger_rows()
    assert rows[0]["first_try_valid"] is True
    assert summarize(rows)["judgments"]["first_try_valid"] == 1 and "valid_1st" in format_summary(summarize(rows))


def test_corrective_retry_is_not_first_try_valid(wire) -> None:
    wire.api.push(Scripted(text='{"static_check": {"name": "code_simulation"}}'))
    p = wire.provider()
    r = p.complete(_judge_request(2))
    assert r.ok and r.attempts == 2 and not r.first_try_valid
    assert p.store.ledger_rows()[0]["first_try_valid"] is False
    assert len(_sent(wire)) == 2 and all(s is not None for s in _sent(wire))  # the retry is constrained too


def test_free_text_and_switched_off_send_no_schema(wire) -> None:
    class Free(TextOutput):
        pass

    text = LLMRequest(stage="sft", key="t", prompt="echo", variables={"item": "x", "n": 1}, output_model=Free,
                      prompt_dir=PROMPT_DIR, max_tokens=64)
    wire.provider().complete(text)
    off = wire.provider(structured_outputs=False)
    off.complete(request(5))
    assert _sent(wire) and all(s is None for s in _sent(wire))
    if wire.kind == "openai":
        wire.provider(structured_outputs=False, json_mode=True).complete(request(6))
        assert wire.api.seen("/v1/chat/completions", "POST")[-1].body["response_format"] == {"type": "json_object"}


def test_cache_keeps_structured_and_free_replies_apart(wire) -> None:
    off = wire.provider(structured_outputs=False)
    on = wire.provider()
    assert off.complete(_judge_request(7)).ok and on.complete(_judge_request(7)).ok
    assert wire.model_calls() == 2  # the reply made without the grammar is not served to the call with it
    assert on.complete(_judge_request(7)).cached and wire.model_calls() == 2


def test_batch_lines_carry_the_schema(wire) -> None:
    p = wire.provider()
    results = p.complete_bulk([_judge_request(i) for i in range(3)], poll_interval_s=0.01)
    assert all(r.ok and r.batch and r.first_try_valid for r in results)
    if wire.kind == "anthropic":
        body = wire.api.seen("/v1/messages/batches", "POST")[0].body
        assert all(anthropic_schema(r["params"]) for r in body["requests"])
    else:
        upload = [s for s in wire.api.seen("/v1/files", "POST")][0].body
        assert upload.count(b'"strict": true') == 3


# -- the schema itself (pure) --------------------------------------------------------------------
def _q5(stage: str) -> dict:
    return json.loads((Q5 / STAGE_FILES[stage]).read_text())


def test_q5_rubric_answers_fit_the_schemas_sent() -> None:
    reqs = RequirementMap.model_validate(_q5("requirements"))
    mods = ModuleMap.model_validate(_q5("modules"))
    cands = CandidateSet.model_validate(_q5("rubric_candidates"))
    req_ids = {r.id for r in reqs.requirements}
    ctx = {"requirement_ids": req_ids, "module_names": {m.name for m in mods.modules} | {m.id for m in mods.modules},
           "candidate_ids": {c.id for c in cands.candidates}}
    for model, stage in ((Expansion, "expansions"), (RequirementMap, "requirements"), (ModuleMap, "modules"),
                         (CandidateSet, "rubric_candidates"), (FinalReference, "rubric_references")):
        answer = model.model_validate(_q5(stage), context=ctx).model_dump(mode="json")
        jsonschema.validate(answer, request_schema(model, ctx))
    schema = request_schema(ModuleMap, ctx)
    assert sorted(schema["$defs"]["Module"]["properties"]["covered_requirement_ids"]["items"]["enum"]) == sorted(req_ids)
    bad = mods.model_dump(mode="json")
    bad["modules"][0]["covered_requirement_ids"] = ["R999"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_judge_schema_says_what_the_validator_says() -> None:
    schema = request_schema(Diagnosis, {"valid_ids": VALID_IDS})
    jsonschema.validate(_complete(GOOD), schema)
    wrong_name = json.loads(json.dumps(_complete(GOOD)))
    wrong_name["code_simulation"]["name"] = "static_check"
    unknown_id = json.loads(json.dumps(_complete(GOOD)))
    unknown_id["rubric_alignment"]["major"][0]["item_id"] = "Z9"
    for bad in (wrong_name, unknown_id):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
        with pytest.raises(ValueError):
            Diagnosis.model_validate(bad, context={"valid_ids": VALID_IDS})
    # No context: any non-empty id, as the validator without valid_ids
    free = request_schema(Diagnosis)["$defs"]["RubricFinding"]["properties"]["item_id"]
    assert free == {"type": "string", "minLength": 1}


def test_strict_and_bounded_forms() -> None:
    s = strict({"type": "object", "properties": {"a": {"type": "string", "default": ""},
                                                 "b": {"type": "array", "items": {"type": "string"}}}})
    assert s["required"] == ["a", "b"] and s["additionalProperties"] is False and "default" not in s["properties"]["a"]
    b = bounded({"type": "object", "properties": {
        "free": {"type": "string"}, "long": {"type": "string", "minLength": 20}, "id": {"type": "string", "pattern": "^R\\d+$"},
        "kind": {"type": "string", "enum": ["x"]}, "many": {"type": "array", "minItems": 2, "items": {"type": "string"}}}},
        max_string_chars=8, max_items=1)
    p = b["properties"]
    assert p["free"]["maxLength"] == 8 and p["long"]["maxLength"] == 20  # minLength wins over the bound
    assert "maxLength" not in p["id"] and "maxLength" not in p["kind"]
    assert p["many"]["maxItems"] == 2 and p["many"]["items"]["maxLength"] == 8
    assert bounded({"type": "string"}) == {"type": "string"}
