"""Ingest of external query sets: WebGen-Bench, InteractScience (with its Playwright specs), ArtifactsBench and the
generic JSONL; bad lines reported, good ones kept; given checklist items become rubric items marked given in
build-rubrics, a benchmark's own protocol inputs (specs, judge checklist) stay in benchmark_queries."""
import json
from pathlib import Path

import pyarrow.compute as pc
import pytest

from tasks.queries.ingest import ingest_jsonl

BENCH = Path(__file__).parent / "fixtures" / "benchmarks"


def test_malformed_lines_are_reported_with_line_numbers_and_good_lines_kept(tmp_path):
    f = tmp_path / "test.jsonl"
    lines = [
        json.dumps({"id": "000001", "instruction": "Please implement a todo list app.", "Category": "Content", "application_type": "Todo"}),
        "{this is not json",
        json.dumps({"id": "000003", "instruction": ""}),
        json.dumps({"id": "000004", "instruction": "Build a calculator web page."}),
        json.dumps({"id": "000001", "instruction": "Duplicate id here."}),
        json.dumps({"id": "000006", "instruction": "A quiz app.", "ui_instruct": [{"expected_result": "no task"}]}),
        json.dumps({"id": "000007", "query": "A timer app.", "checklist": "start, stop"}),
    ]
    f.write_text("\n".join(lines) + "\n")
    got = ingest_jsonl(f)
    assert got.queries.column("query_id").to_pylist() == ["ext-000001", "ext-000004"]
    assert got.queries.column("source").to_pylist() == ["external:test.jsonl"] * 2
    assert [e.line for e in got.errors] == [2, 3, 5, 6, 7]
    assert "not valid JSON" in str(got.errors[0]) and "line 2" in str(got.errors[0])
    assert "test case 1 has no non-empty 'task'" in str(got.errors[3])
    assert "'checklist' must be a list" in str(got.errors[4])


def test_webgen_bench_test_cases_become_given_items():
    got = ingest_jsonl(BENCH / "webgen_sample.jsonl")
    assert not got.errors and got.queries.num_rows == 5
    rows = {r["query_id"]: r for r in got.benchmark.to_pylist()}
    tip = rows["ext-900001"]
    assert tip["format"] == "webgen-bench" and tip["category"] == "User Interaction"
    assert tip["application_type"] == "Calculators" and tip["external_id"] == "900001"
    assert tip["given_items"][0] == {"requirement": "Enter 100 as the bill and choose 15%.",
                                     "verification": "The tip shows 15.00 and the total shows 115.00."}
    assert sum(len(r["given_items"]) for r in rows.values()) == 12


def test_generic_format_keeps_its_labels_and_only_our_domains_reach_queries():
    got = ingest_jsonl(BENCH / "generic_sample.jsonl")
    assert not got.errors
    q = {r["query_id"]: r for r in got.queries.to_pylist()}
    b = {r["query_id"]: r for r in got.benchmark.to_pylist()}
    assert q["ext-g1"]["domain"] == "Tools" and q["ext-g1"]["difficulty"] == "easy"
    # a domain/difficulty outside ours stays in benchmark_queries, not in the validated queries columns
    assert q["ext-g2"]["domain"] is None and b["ext-g2"]["domain"] == "Astronomy" and b["ext-g2"]["difficulty"] == "expert"
    assert b["ext-g1"]["format"] == "generic" and b["ext-g1"]["category"] == "Timers"
    assert b["ext-g1"]["given_items"] == [
        {"requirement": "Start begins counting time.", "verification": None},
        {"requirement": "Lap adds the current time to a list.", "verification": "Click lap twice: two rows appear."}]
    assert b["ext-g3"]["given_items"] == []


def test_interactscience_plans_are_queries_and_their_snapshot_checklists_give_no_items(tmp_path):
    f = tmp_path / "interactscience.jsonl"
    plan = "### 1. Page Content Structure\nA slider `#shift-slider` (default 12) sets the shift."
    f.write_text(json.dumps({"id": "AdditiveCipher", "theorem or principle": "Caesar cipher", "discipline": "Mathematics",
                             "difficulty": "easy", "question": plan, "lm_system_prompt": "You are ...",
                             "snapshot_checklists": [{"screenshot_id": "1", "checklist": ["The slider shows 12."]}]})
                 + "\n" + json.dumps({"id": "Broken", "discipline": "Physics", "question": ""}) + "\n")
    got = ingest_jsonl(f)
    assert [e.line for e in got.errors] == [2] and "'question' (InteractScience" in str(got.errors[0])
    q, b = got.queries.to_pylist()[0], got.benchmark.to_pylist()[0]
    assert q["query_id"] == "ext-AdditiveCipher" and q["text"] == plan and q["difficulty"] == "easy"
    assert q["title"] == "Caesar cipher" and q["domain"] is None  # "Mathematics" is not one of our domains
    assert b["format"] == "interactscience" and b["domain"] == "Mathematics" and b["given_items"] == []


def test_interactscience_specs_come_from_the_benchmarks_tests_folder(tmp_path):
    """Each task's own spec is kept verbatim beside its row (official_tests); a task without one is kept and named."""
    data, tests = tmp_path / "data", tmp_path / "PFT_tests"  # the benchmark repository's layout
    data.mkdir()
    tests.mkdir()
    spec = (BENCH.parent / "pft" / "Counter.spec.js").read_text()
    (tests / "Counter.spec.js").write_text(spec)
    line = lambda i: json.dumps({"id": i, "discipline": "Mathematics", "difficulty": "easy",  # noqa: E731
                                 "question": f"Plan of {i}: a counter with #inc and #reset buttons."})
    (data / "interactscience.jsonl").write_text(line("Counter") + "\n" + line("NoSpec") + "\n")
    got = ingest_jsonl(data / "interactscience.jsonl")
    rows = {r["external_id"]: r for r in got.benchmark.to_pylist()}
    assert rows["Counter"]["official_tests"] == spec and rows["Counter"]["official_tests_name"] == "Counter.spec.js"
    assert rows["NoSpec"]["official_tests"] is None and not got.errors
    assert len(got.notes) == 1 and "1 of 2 InteractScience tasks have no Playwright spec" in got.notes[0]
    assert "NoSpec" in got.notes[0] and "--tests" in got.notes[0]
    elsewhere = tmp_path / "a" / "b" / "elsewhere.jsonl"  # no PFT_tests/ beside it or its folder: the folder is given
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text(line("Counter") + "\n")
    assert ingest_jsonl(elsewhere).benchmark.column("official_tests").to_pylist() == [None]
    assert ingest_jsonl(elsewhere, tests).benchmark.column("official_tests").to_pylist() == [spec]
    with pytest.raises(FileNotFoundError, match="PFT_tests"):
        ingest_jsonl(elsewhere, tmp_path / "nope")


def test_artifactsbench_lite_lines_keep_the_judge_checklist_and_give_no_items(tmp_path):
    got = ingest_jsonl(BENCH / "artifacts_sample.jsonl")
    assert not got.errors and got.queries.column("query_id").to_pylist() == ["ext-901", "ext-902"]
    b = {r["query_id"]: r for r in got.benchmark.to_pylist()}["ext-902"]
    assert b["format"] == "artifactsbench" and b["category"] == "Web Application" and b["difficulty"] == "medium"
    assert b["given_items"] == [] and len(b["official_checklist"]) == 10
    assert b["official_checklist"][0] == {"id": "0", "title": "Does start count down from 25:00?", "max_score": 10.0,
                                          "description": "Score 0 to 10: does start count down from 25:00? Deduct 5 "
                                                         "points for each clear gap."}
    good = json.loads((BENCH / "artifacts_sample.jsonl").read_text().splitlines()[0])
    bad = tmp_path / "bad.jsonl"
    lines = [json.dumps(good),
             json.dumps({**good, "index": 2, "checklist": [{"id": 0, "title": "", "maxScore": 10}]}),
             json.dumps({**good, "index": 3, "checklist": [{"id": 0, "title": "Robust?", "maxScore": "ten"}]}),
             json.dumps({**good, "index": 4, "checklist": []})]
    bad.write_text("\n".join(lines) + "\n")
    got = ingest_jsonl(bad)
    assert got.queries.column("query_id").to_pylist() == ["ext-901"] and [e.line for e in got.errors] == [2, 3, 4]
    assert "item 1 has no non-empty 'title'" in str(got.errors[0])
    assert "positive number 'maxScore'" in str(got.errors[1]) and "non-empty list" in str(got.errors[2])
