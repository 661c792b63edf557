"""A benchmark's own Playwright functional tests run against generated apps (tasks/evaluation/pft.py): real Node
``@playwright/test`` from vendor/pft, real Debian Chromium, the sandbox in front of every page. A tiny spec in the
InteractScience form, its app, a broken twin that fails it, a twin whose libraries the mirror lacks (no verdict on
the tests that needed them) and a response without a page (every test fails, as in the benchmark's own run)."""
from pathlib import Path

import pytest

from schemas.config.env import RuntimeConfig
from schemas.config.evaluation import OfficialConfig
from tasks.evaluation.pft import AppResult, PftApp, app_score, page_path, run_pft, runner_problem, verdict_of
from tasks.evaluation.playwright_report import TestOutcome

FIX = Path(__file__).parent / "fixtures" / "pft"
SPEC = (FIX / "Counter.spec.js").read_text()
CFG = OfficialConfig()
needs_runner = pytest.mark.skipif(runner_problem(CFG) is not None or not Path(RuntimeConfig().executable_path).exists(),
                                  reason=f"{runner_problem(CFG)} / needs chromium-headless-shell (scripts/setup-system.sh)")
TOLD: list[tuple[str, int, int]] = []  # what run_pft's on_app heard, in order, in the module's one run
APPS = {"good": "counter.html", "broken": "counter_broken.html", "unserved": "counter_unserved.html", "nopage": None}


@pytest.fixture(scope="module")
def ran():
    apps = [PftApp(k, "Counter.spec.js", SPEC, (FIX / f).read_text() if f else None) for k, f in APPS.items()]
    got = run_pft(apps, RuntimeConfig(), CFG.model_copy(update={"pft_apps_per_run": 3}),  # two runs: 3 apps, then 1
                  on_app=lambda *a: TOLD.append(a))
    assert list(got) == list(APPS)
    return got


@needs_runner
def test_each_app_is_told_once_as_its_tests_end_with_its_tests_run_and_passed(ran):
    """The progress of a run comes from the runner's own reporter (vendor/pft/progress.js) as the tests end."""
    told = {k: (n, p) for k, n, p in TOLD}
    assert len(TOLD) == len(told) == len(APPS)
    for k in APPS:
        assert told[k] == (len(ran[k].tests), sum(t.passed for t in ran[k].tests)), k
    assert told["good"] == (4, 3) and told["broken"][1] == 1


def test_the_run_progress_reads_the_reporter_lines_and_tells_the_rest_at_the_end():
    from tasks.evaluation.pft import PROGRESS_PREFIX, RunProgress

    told = []
    p = RunProgress(["a", "b", "c"], lambda *x: told.append(x))
    p.run_dir = "/r"
    line = lambda d: PROGRESS_PREFIX + __import__("json").dumps(d) + "\n"  # noqa: E731
    p.feed(line({"begin": {"/r/a/tests/A.spec.js": 2, "/r/b/tests/B.spec.js": 1, "/elsewhere/x.spec.js": 5}}))
    p.feed("some other output\n")
    p.feed(line({"file": "/r/a/tests/A.spec.js", "passed": True}))
    assert told == []
    p.feed(line({"file": "/r/b/tests/B.spec.js", "passed": False}))
    p.feed(line({"file": "/r/a/tests/A.spec.js", "passed": True}))
    assert told == [("b", 1, 0), ("a", 2, 2)]
    p.finish()  # c's spec ran no test: told when the run ends
    assert told[-1] == ("c", 0, 0) and len(told) == 3


def test_the_official_run_logs_a_progress_line_of_apps_run_and_tests_passed(tmp_path, monkeypatch, caplog):
    import logging

    from tasks.evaluation import official
    from tasks.evaluation.official import OfficialInputs, official_columns

    def fake_run(apps, runtime, cfg, on_app=None):
        for a in apps:
            on_app(a.key, 4, 3)
        return {a.key: AppResult(problem="fake") for a in apps}

    monkeypatch.setattr(official, "run_pft", fake_run)
    bench = {q: {"format": "interactscience", "external_id": q, "official_tests_name": "Counter.spec.js",
                 "official_tests": SPEC} for q in ("ext-A", "ext-B")}
    rows = [{"query_id": q, "model": "gpt-5", "response": "```html\n<p>hi</p>\n```"} for q in bench]
    with caplog.at_level(logging.INFO, logger="rubricrl.progress"):
        official_columns(rows, [None, None], OfficialInputs(bench, {}, {}, CFG, RuntimeConfig(), None, tmp_path))
    lines = [r.getMessage() for r in caplog.records if r.name == "rubricrl.progress"]
    assert lines[0] == "official tests gpt-5: 2 apps to go"
    assert lines[-1].startswith("official tests gpt-5: 2/2 apps run (100%), 8 tests run, 6 tests passed")


def _by_title(result):
    return {t.title: t for t in result.tests}


@needs_runner
def test_the_app_passes_its_spec_and_the_broken_twin_fails_it(ran):
    good, broken = _by_title(ran["good"]), _by_title(ran["broken"])
    assert [verdict_of(good[t]) for t in ("Increment Button", "Reset Button", "Library From A CDN")] == ["passed"] * 3
    assert verdict_of(broken["Increment Button"]) == "failed" and verdict_of(broken["Reset Button"]) == "failed"
    assert "toHaveText" in broken["Increment Button"].error
    assert verdict_of(broken["Library From A CDN"]) == "passed"  # d3 came from the CDN mirror
    score, detail, note = app_score(ran["good"])
    assert score == 1.0 and note.startswith("1 of 4 tests not judged")
    assert app_score(ran["broken"])[0] == pytest.approx(1 / 3)
    # a screenshot test without its reference image is not judged: neither passed nor failed
    assert {d["name"]: (d["passed"], d["status"]) for d in detail}["Counter Snapshot"] == (None, "no_reference")


@needs_runner
def test_the_sandbox_serves_the_mirror_blocks_the_rest_and_an_unserved_library_is_no_verdict(ran):
    good, unserved = _by_title(ran["good"]), _by_title(ran["unserved"])
    assert ("rubricrl-blocked", "https://api.example.com/visits") in good["Increment Button"].annotations
    lib = unserved["Library From A CDN"]
    assert not lib.passed and verdict_of(lib) == "unserved"
    assert any(kind == "rubricrl-unserved" and "d3-not-in-the-mirror" in url for kind, url in lib.annotations)
    # a script from a host off the CDN allowlist is a library the benchmark's own run had: not judged here either
    assert ("rubricrl-unserved", "https://cdn.plot.ly/plotly-2.9.0.min.js") in lib.annotations
    score, detail, _ = app_score(ran["unserved"])
    assert score == 1.0  # the two tests the missing library did not touch passed; the others are not judged
    assert {d["name"]: d["passed"] for d in detail}["Library From A CDN"] is None


@needs_runner
def test_a_response_without_a_page_fails_every_test_and_notes_do_not_name_the_run_folder(ran):
    score, detail, note = app_score(ran["nopage"])
    assert score == 0.0 and note is None and len(detail) == 4
    assert all(d["passed"] is False and "ERR_FILE_NOT_FOUND" in d["note"] for d in detail)
    notes = [d["note"] or "" for r in ran.values() for d in app_score(r)[1]]
    assert all("rubricrl-pft-" not in n and "/tmp/" not in n for n in notes)  # the same apps, the same rows


def test_verdicts_and_scores_from_outcomes():
    snap = "Error: A snapshot doesn't exist at x.png, writing actual."
    tests = [TestOutcome("a", True, "passed", None),
             TestOutcome("b", False, "failed", snap, (snap,)),
             TestOutcome("c", False, "failed", snap, (snap, "Error: expect(locator).toHaveText(expected) failed")),
             TestOutcome("d", False, "timedOut", "Test timeout of 30000ms exceeded."),
             TestOutcome("e", False, "failed", "x", ("x",), (("rubricrl-unserved", "https://unpkg.com/z@1"),))]
    assert [verdict_of(t) for t in tests] == ["passed", "no_reference", "failed", "failed", "unserved"]
    score, detail, note = app_score(AppResult(tests))
    assert score == pytest.approx(1 / 3) and note.startswith("2 of 5 tests not judged")
    assert [d["status"] for d in detail] == ["passed", "no_reference", "failed", "timedOut", "unserved"]
    none = app_score(AppResult(tests[1:2]))
    assert none[0] is None and "could be judged" in none[2]
    assert app_score(AppResult(problem="node is missing")) == (None, [], "node is missing")


def test_the_runner_names_what_is_missing_and_a_spec_must_open_one_page(tmp_path):
    missing = OfficialConfig(pft_dir=tmp_path)
    assert "npm ci --prefix vendor/pft" in runner_problem(missing)
    got = run_pft([PftApp("a", "Counter.spec.js", SPEC, "<p>")], RuntimeConfig(), missing)
    assert got["a"].problem == runner_problem(missing) and app_score(got["a"])[0] is None
    assert page_path(SPEC) == "../pages/Counter.html"
    with pytest.raises(ValueError, match="opens no page"):
        page_path("test('x', async ({ page }) => { await page.goto('http://example.com'); });")


@needs_runner
def test_a_run_past_its_limit_costs_its_apps_their_scores_not_a_verdict():
    got = run_pft([PftApp("a", "Counter.spec.js", SPEC, (FIX / "counter.html").read_text())], RuntimeConfig(),
                  CFG.model_copy(update={"pft_run_timeout_s": 0.5}))
    assert app_score(got["a"]) == (None, [], "the Playwright Test run passed evaluation.official.pft_run_timeout_s=0.5 s")


def test_a_task_without_a_usable_spec_gets_no_score_and_says_why(tmp_path):
    from tasks.evaluation.official import OfficialInputs, official_columns

    bench = {"ext-A": {"format": "interactscience", "external_id": "A", "official_tests": None,
                       "official_tests_name": None},
             "ext-B": {"format": "interactscience", "external_id": "B", "official_tests_name": "B.spec.js",
                       "official_tests": "test('x', async ({ page }) => { await page.goto('about:blank'); });"}}
    rows = [{"query_id": q, "response": "```html\n<p>hi</p>\n```"} for q in bench]
    inputs = OfficialInputs(bench, {}, {}, CFG, RuntimeConfig(), None, tmp_path)
    a, b = official_columns(rows, [None, None], inputs)
    assert a["official_score"] is None and "no Playwright spec was ingested for A" in a["official_note"]
    assert b["official_score"] is None and b["official_note"].startswith("B.spec.js: the spec opens no page")
    assert a["official_metric"] == b["official_metric"] == "pft_pass_rate"
