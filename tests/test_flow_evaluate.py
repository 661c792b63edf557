"""evaluate end to end: response folders side by side (deltas, runs, tiers, pass), a checkpoint sampled
over N runs, the eval_results stage, markdown + PNG report; bad inputs are clear errors."""
import pyarrow.compute as pc
import pytest

from flows.evaluate import evaluate
from tasks.evaluation.generators import read_response_folder
from tasks.rubrics import load_tasks
from tasks.stages.store import StageStore
from tasks.sft.teacher import offline_teacher_answer
from fakes.policy_data import build_references, trained_policy
from tests.fixtures.report_page import report_page

SETS = ["env.runtime.enabled=false"]


def _folders(data_dir, tmp_path):
    tasks = load_tasks(StageStore(data_dir))[:4]
    good, bad = tmp_path / "teacher", tmp_path / "broken"
    for r in (0, 1):
        for t in tasks:
            (good / f"run-{r}").mkdir(parents=True, exist_ok=True)
            (good / f"run-{r}" / f"{t.query_id}.txt").write_text(offline_teacher_answer(t))
    bad.mkdir()
    for t in tasks:
        (bad / f"{t.query_id}.txt").write_text("I cannot build that." if t is tasks[0] else offline_teacher_answer(t))
    return tasks, good, bad


def test_response_folders_side_by_side(prefect_harness, data_dir, tmp_path):
    build_references(data_dir)
    tasks, good, bad = _folders(data_dir, tmp_path)
    out = evaluate(profile="demo", sets=SETS, models=[str(good), str(bad)])
    s = out["summary"]
    assert set(s) == {"teacher", "broken"} and s["teacher"]["runs"] == 2 and s["broken"]["runs"] == 1
    table = StageStore(data_dir).read("eval_results")
    assert table.num_rows == 2 * 4 + 4
    broken = table.filter(pc.equal(table.column("model"), "broken")).to_pylist()
    first = [r for r in broken if r["query_id"] == tasks[0].query_id][0]
    assert first["tier"] == "format_invalid" and not first["passed"] and first["model_kind"] == "responses"
    assert s["broken"]["tier/format_invalid"] == pytest.approx(25.0)
    # the teacher's apps pass their rubric's executable checks, so it passes where the broken folder cannot
    teacher_pass = s["teacher"]["pass/overall"]
    assert teacher_pass > 0 and s["broken"]["pass/overall"] < teacher_pass
    passed = table.filter(pc.equal(table.column("passed"), True)).to_pylist()
    assert passed and all(r["tier"] == "valid" and r["items_failed"] == 0 for r in passed)
    # no browser, no screenshots: every row says so instead of a path
    assert {(r["screenshot_load"], r["screenshot_probe"], r["screenshot_note"]) for r in table.to_pylist()} == \
        {(None, None, "no browser (env.runtime.enabled=false)")}
    report = (data_dir / "reports" / "eval" / "eval.md").read_text()
    assert "Δ broken − teacher" in report and "pass/overall" in report and "tier/format_invalid" in report
    assert (data_dir / "reports" / "eval" / "eval.png").stat().st_size > 0


def test_checkpoint_over_runs_on_held_out_queries(prefect_harness, data_dir):
    build_references(data_dir)
    ckpt = trained_policy(data_dir)
    out = evaluate(profile="demo", sets=SETS, runs=2)
    assert out["models"] == ["sft/final_model"]
    rows = StageStore(data_dir).read("eval_results").to_pylist()
    assert rows and {r["run"] for r in rows} == {0, 1} and {r["model_kind"] for r in rows} == {"checkpoint"}
    assert {r["model_path"] for r in rows} == {str(ckpt.resolve())}
    assert out["summary"]["sft/final_model"]["runs"] == 2
    again = evaluate(profile="demo", sets=SETS, runs=2)
    assert again["stages"][0]["skipped"]


def test_bad_inputs_are_clear_errors(prefect_harness, data_dir, tmp_path):
    build_references(data_dir)
    with pytest.raises(ValueError, match="is not a directory"):
        evaluate(profile="demo", sets=SETS, models=[str(tmp_path / "nope")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no responses"):
        read_response_folder(tmp_path / "empty")
    (tmp_path / "stray").mkdir()
    (tmp_path / "stray" / "q999999.txt").write_text("x")
    with pytest.raises(ValueError, match="without a rubric reference"):
        evaluate(profile="demo", sets=SETS, models=[str(tmp_path / "stray")])


def _publish_rl_queries(data_dir, tasks) -> None:
    """``rl_queries`` for one GRPO step (select-rl-queries is not what this test is about)."""
    import pyarrow as pa

    schema = pa.schema([("query_id", pa.string()), ("query", pa.string()), ("rubric_json", pa.string())])
    b = StageStore(data_dir).begin("rl_queries", "test", schema)
    b.write_part("all", pa.Table.from_pylist([{"query_id": t.query_id, "query": t.query,
                                                "rubric_json": t.rubric.model_dump_json()} for t in tasks], schema=schema))
    b.publish(provider="offline", config_hash="test", inputs={}, config={}, validation={"success": True})


RL_SETS = ["train.run.steps=1", "train.rollout.queries_per_step=1", "train.rollout.group_size=2",
           "train.deepspeed.micro_batch_size=2",
           "train.rollout.max_new_tokens=16", "env.runtime.enabled=false"]
HELDOUT = 40.0  # two of the reference queries (a stable hash of their ids)
EVAL_SETS = [f"evaluation.heldout_percent={HELDOUT}", "evaluation.max_queries=2"]


@pytest.mark.timeout(900)
def test_sft_rl_and_folder_in_one_run_with_screenshots(prefect_harness, data_dir):
    """The SFT checkpoint (train-sft), the RL checkpoint trained from it (train-rl, one GRPO step) and a folder
    of responses in one evaluate run with the browser on: every row has its screenshots or says why not, and
    the report, opened in headless Chromium, renders its tables, plot and the apps' screenshots as thumbnails
    (a screenshot of the report is kept in the run's report folder)."""
    from flows.train_rl import train_rl
    from tasks.evaluation.screenshots import thumbnail_uri
    from tasks.evaluation.report import THUMB_W
    from tasks.queries.split import held_out
    from tasks.rl.checkpoints import newest_policy

    build_references(data_dir)
    sft = trained_policy(data_dir)
    tasks = load_tasks(StageStore(data_dir))
    _publish_rl_queries(data_dir, tasks[:1])
    train_rl(sets=RL_SETS)
    rl = newest_policy(data_dir)
    assert rl is not None and rl.parent.name.startswith("rl-") and rl != sft
    folder = data_dir.parent / "teacher"
    folder.mkdir()
    evaluated = sorted((t for t in tasks if held_out(t.query_id, HELDOUT)), key=lambda t: t.query_id)[:2]
    for t in evaluated:  # the folder answers the queries the checkpoints get (every file is evaluated)
        (folder / f"{t.query_id}.txt").write_text(offline_teacher_answer(t))
    out = evaluate(profile="demo", sets=EVAL_SETS, runs=1, models=[str(sft), str(rl), str(folder)])
    assert out["models"][0] == "sft/final_model" and out["models"][1].startswith("rl-") and out["models"][2] == "teacher"
    rows = StageStore(data_dir).read("eval_results").to_pylist()
    assert {(r["model"], r["query_id"]) for r in rows} == {(m, t.query_id) for m in out["models"] for t in evaluated}
    for r in rows:  # a path is a kept file; a null one says why
        for m in ("load", "probe"):
            p = r[f"screenshot_{m}"]
            assert (p is None and r["screenshot_note"]) or (data_dir / p).is_file(), (r["eval_id"], m)
    teacher = [r for r in rows if r["model"] == "teacher"]
    assert teacher and all(r["screenshot_load"] and r["screenshot_probe"] for r in teacher)
    html_path = data_dir / "reports" / "eval" / "eval.html"
    shot = html_path.with_name("eval_report.png")
    with report_page(html_path) as page:
        assert page.locator("table.t1 thead th").count() == 1 + 3 + 2  # metric, 3 generators, 2 deltas
        assert page.locator("table.t1 tbody tr").count() > 10
        imgs = page.eval_on_selector_all("img", "xs => xs.map(i => [i.className, i.complete && i.naturalWidth, "
                                                "i.alt, i.getAttribute('src')])")
        assert all(w > 0 for _, w, _, _ in imgs)  # every image renders
        thumbs = [(alt, src) for cls, _, alt, src in imgs if cls == "shot"]
        kept = [r for r in rows if r["run"] == 0]
        want = [thumbnail_uri(data_dir / r[f"screenshot_{m}"], w) for r in kept
                for m, w in (("load", THUMB_W), ("probe", THUMB_W // 2)) if r[f"screenshot_{m}"]]
        assert sorted(src for _, src in thumbs) == sorted(want)  # the thumbnails are the apps' screenshots
        page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
