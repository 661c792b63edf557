"""evaluate on an ingested benchmark by its own protocol, the user's route (ingest, build-rubrics, evaluate):

- InteractScience: three generators in one run (two folders of responses and an API model behind the fake
  OpenAI-compatible server), each app run through the benchmark's own Playwright spec (real Node, real
  Chromium): official_score is the pass share over the judged tests, official_detail the per-test outcomes;
  the Table-1 summary and the report set the official metric beside ours with their agreement and the plot;
- WebGen-Bench: the share of each task's test cases (given rubric items) our judge found met;
- selecting the ingested benchmark by name, and a name that is not one.
"""
import json
import shutil
from pathlib import Path

import pytest

from flows.build_rubrics import build_rubrics
from flows.evaluate import evaluate
from flows.synthesize_queries import synthesize_queries
from schemas.config.evaluation import OfficialConfig
from tasks.evaluation.official import HARNESS_CHANGED_SCRIPT, cases_met
from tasks.evaluation.pft import runner_problem
from tasks.stages.store import StageStore
from fakes.fake_openai import FakeOpenAI

FIX = Path(__file__).parent / "fixtures"
SETS = ["env.runtime.enabled=false"]
ESCAPING = "const esc = (s) => s.replace(/'/g, '&#39;');"
PLAN = ("### Counter\nA counter `#count` (default 0) with a button `#inc` that adds one and a button `#reset` that "
        "sets it back to 0; a line `#lib` names the loaded d3 version (d3 from a CDN).")
needs_runner = pytest.mark.skipif(runner_problem(OfficialConfig()) is not None,
                                  reason=str(runner_problem(OfficialConfig())))


def _ingest(data: Path, file: Path) -> None:
    synthesize_queries(sets=[f"synth.ingest_path={file}"], force=True)
    build_rubrics(sets=SETS)


@pytest.fixture(scope="module")
def interact(prefect_harness, tmp_path_factory):
    root = tmp_path_factory.mktemp("official")
    data, bench = root / "data", root / "InteractScience"
    mp = pytest.MonkeyPatch()
    mp.setenv("RUBRICRL_DATA_DIR", str(data))
    mp.setenv("OPENAI_API_KEY", "test-key")
    (bench / "data").mkdir(parents=True)
    (bench / "PFT_tests").mkdir()
    shutil.copy(FIX / "pft" / "Counter.spec.js", bench / "PFT_tests")
    (bench / "data" / "interactscience.jsonl").write_text(json.dumps(
        {"id": "Counter", "discipline": "Computer Science", "difficulty": "easy", "question": PLAN}) + "\n")
    _ingest(data, bench / "data" / "interactscience.jsonl")
    folders = {}
    pages = {name: (FIX / "pft" / page).read_text() for name, page in (("good", "counter.html"),
                                                                      ("broken", "counter_broken.html"))}
    # the good page with an escaping function in its script, which the benchmark's harness unescapes into a syntax error
    pages["escaped"] = pages["good"].replace("  let n = 0;", "  let n = 0;\n  " + ESCAPING)
    for name, page in pages.items():
        folders[name] = root / name
        folders[name].mkdir()
        (folders[name] / "ext-Counter.txt").write_text(f"Here is the page.\n```html\n{page}```\n")
    raw_page = (FIX / "pft" / "counter.html").read_text()  # no ```html block: the benchmark's harness finds no page
    with FakeOpenAI(reply=lambda body: raw_page) as api:
        out = evaluate(profile="demo", sets=[*SETS, "evaluation.benchmark=interactscience"], runs=1,
                       models=[str(folders["good"]), str(folders["broken"]), f"api:openai/local@{api.base_url}/v1",
                               str(folders["escaped"])])
    mp.undo()
    return data, out


@needs_runner
def test_three_generators_each_app_by_the_benchmarks_own_tests(interact):
    data, out = interact
    rows = {r["model"]: r for r in StageStore(data).read("eval_results").to_pylist()}
    assert set(rows) == {"good", "broken", "openai/local", "escaped"}
    assert {r["official_metric"] for r in rows.values()} == {"pft_pass_rate"}
    good, broken, api = rows["good"], rows["broken"], rows["openai/local"]
    assert good["official_score"] == 1.0 and good["official_note"].startswith("1 of 4 tests not judged")
    assert {d["name"]: d["status"] for d in good["official_detail"]} == {
        "Increment Button": "passed", "Reset Button": "passed", "Library From A CDN": "passed",
        "Counter Snapshot": "no_reference"}
    assert broken["official_score"] == pytest.approx(1 / 3)
    assert [d["passed"] for d in broken["official_detail"]] == [False, False, True, None]
    # our environment finds the raw page in the API model's answer; the benchmark's harness, reading only a
    # fenced html block, finds none: every one of its tests fails, as in the benchmark's own run
    assert api["tier"] != "format_invalid" and api["official_score"] == 0.0
    assert all("ERR_FILE_NOT_FOUND" in d["note"] for d in api["official_detail"])
    # the harness's unescaping broke the escaped page's script: its score is the benchmark's, its note says why
    escaped = rows["escaped"]
    assert escaped["official_score"] < good["official_score"] and HARNESS_CHANGED_SCRIPT in escaped["official_note"]
    assert HARNESS_CHANGED_SCRIPT not in good["official_note"]


@needs_runner
def test_table_one_and_the_report_set_the_official_metric_beside_ours(interact):
    data, out = interact
    s = out["summary"]
    assert s["good"]["official/pft_pass_rate"] == pytest.approx(100.0)
    assert s["broken"]["official/pft_pass_rate"] == pytest.approx(100 / 3)
    assert s["openai/local"]["official/pft_pass_rate"] == pytest.approx(0.0)
    assert all("agree/spearman" in v and "official/unjudged" in v for v in s.values())
    # the benchmark's own discipline and difficulty are the rows a user reads where a model fails, never "(none)"
    for v in s.values():
        assert {"pass/difficulty=easy", "pass/domain=Computer Science", "pass/category=Computer Science"} <= set(v)
        assert not [k for k in v if "(none)" in k]
    md = (data / "reports" / "eval" / "eval.md").read_text()
    assert "| official/pft_pass_rate |" in md and "agree/pairwise" in md
    assert "Our reward against the benchmark's own pft_pass_rate over 4 apps" in md
    assert "pairwise within a task" in md and "![reward against the official metric](official.png)" in md
    assert Path(out["official_png"]).stat().st_size > 5000
    html = Path(out["html"]).read_text()
    assert "Our reward against the official metric" in html and "official <b>0.33</b>" in html


@needs_runner
def test_a_missing_runner_stops_evaluate_before_any_work_naming_the_fix(interact, monkeypatch, tmp_path):
    data, _ = interact
    monkeypatch.setenv("RUBRICRL_DATA_DIR", str(data))
    before = StageStore(data).version("eval_results")
    with pytest.raises(ValueError, match="Playwright tests cannot run: the PFT runner is not installed at "
                                         ".*npm ci --prefix vendor/pft"):
        evaluate(profile="demo", sets=[*SETS, "evaluation.benchmark=interactscience",
                                       f"evaluation.official.pft_dir={tmp_path}"], runs=1, models=[str(tmp_path)])
    assert before is not None and StageStore(data).version("eval_results") == before


def test_webgen_test_cases_met_by_our_judge_and_the_benchmark_by_name(prefect_harness, data_dir, tmp_path):
    _ingest(data_dir, FIX / "benchmarks" / "webgen_sample.jsonl")
    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / "ext-900001.txt").write_text((FIX / "pft" / "counter.html").read_text())
    (folder / "ext-900002.txt").write_text("I cannot build that.")
    with pytest.raises(ValueError, match="allowed: heldout, ingested, webgen_sample"):
        evaluate(profile="demo", sets=[*SETS, "evaluation.benchmark=interactscience"], runs=1, models=[str(folder)])
    evaluate(profile="demo", sets=[*SETS, "evaluation.benchmark=webgen_sample"], runs=1, models=[str(folder)])
    store = StageStore(data_dir)
    rows = {r["query_id"]: r for r in store.read("eval_results").to_pylist()}
    given = {}
    for it in store.read("rubric_items").to_pylist():
        if it["given"]:
            given.setdefault(it["query_id"], []).append(it)
    tip, none = rows["ext-900001"], rows["ext-900002"]
    assert tip["official_metric"] == "test_cases_met" and len(tip["official_detail"]) == len(given["ext-900001"])
    assert [d["name"] for d in tip["official_detail"]] == [i["requirement"] for i in given["ext-900001"]]
    met = [d["status"] == "met" for d in tip["official_detail"]]
    assert tip["official_score"] == pytest.approx(sum(met) / len(met)) and tip["official_note"] == "judge offline"
    assert len(met) - sum(met) <= tip["items_failed"]  # an unmet test case is a failed rubric item
    assert none["tier"] == "format_invalid" and none["official_score"] == 0.0
    assert {d["status"] for d in none["official_detail"]} == {"unmet"}


def test_a_test_case_is_met_unless_the_judge_failed_its_item():
    cases = [("D1", "Enter 100 and choose 15%."), ("D2", "Clear the bill."), ("D3", "Pick 20%.")]
    finding = lambda item, sev: {"layer": "rubric_alignment", "severity": sev, "item_id": item}  # noqa: E731
    judged = {"gate_rubric_alignment": False, "findings": [finding("D2", "critical"), finding("D3", "minor"),
                                                           {"layer": "code_simulation", "severity": "major"}]}
    row = {"tier": "valid", "judge_provider": "offline"}
    score, detail, note = cases_met(row, judged, cases)
    assert score == pytest.approx(2 / 3) and [d["status"] for d in detail] == ["met", "unmet", "met"]
    assert [d["name"] for d in detail] == [c[1] for c in cases] and note == "judge offline"
    assert cases_met(dict(row, tier="missing"), judged, cases)[0] is None  # our judge failed: undecided, not 0
    undecided = cases_met(row, {"gate_rubric_alignment": None, "findings": []}, cases)
    assert undecided[0] is None and {d["status"] for d in undecided[1]} == {"undecided"}
    assert cases_met(dict(row, tier="format_invalid"), None, cases)[0] == 0.0  # no app: nothing is met
    assert cases_met(row, judged, [])[0] is None
