"""The paper's G.1 example (Poker Hand Evaluator, q5) with recorded model answers for all five
stages: every stage is published and validated; the reference has both scopes, all three levels,
5 initial-state and 12 dynamic items (as in the paper's Table 9), and no uncovered must_cover."""
import json

import duckdb
import pyarrow.compute as pc

from tasks.rubrics.build import build_stages
from schemas.config.rubrics import RubricsConfig
from schemas.rubric import RUBRIC_LEVELS, CompactRubric
from tasks.rubrics import load_tasks
from tasks.rubrics.filtering import TRACE_ONLY
from tasks.stages.store import StageStore
from tests.fixtures.rubrics.support import publish_queries, q5_text, recorded_provider

STAGES = ["expansions", "requirements", "modules", "rubric_candidates", "rubric_references", "rubric_checks",
          "rubric_items"]


def test_q5_recorded_answers_publish_all_stages(prefect_harness, tmp_path):
    store = StageStore(tmp_path / "data")
    publish_queries(store, {"q5": q5_text()})
    provider = recorded_provider()
    outcomes = build_stages(store, provider, RubricsConfig(chunk_size=10), concurrency=1)
    assert [o.manifest.stage for o in outcomes] == STAGES
    assert all(o.manifest.validation["success"] for o in outcomes)
    assert {o.manifest.provider for o in outcomes} == {"scripted"}
    # one call per stage, each valid on the first attempt
    assert [c[0] for c in provider.calls] == STAGES[:6]

    ref = store.read("rubric_references").to_pylist()[0]
    assert ref["status"] == "ok" and (ref["n_initial"], ref["n_dynamic"]) == (5, 12)
    assert ref["uncovered_must_cover_ids"] == [] and ref["uncovered_requirement_ids"] == []
    assert len(ref["must_cover_ids"]) == 16
    # the trace-only candidate was reported unsupported by the model; the program removed nothing
    assert [(u["ids"], u["found_by"]) for u in ref["unsupported_items"]] == [(["C17"], "model")]
    actions = {d["action"]: d for d in ref["filtering_decisions"]}
    assert actions["split"]["result_ids"] == ["D5", "D6", "D7"] and actions["merge"]["result_ids"] == ["D11"]

    items = store.read("rubric_items")
    assert items.num_rows == 17
    assert set(items.column("scope").to_pylist()) == {"initial_state", "dynamic"}
    assert set(items.column("rubric_level").to_pylist()) == set(RUBRIC_LEVELS)
    ids = items.column("id").to_pylist()
    assert ids == [f"I{i}" for i in range(1, 6)] + [f"D{i}" for i in range(1, 13)]
    d12 = items.filter(pc.equal(items.column("id"), "D12")).to_pylist()[0]
    assert "accuracy" in d12["requirement"] and d12["covered_requirement_ids"] == ["R13"]

    # exports: compact (id, requirement, level) and the judge payload (scope explicit)
    compact = CompactRubric.model_validate_json(ref["compact_json"])
    assert compact.scope_of()["I1"] == "initial_state" and compact.level_of()["D5"] == "correct_rule"
    payload = json.loads(ref["judge_payload_json"])
    assert payload[0] == {"id": "I1", "scope": "initial_state", "requirement": compact.initial_state[0].requirement,
                          "level": "core_module"}
    tasks = load_tasks(store)
    assert [t.query_id for t in tasks] == ["q5"] and "Easy mode is selected when the page loads" in tasks[0].query
    # checks: the recorded answer's D10 check waits 12 s (the language allows 5 s): dropped, with its problem
    chk = {r["item_id"]: r for r in store.read("rubric_checks").to_pylist()}
    assert chk["D10"]["check_status"] == "dropped" and "ms" in chk["D10"]["check_problem"]
    kept = sorted(i for i, r in chk.items() if r["check_status"] == "kept")
    assert kept == ["D11", "D12", "D3", "D9", "I2", "I3"] and chk["I1"]["check_status"] == "none"
    assert [i for i, _c in tasks[0].rubric.checks()] == ["I2", "I3", "D3", "D9", "D11", "D12"]
    assert sorted(i for i, c in zip(ids, items.column("check").to_pylist()) if c) == kept


def test_readme_join_query_runs(prefect_harness, tmp_path):
    store = StageStore(tmp_path / "data")
    publish_queries(store, {"q5": q5_text()})
    build_stages(store, recorded_provider(), RubricsConfig(), concurrency=1)
    sql = (Path_sql := (__import__("pathlib").Path(__file__).parent / "fixtures" / "rubrics" / "join.sql")).read_text()
    con = duckdb.connect(str(tmp_path / "data" / "catalog.duckdb"), read_only=True)
    rows = con.execute(sql, ["q5"]).fetchall()
    cols = [d[0] for d in con.description]
    con.close()
    assert Path_sql.exists() and len(rows) == 17
    first = dict(zip(cols, rows[0]))
    assert first["query_id"] == "q5" and first["text"] == q5_text() and first["id"] == "I1"
    assert first["expanded_query"].startswith(q5_text())


def test_trace_only_item_is_removed_by_the_evidence_check(prefect_harness, tmp_path):
    answer = json.loads((__import__("pathlib").Path(__file__).parent / "fixtures/rubrics/q5/5_reference.json").read_text())
    answer["dynamic"].append({"id": "D13", "requirement": "An ace-low straight (A-2-3-4-5) is judged a Straight.",
                              "verification": "Deal A-2-3-4-5.", "source_module": "Rank selection and evaluation",
                              "covered_requirement_ids": ["R4"], "query_evidence": "Aces count high or low in straights",
                              "rubric_level": "correct_rule", "from_candidates": ["C17"]})
    answer["dynamic"].insert(0, {"id": "D0", "requirement": "Pressing space deals a new hand.", "verification": "Press space.",
                                 "source_module": "Hand display", "covered_requirement_ids": ["R2"],
                                 "query_evidence": "press the space bar to deal", "rubric_level": "core_module"})
    store = StageStore(tmp_path / "data")
    publish_queries(store, {"q5": q5_text()})
    build_stages(store, recorded_provider(overrides={"rubric_references": answer}), RubricsConfig(), concurrency=1)
    ref = store.read("rubric_references").to_pylist()[0]
    removed = [u for u in ref["unsupported_items"] if u["found_by"] == "evidence_check"]
    assert [(u["ids"], u["reason"]) for u in removed] == [
        (["D0"], "query_evidence does not occur in the expanded query"), (["C17"], TRACE_ONLY)]
    assert (ref["n_initial"], ref["n_dynamic"]) == (5, 12)  # the two were removed; ids stay D1..D12
    assert "2 removed by the evidence check (1 supported only by the trace)" in ref["faithfulness_report"]
    items = store.read("rubric_items")
    assert "press the space bar to deal" not in items.column("query_evidence").to_pylist()
    assert items.column("id").to_pylist()[-1] == "D12"


def test_dropped_item_leaves_its_must_cover_requirement_reported_uncovered(prefect_harness, tmp_path):
    """The recorded reference loses D2 (the only item covering R4) and still claims full coverage: the program,
    not the model, finds R4 uncovered, reports it, and renumbers the dynamic items."""
    path = __import__("pathlib").Path(__file__).parent / "fixtures/rubrics/q5/5_reference.json"
    answer = json.loads(path.read_text())
    d3 = next(i for i in answer["dynamic"] if i["id"] == "D3")
    answer["dynamic"] = [i for i in answer["dynamic"] if i["id"] != "D2"]
    answer.pop("uncovered_requirement_ids", None)
    store = StageStore(tmp_path / "data")
    publish_queries(store, {"q5": q5_text()})
    build_stages(store, recorded_provider(overrides={"rubric_references": answer}), RubricsConfig(), concurrency=1)
    ref = store.read("rubric_references").to_pylist()[0]
    assert ref["status"] == "ok" and "R4" in ref["must_cover_ids"]
    assert ref["uncovered_must_cover_ids"] == ["R4"] and ref["uncovered_requirement_ids"] == ["R4"]
    assert "uncovered must_cover: ['R4']" in ref["coverage_report"]
    assert (ref["n_initial"], ref["n_dynamic"]) == (5, 11)
    items = {r["id"]: r for r in store.read("rubric_items").to_pylist()}
    assert items["D2"]["requirement"] == d3["requirement"] and "D12" not in items
    assert not any("R4" in r["covered_requirement_ids"] for r in items.values())


def test_the_llm_path_through_the_real_sdk_writes_checks_and_their_share_of_dynamic_items(prefect_harness, tmp_path,
                                                                                          monkeypatch):
    """With a key, the model's checks stage writes the checks: the recorded q5 answers served by the fake Messages
    API, through the real SDK; the share of dynamic items with a kept check is what the recorded answer gives."""
    from fakes.fake_anthropic import FakeAnthropic
    from schemas.config.llm import LLMConfig
    from tasks.llm.factory import make_provider
    from tests.fixtures.rubrics.support import Q5, STAGE_FILES

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    answers = iter([(Q5 / f).read_text() for f in STAGE_FILES.values()])  # one query: the stages ask in order
    store = StageStore(tmp_path / "data")
    publish_queries(store, {"q5": q5_text()})
    with FakeAnthropic(reply=lambda _body: next(answers)) as api:
        provider = make_provider("anthropic", base_url=api.base_url,
                                 config=LLMConfig(store_path=str(tmp_path / "llm.sqlite")))
        outcomes = build_stages(store, provider, RubricsConfig(chunk_size=10), concurrency=1)
        assert len(api.seen("/v1/messages", "POST")) == len(STAGE_FILES)
    assert {o.manifest.provider for o in outcomes} == {"anthropic"}
    dynamic = [i for i in store.read("rubric_items").to_pylist() if i["scope"] == "dynamic"]
    share = sum(i["check"] is not None for i in dynamic) / len(dynamic)
    print(f"LLM path on the fake API: {share:.2f} of {len(dynamic)} dynamic items carry a check")
    assert share == 4 / 12  # D3, D9, D11, D12 (D10's check waits 12 s and is dropped)
