"""select-rl-queries end to end on the offline judge: an SFT-trained tiny policy is probed (real
sampling), its responses scored by the environment, and the selection keeps only discriminative
queries, records the policy checkpoint, and reports the diff against the previous selection."""
import asyncio
import json

import duckdb

from flows.select_rl_queries import select_rl_queries
from schemas.config import load_config
from tasks.env.publish import env_fingerprint
from tasks.rubrics import load_tasks
from tasks.queries.split import held_out
from tasks.stages.store import StageStore
from fakes.policy_data import build_references, trained_policy

SETS = ["selection.target_size=6", "selection.probe_samples=4", "selection.max_candidates=12",
        "selection.probe_max_new_tokens=80", "selection.probe_max_prompt_tokens=768", "selection.probe_chunk_size=6",
        "env.runtime.enabled=false"]


def test_selection_keeps_discriminative_queries_and_records_the_policy(prefect_harness, data_dir):
    from prefect.client.orchestration import get_client

    build_references(data_dir)
    ckpt = trained_policy(data_dir)
    out = select_rl_queries(profile="demo", sets=SETS)
    assert out["policy"] == str(ckpt.resolve()) and out["policy_kind"] == "checkpoint"
    store = StageStore(data_dir)
    con = duckdb.connect(str(data_dir / "catalog.duckdb"), read_only=True)
    rewards = dict(con.execute("select query_id, list(reward order by rollout_id) from probe_rewards group by 1").fetchall())
    assert len(rewards) == 12 and all(len(v) == 4 for v in rewards.values())
    assert not any(held_out(q, 10) for q in rewards)  # the evaluation split is never a candidate
    assert con.execute("select count(distinct policy_checkpoint) from probe_rollouts").fetchone()[0] == 1
    rows = store.read("rl_queries").to_pylist()
    judged_by = dict(con.execute("select query_id, string_agg(distinct provider, ',' order by provider) "
                                 "from probe_rewards group by 1").fetchall())
    # the probes' checks are published as every flow that scores publishes them: a row per probe and checked
    # item, under the one fingerprint of the env section that every rewards row carries
    per = {t.query_id: len(t.rubric.checks()) for t in load_tasks(store)}
    probes = con.execute("select rollout_id, query_id from probe_rollouts").fetchall()
    checked = con.execute("select rollout_id, query_id, count(*) from probe_check_results group by 1, 2").fetchall()
    assert sum(per[q] for _r, q in probes) > 0
    assert {(r, q): n for r, q, n in checked} == {(r, q): per[q] for r, q in probes if per[q]}
    fp = env_fingerprint(load_config("demo", sets=SETS, environ={}).env)
    assert {h for (h,) in con.execute("select distinct reward_config_hash from probe_rewards").fetchall()} == {fp}
    assert {store.manifest(s).config_hash for s in ("probe_judgments", "probe_rewards", "probe_check_results")} == {fp}
    con.close()
    # lineage: who judged the probes behind the scores (offline; none for probes no judge saw)
    assert rows and all(r["judge_provider"] == judged_by[r["query_id"]] for r in rows)
    assert {r["judge_provider"] for r in rows} <= {"offline", "none,offline"}
    flat = {q for q, v in rewards.items() if len({x for x in v if x is not None}) < 2}
    spread = set(rewards) - flat
    chosen = {r["query_id"] for r in rows}
    assert spread and flat, rewards  # the trained policy gives both kinds of queries
    assert chosen and not chosen & flat and chosen <= spread
    assert len(chosen) == min(6, len(spread))
    for r in rows:
        assert r["policy_checkpoint"] == str(ckpt.resolve()) and r["policy_kind"] == "checkpoint"
        assert r["distinct_levels"] >= 2 and 0 < r["coverage_factor"] <= 1 and r["final_score"] > 0
        assert "reward levels" in r["reason"] and json.loads(r["rubric_json"])["initial_state"] is not None
        assert r["probe_rewards"] == rewards[r["query_id"]]
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert out["diff"] == {"added": sorted(chosen), "kept": [], "dropped": []}

    async def latest():
        async with get_client() as c:
            return await c.read_latest_artifacts()

    art = [a for a in asyncio.run(latest()) if a.key == "select-rl-queries-summary"][0].data
    assert "| rl_queries |" in art and "| probe_rollouts |" in art and f"{len(chosen)} added" in art

    # The next night with a smaller target: the diff says what was kept and what was dropped.
    again = select_rl_queries(profile="demo", sets=[*SETS, "selection.target_size=2"])
    assert again["stages"][0]["skipped"] and again["stages"][2]["skipped"]  # same policy: probes re-used
    diff = again["diff"]
    assert len(diff["kept"]) == min(2, len(chosen)) and not diff["added"]
    assert set(diff["kept"]) | set(diff["dropped"]) == chosen


def test_random_policy_is_labelled_and_equal_rewards_select_nothing(prefect_harness, data_dir):
    build_references(data_dir)
    out = select_rl_queries(profile="demo", sets=[*SETS, "selection.probe_max_new_tokens=16"])
    assert out["policy_kind"] == "tiny-random" and out["all_equal"] == out["candidates"] == 12
    store = StageStore(data_dir)
    assert store.manifest("rl_queries").row_count == 0
    kinds = set(store.read("probe_rollouts", columns=["policy_kind"]).column("policy_kind").to_pylist())
    assert kinds == {"tiny-random"}


def test_run_stops_after_an_empty_selection_naming_the_cause_and_printing_what_completed(prefect_harness, data_dir):
    """`rubricrl run` as a user types it: a policy that writes no app (the tiny random model, 8 new tokens) gives
    equal probe rewards, so the run stops after select-rl-queries with rc 3, the cause and the settings that
    help, the summary of what ran, and no traceback; train-rl never starts."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from rubricrl.cli import EMPTY_SELECTION_RC

    build_references(data_dir)
    sets = ["selection.max_candidates=3", "selection.probe_samples=2", "selection.probe_max_new_tokens=8",
            "env.runtime.enabled=false"]
    from prefect.settings import PREFECT_API_URL

    api = PREFECT_API_URL.value()  # the harness's server: the run needs no ephemeral one of its own
    p = subprocess.run([str(Path(sys.executable).parent / "rubricrl"), "run", "--only", "select-rl-queries", "--only",
                        "train-rl", *[a for s in sets for a in ("--set", s)]], capture_output=True, text=True,
                       env={**os.environ, "RUBRICRL_DATA_DIR": str(data_dir), **({"PREFECT_API_URL": api} if api else {})},
                       timeout=400)
    assert p.returncode == EMPTY_SELECTION_RC, p.stdout[-3000:] + p.stderr[-3000:]
    assert "found no discriminative query: 3 of 3 candidates have equal probe rewards" in p.stderr
    assert "train-rl did not run" in p.stderr and "selection.probe_max_new_tokens" in p.stderr
    assert "== train-rl" not in p.stdout and "Traceback" not in p.stdout + p.stderr
    assert "select-rl-queries: 0 rl_queries selected" in p.stdout
    assert "WARNING degenerate output: select-rl-queries: rl_queries is empty" in p.stdout
