"""evaluate with three generators in one run (a folder of responses, a broken folder, an API model behind the
fake OpenAI-compatible server) on the held-out queries: one eval_results row per (generator, query, run),
Table-1 columns with tokens, time and spread; the HTML report renders in headless Chromium (tables, the
plot, one app frame per query and generator) and a screenshot of it is kept beside it."""
import os

import pytest

from flows.evaluate import evaluate
from tasks.rubrics import load_tasks
from tasks.queries.split import held_out
from tasks.llm.cache import CallStore
from tasks.stages.store import StageStore
from tasks.sft.teacher import offline_teacher_answer
from fakes.fake_openai import FakeOpenAI
from fakes.policy_data import ANSWER, build_references
from tests.fixtures.report_page import report_page

SETS = ["env.runtime.enabled=false", "evaluation.heldout_percent=40"]


@pytest.fixture(scope="module")
def report(prefect_harness, tmp_path_factory):
    data = tmp_path_factory.mktemp("eval") / "data"
    mp = pytest.MonkeyPatch()
    mp.setenv("RUBRICRL_DATA_DIR", str(data))
    mp.setenv("OPENAI_API_KEY", "test-key")
    build_references(data)
    tasks = [t for t in load_tasks(StageStore(data)) if held_out(t.query_id, 40.0)]
    good, bad = data.parent / "teacher", data.parent / "broken"
    for r in (0, 1):
        (good / f"run-{r}").mkdir(parents=True)
        for t in tasks:
            (good / f"run-{r}" / f"{t.query_id}.txt").write_text(offline_teacher_answer(t))
    bad.mkdir()
    for t in tasks:
        (bad / f"{t.query_id}.txt").write_text("I cannot build that." if t is tasks[0] else ANSWER)
    with FakeOpenAI(reply=lambda body: ANSWER) as api:
        out = evaluate(profile="demo", sets=SETS, runs=2,
                       models=[str(good), str(bad), f"api:openai/local@{api.base_url}/v1"])
        calls = len(api.seen("/v1/chat/completions"))
    mp.undo()
    return data, tasks, out, calls


def test_three_generators_one_row_per_generator_query_run(report):
    data, tasks, out, calls = report
    assert len(tasks) >= 2 and calls == 2 * len(tasks)
    ledger = [r for r in CallStore(data / "llm" / "llm.sqlite").ledger_rows() if r["stage"] == "eval_generations"]
    assert len({r["cache_key"] for r in ledger}) == 2 * len(tasks)  # two runs are two samples, not one cached answer
    rows = StageStore(data).read("eval_results").to_pylist()
    ids = [(r["model"], r["query_id"], r["run"]) for r in rows]
    assert len(ids) == len(set(ids)) == (2 + 1 + 2) * len(tasks)
    api = [r for r in rows if r["model"] == "openai/local"]
    assert {r["model_kind"] for r in api} == {"api"} and all(r["output_tokens"] > 0 for r in api)
    assert all(r["generation_s"] is not None and r["generation_s"] >= 0 for r in api)
    folder = [r for r in rows if r["model"] == "teacher"]
    assert all(r["output_tokens"] is None and r["generation_s"] is None for r in folder)  # not measured: not made up
    assert all(r["category"] and r["category"] != "(none)" for r in rows)
    s = out["summary"]
    assert s["openai/local"]["tokens/output_mean"] > 0 and "tokens/output_mean" not in s["teacher"]
    assert s["teacher"]["spread/pass/overall"] == pytest.approx(0.0)  # the same answers in both runs
    assert any(k.startswith("pass/category=") for k in s["teacher"])
    assert {r["judge_provider"] for r in rows if r["tier"] != "format_invalid"} == {"offline"}  # says it is offline


def test_html_report_renders_in_headless_chromium(report):
    data, tasks, out, _ = report
    html_path = data / "reports" / "eval" / "eval.html"
    assert out["html"] == str(html_path)
    shot = html_path.with_name("eval_report.png")
    with report_page(html_path) as page:
        t1 = page.locator("table.t1 tbody tr")
        assert t1.count() > 10 and page.locator("table.t1 thead th").count() == 1 + 3 + 2  # metric, 3, 2 deltas
        assert "judge: offline" in page.inner_text("body")
        plot_ok = page.eval_on_selector("img.plot", "i => i.complete && i.naturalWidth > 100")
        assert plot_ok
        assert page.locator("table.apps tbody tr").count() == len(tasks)
        assert page.locator("table.apps iframe").count() == 3 * len(tasks) - 1  # broken's first has no app
        assert page.locator("table.apps .noapp").count() == 1
        frame = page.frames[1]
        assert frame.locator("button, canvas").count() >= 1  # the app's first paint is inside the thumbnail
        page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_report_thumbnails_are_the_kept_screenshots(tmp_path):
    """A row with screenshots shows them (thumbnails linking the full PNGs, relative to the report); a row
    without shows its note and the app's first paint; no browser needed to write it."""
    import re
    from pathlib import Path

    from PIL import Image

    from tasks.evaluation.report import THUMB_W, write_report
    from tasks.evaluation.screenshots import FOLDER, thumbnail_uri
    from tasks.evaluation.summary import plot, summarize

    data = tmp_path / "data"
    (data / FOLDER).mkdir(parents=True)
    for name, colour in (("ab-load.png", "red"), ("ab-probe.png", "blue")):
        Image.new("RGB", (1280, 800), colour).save(data / FOLDER / name)
    base = dict(model="m", run=0, difficulty="easy", domain="Games", tier="valid", passed=True, reward=1.0,
                response=ANSWER, judge_provider="offline", top_findings=[])
    rows = [dict(base, query_id="q1", screenshot_load=f"{FOLDER}/ab-load.png", screenshot_probe=f"{FOLDER}/ab-probe.png",
                 screenshot_note=None),
            dict(base, query_id="q2", screenshot_load=None, screenshot_probe=None,
                 screenshot_note="load: the app never reached its screenshot (runtime status load_timeout)")]
    out = write_report(data / "reports" / "eval" / "eval.html", "t", summarize(rows), None, rows,
                       plot(rows, tmp_path / "p.png"), data).read_text()
    srcs = re.findall(r"<img class='shot' alt='[^']*' src='([^']+)'", out)
    assert srcs == [thumbnail_uri(data / FOLDER / "ab-load.png", THUMB_W),
                    thumbnail_uri(data / FOLDER / "ab-probe.png", THUMB_W // 2)]
    hrefs = re.findall(r"<a href='([^']+)'><img class='shot'", out)
    assert [(data / "reports" / "eval" / h).resolve() for h in hrefs] == \
        [(data / FOLDER / n).resolve() for n in ("ab-load.png", "ab-probe.png")]
    assert out.count("<iframe") == 1 and "never reached its screenshot (runtime status load_timeout)" in out
    assert not any(Path(h).is_absolute() for h in hrefs)  # the data directory can move with its report
