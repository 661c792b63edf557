"""evaluate end to end: response folders side by side (deltas, runs, tiers, pass), a checkpoint sampled
over N runs, the eval_results stage, markdown + PNG report; bad inputs are clear errors."""
import pyarrow.compute as pc
import pytest

from flows.evaluate import evaluate, read_response_folder
from tasks.rubrics import load_tasks
from tasks.stages.store import StageStore
from tasks.sft.teacher import offline_teacher_answer
from tests.fixtures.policy_data import build_references, trained_policy

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
