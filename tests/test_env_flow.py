"""The score-rollouts flow end to end on the offline provider: threads (with the browser) and local Ray."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from schemas.config.env import RuntimeConfig
from tasks.stages.store import StageStore
from tests.fixtures.env_inputs import publish_rollouts

NAMES = ["clean.txt", "throws.txt", "syntax_error.txt", "no_html.txt", "network.txt"]
GAP = "cdn_gap.txt"  # loads a p5 the CDN mirror does not pin, then uses it


def _inputs(data_dir: Path) -> StageStore:
    return publish_rollouts(data_dir, NAMES)


def test_score_rollouts_threads_with_browser(prefect_harness, data_dir):
    if not Path(RuntimeConfig().executable_path).exists():
        pytest.skip("needs Debian's chromium-headless-shell: scripts/setup-system.sh")
    from flows.score_rollouts import score_rollouts

    store = publish_rollouts(data_dir, [*NAMES, GAP])
    env = {"workers": 2}
    out = score_rollouts(profile="demo", chunk_size=2, env=env)
    # the environment gap is the one missing reward, counted in the rewards stage's summary
    assert out["missing_rewards"] == 1
    (summary,) = [s for s in out["stages"] if s["stage"] == "rewards"]
    assert summary["missing_rewards"] == 1 and summary["environment_gaps"] == 1
    rewards = {r["rollout_id"]: r for r in store.read("rewards").to_pylist()}
    assert [rewards[f"r{i}"]["tier"] for i in range(6)] == ["valid", "runtime_invalid", "source_invalid",
                                                             "format_invalid", "valid", "missing"]
    assert [rewards[f"r{i}"]["tier_cause"] for i in range(6)] == [None, "app_error", None, None, None,
                                                                   "environment_gap"]
    assert all(r["provider"] in ("offline", "none") for r in rewards.values())
    judg = {r["rollout_id"]: r for r in store.read("judgments").to_pylist()}
    assert judg["r1"]["runtime_status"] == "page_error" and judg["r4"]["n_blocked_requests"] >= 3
    # Any reward can be explained in DuckDB.
    con = duckdb.connect(str(data_dir / "catalog.duckdb"), read_only=True)
    rows = con.execute("SELECT r.rollout_id, f.layer, f.severity FROM rewards r JOIN judgments j USING (rollout_id), "
                       "UNNEST(j.findings) AS t(f) WHERE r.tier = 'source_invalid'").fetchall()
    assert ("r2", "static_check", "critical") in rows
    gaps = con.execute("SELECT rollout_id, u FROM judgments, UNNEST(environment_gaps) AS t(u)").fetchall()
    assert gaps == [("r5", "https://cdnjs.cloudflare.com/ajax/libs/p5.js/1.10.0/p5.min.js")]
    again = score_rollouts(profile="demo", chunk_size=2, env=env)  # re-running a finished stage does no work
    assert all(s["skipped"] for s in again["stages"])


def test_score_rollouts_on_local_ray(prefect_harness, data_dir):
    pytest.importorskip("prefect_ray", reason="pip install prefect-ray==0.6.0")
    from flows.score_rollouts import score_rollouts

    store = _inputs(data_dir)
    env = {"task_runner": "ray", "workers": 2, "runtime": {"enabled": False}}
    out = score_rollouts(profile="demo", chunk_size=2, env=env)
    assert out["missing_rewards"] == 0
    tiers = [r["tier"] for r in sorted(store.read("rewards").to_pylist(), key=lambda r: r["rollout_id"])]
    assert tiers == ["valid", "valid", "source_invalid", "format_invalid", "valid"]  # no browser: judge decides runtime
