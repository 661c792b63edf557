"""Wire tests: the real ``anthropic`` and ``openai`` SDKs against local fake APIs on 127.0.0.1.

Every behaviour runs for both providers (parametrized): success, malformed JSON then fixed, unknown
id then fixed, malformed twice -> missing, 429 with retry-after, 500 then success, timeout, 401,
cache hit on re-run with zero requests, prompt-cache tokens, budget stop, key never stored.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tasks.llm.base import LLMRequest
from tasks.llm.ledger import BudgetExceeded, result_summary, summarize
from tasks.llm.retry import LLMAuthError
from fakes.http_fake import Scripted
from fakes.llm_fixtures import PROMPT_DIR, AnswerInSet, request
from fakes.llm_wire import KEY_ENV, SECRET, Wire, make_wire

KINDS = ["anthropic", "openai"]


@pytest.fixture(params=KINDS)
def wire(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    w = make_wire(request.param, tmp_path, monkeypatch)
    yield w
    w.api.stop()


def user_texts(wire: Wire) -> list[str]:
    path = "/v1/messages" if wire.kind == "anthropic" else "/v1/chat/completions"
    out = []
    for s in wire.api.seen(path, "POST"):
        if s.path != path:
            continue
        last = s.body["messages"][-1]["content"]
        out.append(last if isinstance(last, str) else "".join(b["text"] for b in last))
    return out


def test_success_is_validated_priced_and_ledgered(wire: Wire) -> None:
    p = wire.provider()
    r = p.complete(request(7))
    assert r.ok and r.output.n == 7 and r.status == "ok" and r.attempts == 1
    assert r.provider == wire.kind and r.cost_usd > 0 and r.usage.output_tokens > 0
    rows = p.store.ledger_rows()
    assert len(rows) == 1 and rows[0]["status"] == "ok" and rows[0]["key"] == "row-7"
    assert rows[0]["stage"] == "test_stage" and rows[0]["prompt"] == "echo" and rows[0]["prompt_version"] == "1"
    assert rows[0]["cost_usd"] == pytest.approx(r.cost_usd) and not rows[0]["cached"]
    assert wire.model_calls() == 1


def test_malformed_json_then_fixed(wire: Wire) -> None:
    wire.api.push(Scripted(text="Sure! here it is: {answer: ok"))
    r = wire.provider().complete(request(3))
    assert r.ok and r.output.n == 3 and r.attempts == 2
    texts = user_texts(wire)
    assert len(texts) == 2 and "could not be used: the reply is not valid JSON" in texts[1]


def test_unknown_id_gets_one_corrective_retry(wire: Wire) -> None:
    wire.api.push(Scripted(text='{"answer": "x", "n": 99}'))
    req = LLMRequest(stage="judge", key="k", prompt="echo", variables={"item": "a", "n": 5}, output_model=AnswerInSet,
                     validation_context={"valid_ids": {5, 6}}, prompt_dir=PROMPT_DIR)
    r = wire.provider().complete(req)
    assert r.ok and r.output.n == 5 and r.attempts == 2
    assert "unknown id 99" in user_texts(wire)[1]


def test_malformed_twice_is_missing_not_a_crash(wire: Wire) -> None:
    wire.api.push(Scripted(text="no json here"), Scripted(text='{"answer": "x"}'))
    p = wire.provider()
    results = p.complete_many([request(1), request(2)], concurrency=1)
    bad, good = results
    assert bad.output is None and bad.status == "missing" and bad.attempts == 2
    assert bad.error.startswith("missing after one corrective retry") and "n: Field required" in bad.error
    assert good.ok
    assert result_summary(results)["missing"] == 1
    assert summarize(p.store.ledger_rows())["test_stage"]["missing"] == 1
    assert wire.model_calls() == 3


def test_429_waits_for_retry_after(wire: Wire) -> None:
    wire.api.push(Scripted(status=429, headers={"retry-after": "1"}))
    p = wire.provider()
    r = p.complete(request(1))
    assert r.ok and wire.model_calls() == 2
    assert len(p.retries) == 1 and p.retries[0][0] == 429 and 1.0 <= p.retries[0][1] <= 1.2


def test_500_then_success(wire: Wire) -> None:
    wire.api.push(Scripted(status=500), Scripted(status=503))
    p = wire.provider()
    r = p.complete(request(1))
    assert r.ok and r.attempts == 1 and wire.model_calls() == 3
    assert [s for s, _ in p.retries] == [500, 503]


def test_timeout_is_retried(wire: Wire) -> None:
    from schemas.config.llm import RetryConfig

    wire.api.push(Scripted(delay_s=2.0))
    p = wire.provider(retry=RetryConfig(max_retries=2, base_delay_s=0.05, timeout_s=0.5))
    r = p.complete(request(4))
    assert r.ok and r.output.n == 4
    assert p.retries and p.retries[0][0] is None  # a timeout, not an HTTP status
    assert wire.model_calls() == 2


def test_retries_exhausted_is_an_error_row(wire: Wire) -> None:
    from schemas.config.llm import RetryConfig

    wire.api.push(*[Scripted(status=500)] * 3)
    p = wire.provider(retry=RetryConfig(max_retries=2, base_delay_s=0.01))
    r = p.complete(request(1))
    assert r.status == "error" and "InternalServerError" in r.error
    assert p.store.ledger_rows()[0]["status"] == "error"


def test_wrong_key_is_a_clear_error_without_the_key(wire: Wire, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV[wire.kind], "sk-wrong-key-XYZ")
    p = wire.provider()
    with pytest.raises(LLMAuthError) as e:
        p.complete(request(1))
    msg = str(e.value)
    assert KEY_ENV[wire.kind] in msg and "401" in msg and "set a valid key" in msg
    assert "sk-wrong-key-XYZ" not in msg and SECRET not in msg


def test_missing_key_names_the_variable(wire: Wire, monkeypatch: pytest.MonkeyPatch) -> None:
    from schemas.config.llm import LLMConfig
    from tasks.llm import get_provider

    monkeypatch.delenv(KEY_ENV[wire.kind])
    cfg = LLMConfig(provider=wire.kind, model="gpt-4.1-mini" if wire.kind == "openai" else None,
                    store_path=str(wire.store_path))
    with pytest.raises(ValueError, match=KEY_ENV[wire.kind]):
        get_provider(config=cfg)


def test_rerun_is_served_from_cache_with_zero_requests(wire: Wire) -> None:
    reqs = [request(i) for i in range(6)]
    first = wire.provider().complete_many(reqs, concurrency=3)
    assert all(r.ok and not r.cached for r in first)
    before = len(wire.api.log)
    again = wire.provider().complete_many(reqs + [request(6)], concurrency=3)  # a fresh process would look the same
    assert len(wire.api.log) == before + 1  # only the new row reached the server
    assert [r.cached for r in again] == [True] * 6 + [False]
    assert [r.output for r in again[:6]] == [r.output for r in first]
    assert all(r.cost_usd == 0 for r in again[:6])


def test_cache_key_changes_with_sampling_and_model(wire: Wire) -> None:
    p = wire.provider()
    p.complete(request(1))
    p.complete(request(1, temperature=0.7))
    p.complete(LLMRequest(**{**request(1).__dict__, "max_tokens": 100}))
    assert wire.model_calls() == 3


def test_prompt_cache_tokens_reach_the_ledger(wire: Wire) -> None:
    p = wire.provider()
    p.complete_many([request(1), request(2)], concurrency=1)
    rows = p.store.ledger_rows()
    assert rows[1]["cache_read_tokens"] > 0
    if wire.kind == "anthropic":
        assert rows[0]["cache_write_tokens"] > 0
        body = wire.api.seen("/v1/messages", "POST")[0].body
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_budget_stops_cleanly(wire: Wire) -> None:
    p = wire.provider(budget_usd=1e-9)
    results = p.complete_many([request(i) for i in range(5)], concurrency=1)
    assert results[0].ok and all(r.status == "budget" for r in results[1:])
    assert wire.model_calls() == 1
    with pytest.raises(BudgetExceeded, match="raise llm.budget_usd"):
        p.budget.check()
    assert [r["status"] for r in p.store.ledger_rows()] == ["ok"] + ["budget"] * 4


def test_key_is_never_written(wire: Wire, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from tasks.llm.ledger import ledger_table

    caplog.set_level(logging.DEBUG)
    wire.api.push(Scripted(status=429, headers={"retry-after": "0"}), Scripted(text="bad"))
    p = wire.provider()
    p.complete_many([request(i) for i in range(3)], concurrency=1)
    import pyarrow.parquet as pq

    pq.write_table(ledger_table(p.store.ledger_rows()), tmp_path / "ledger.parquet")
    p.store.close()
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    assert SECRET not in caplog.text


def test_pickled_provider_carries_no_key_and_still_works(wire: Wire) -> None:
    import pickle

    p = wire.provider()
    p.complete(request(1))
    blob = pickle.dumps(p)
    assert SECRET.encode() not in blob and SECRET not in repr(p)
    clone = pickle.loads(blob)  # re-reads the key from the environment
    r = clone.complete(request(1))
    assert r.ok and r.cached and clone.run_id == p.run_id


def test_a_groups_judge_calls_read_the_query_and_rubric_from_the_prompt_cache(tmp_path, monkeypatch) -> None:
    import json

    from tasks.env.judge import build_judge_request
    from tasks.env.score_tables import task_from_row
    from tests.fixtures.env_inputs import FIX

    empty = {k: {"name": k, "critical": [], "major": [], "minor": []}
             for k in ("static_check", "code_simulation", "rubric_alignment")}
    w = make_wire("anthropic", tmp_path, monkeypatch, reply=lambda body: json.dumps(empty))
    try:
        p = w.provider()
        task = task_from_row(json.loads((FIX / "task_counter.json").read_text()))
        apps = [f"<html><body><button id='b{i}'>+</button><p id='n'>0</p></body></html>" for i in range(3)]
        assert all(r.ok for r in p.complete_many([build_judge_request(task, a, key=f"r{i}")
                                                  for i, a in enumerate(apps)], concurrency=1))
        p.complete(request(1))  # the twin: a prompt without a shared head
        bodies = [s.body for s in w.api.seen("/v1/messages", "POST")]
        heads = [b["messages"][0]["content"][0] for b in bodies[:3]]
        assert all(h == heads[0] and h["cache_control"] == {"type": "ephemeral"} for h in heads)
        assert task.rubric.dynamic[0].requirement in heads[0]["text"] and "Application source" not in heads[0]["text"]
        assert [b["messages"][0]["content"][1]["text"].count(f"id='b{i}'") for i, b in enumerate(bodies[:3])] == [1] * 3
        assert isinstance(bodies[3]["messages"][0]["content"], str)
        rows = p.store.ledger_rows()
        head_tokens = (len(bodies[0]["system"][0]["text"]) + len(heads[0]["text"])) // 4
        assert rows[0]["cache_write_tokens"] == head_tokens and rows[0]["cache_read_tokens"] == 0
        assert [(r["cache_read_tokens"], r["cache_write_tokens"]) for r in rows[1:3]] == [(head_tokens, 0)] * 2
    finally:
        w.api.stop()
