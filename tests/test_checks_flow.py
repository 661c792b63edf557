"""check_results end to end: score-rollouts on the offline provider with a rubric whose items carry checks.
The check results reach the offline judge (a failed check is a major finding on its item, anchored at
the code), the ``check_results`` stage and its DuckDB view, joinable to rewards."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from schemas.config.env import RuntimeConfig
from tasks.stages.store import StageStore, fingerprint

FIX = Path(__file__).parent / "fixtures" / "env"
COUNT = {"text": "^\\d+$"}
CHECKS = {
    "D1": {"steps": [{"do": "remember", "target": COUNT, "name": "before"},
                     {"do": "click", "target": {"role": "button", "name": "increment"}},
                     {"expect": "number_relation", "left": {"read": COUNT}, "op": "eq",
                      "right": {"op": "add", "args": [{"ref": "before"}, {"const": 1}]}}]},
    "D2": {"steps": [{"do": "click", "target": {"role": "button", "name": "increment"}},
                     {"do": "click", "target": {"role": "button", "name": "reset"}},
                     {"expect": "text", "target": COUNT, "matches": "^0$"}]},
}


def _publish(store: StageStore, stage: str, table: pa.Table) -> None:
    build = store.begin(stage, fingerprint(stage=stage, rows=table.num_rows), table.schema)
    build.write_part("all", table)
    build.publish(provider="test", config_hash="test", inputs={}, config={}, validation={})


def test_score_rollouts_publishes_check_results_and_the_judge_uses_them(prefect_harness, data_dir):
    if not Path(RuntimeConfig().executable_path).exists():
        pytest.skip("needs Debian's chromium-headless-shell: scripts/setup-system.sh")
    from flows.score_rollouts import score_rollouts

    task = json.loads((FIX / "task_counter.json").read_text())
    for it in task["rubric"]["dynamic"]:
        it["check"] = CHECKS[it["id"]]
    clean = (FIX / "clean.txt").read_text()
    broken = clean.replace("() => { count = 0; render(); }", "() => { render(); }")  # Reset forgets the count
    assert broken != clean
    store = StageStore(data_dir)
    _publish(store, "rl_queries", pa.table({"query_id": [task["query_id"]], "query": [task["query"]],
                                            "rubric_json": [json.dumps(task["rubric"])]}))
    _publish(store, "rollouts", pa.table({"rollout_id": ["ok", "bad", "none"], "query_id": [task["query_id"]] * 3,
                                          "response": [clean, broken, "no app here"]}))
    env = {"workers": 1}
    out = score_rollouts(profile="demo", chunk_size=3, env=env)
    assert out["missing_rewards"] == 0
    res = {(r["rollout_id"], r["item_id"]): r for r in store.read("check_results").to_pylist()}
    assert len(res) == 6  # one row per response and checked item
    assert res[("ok", "D1")]["status"] == res[("ok", "D2")]["status"] == res[("bad", "D1")]["status"] == "passed"
    bad = res[("bad", "D2")]
    assert (bad["status"], bad["step"], bad["step_kind"], bad["scope"]) == ("failed", 2, "text", "dynamic")
    assert bad["observed"] == "1"
    assert res[("none", "D1")]["status"] == "inconclusive" and "no HTML" in res[("none", "D1")]["reason"]
    judg = {r["rollout_id"]: r for r in store.read("judgments").to_pylist()}
    rubric = {(f["item_id"], f["severity"]) for f in judg["bad"]["findings"] if f["layer"] == "rubric_alignment"}
    assert ("D2", "major") in rubric and judg["bad"]["gate_rubric_alignment"] is False
    ok_items = {f["item_id"] for f in judg["ok"]["findings"] if f["layer"] == "rubric_alignment"}
    assert not ok_items & {"D1", "D2"}  # passed checks: met items
    con = duckdb.connect(str(data_dir / "catalog.duckdb"), read_only=True)
    rows = con.execute("SELECT c.rollout_id, c.item_id, w.tier, w.reward FROM check_results c "
                       "JOIN rewards w USING (rollout_id) WHERE c.status = 'failed'").fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [("bad", "D2", "valid")]
    rewards = {r["rollout_id"]: r["reward"] for r in store.read("rewards").to_pylist()}
    assert rewards["bad"] < rewards["ok"]
