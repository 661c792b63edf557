"""The full chain: train-rl on the demo profile, offline provider, 2 GRPO steps on a tiny model whose
rewards and token markers come from the real environment (score-step flow) and attribution; every
step stage is published and queryable."""
import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from flows.build_rubrics import build_rubrics
from flows.synthesize_queries import synthesize_queries
from flows.train_rl import train_rl
from schemas.config import load_config
from schemas.layout import RUN_CONFIG
from tasks.env.publish import env_fingerprint
from tasks.rubrics import load_tasks
from tasks.stages.store import StageStore

SETS = ["synth.n_queries=12", "synth.chunk_size=12", "train.run.steps=2", "train.rollout.queries_per_step=2",
        "train.rollout.group_size=2", "train.rollout.max_new_tokens=16", "env.runtime.enabled=false"]


def _publish_rl_queries(store: StageStore) -> None:
    tasks = load_tasks(store)[:4]
    schema = pa.schema([("query_id", pa.string()), ("query", pa.string()), ("rubric_json", pa.string())])
    b = store.begin("rl_queries", "test", schema)
    b.write_part("all", pa.Table.from_pylist([{"query_id": t.query_id, "query": t.query,
                                                "rubric_json": t.rubric.model_dump_json()} for t in tasks], schema=schema))
    b.publish(provider="offline", config_hash="test", inputs={}, config={}, validation={"success": True})


@pytest.mark.timeout(900)
def test_train_rl_chain(prefect_harness, data_dir):
    synthesize_queries(sets=SETS)
    build_rubrics(sets=SETS)
    store = StageStore(data_dir)
    _publish_rl_queries(store)
    out = train_rl(sets=SETS)
    assert len(out["history"]) == 2
    for stage in ("rollouts", "judgments", "rewards", "check_results", "attributions", "train_steps"):
        assert store.manifest(stage) is not None, stage
    con = duckdb.connect(str(data_dir / "catalog.duckdb"), read_only=True)
    n, steps = con.execute("select count(*), count(distinct step) from rollouts").fetchall()[0]
    assert (n, steps) == (2 * 2 * 2, 2)
    # every rollout was scored by the environment: one reward row and one attribution row each
    assert con.execute("select count(*) from rewards").fetchall() == [(8,)]
    assert con.execute("select count(*) from attributions").fetchall() == [(8,)]
    assert con.execute("select count(*) from judgments where provider not in ('offline', 'none')").fetchall() == [(0,)]
    # the steps' checks are published as every flow that scores publishes them: a row per response and checked
    # item, under the one fingerprint of the run's env section that every rewards row carries
    per = {t.query_id: len(t.rubric.checks()) for t in load_tasks(store)}
    scored = con.execute("select rollout_id, query_id from rewards").fetchall()
    checked = con.execute("select rollout_id, query_id, count(*) from check_results group by 1, 2").fetchall()
    assert sum(per[q] for _r, q in scored) > 0
    assert {(r, q): n for r, q, n in checked} == {(r, q): per[q] for r, q in scored if per[q]}
    fp = env_fingerprint(load_config(file=Path(out["run_dir"]) / RUN_CONFIG).env)
    assert {h for (h,) in con.execute("select distinct reward_config_hash from rewards").fetchall()} == {fp}
    assert {store.manifest(s).config_hash for s in ("judgments", "rewards", "check_results")} == {fp}
    # weights align with the generated ids of each response, and rewards match the environment's
    rows = con.execute("select r.response_ids, r.token_weights, r.reward, w.reward, w.tier from rollouts r "
                       "join rewards w on w.rollout_id = printf('s%05d-r%d-%04d', r.step, r.rank, "
                       "(r.group_id % 2) * 2 + r.sample)").fetchall()
    assert len(rows) == 8
    for ids, weights, r_train, r_env, tier in rows:
        assert len(ids) == len(weights)
        assert r_train == r_env and tier in ("format_invalid", "source_invalid", "runtime_invalid", "valid")
    metrics = {m for (m,) in con.execute("select distinct metric from train_steps").fetchall()}
    assert {"reward/mean", "loss/policy", "rollout/zero_variance_group_frac", "reward/pass_rate"} <= metrics
    # the step metrics are what the rollouts say: mean reward, and the share of groups with one reward for all
    got = dict(con.execute("select step, value from train_steps where metric = 'reward/mean'").fetchall())
    want = dict(con.execute("select step, avg(reward) from rollouts group by step").fetchall())
    assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k]) for k in got)
    got = dict(con.execute("select step, value from train_steps where metric = 'rollout/zero_variance_group_frac'")
               .fetchall())
    want = dict(con.execute("select step, avg((count(distinct reward) = 1)::int) over (partition by step) from rollouts "
                            "group by step, group_id").fetchall())
    assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k]) for k in got)
    # lineage: every row derived from the judgments names the providers of its step's judgments (offline, or
    # none for responses no judge saw)
    want = {p for (p,) in con.execute("select string_agg(distinct provider, ',' order by provider) from judgments "
                                      "group by substr(rollout_id, 1, 6)").fetchall()}
    assert want and want <= {"offline", "none", "none,offline"}
    for stage in ("rollouts", "attributions", "train_steps"):
        assert {p for (p,) in con.execute(f"select distinct judge_provider from {stage}").fetchall()} == want, stage
    con.close()
    assert (data_dir / "runs" / "train-rl").exists()
    # the run's configuration names the provider the flow resolved (no key: offline), so no scorer process (a Ray
    # worker with a key in its environment, say) resolves `auto` again
    run_cfg = json.loads((Path(out["run_dir"]) / RUN_CONFIG).read_text())
    assert run_cfg["llm"]["provider"] == "offline"
