"""kill -9 during stage 4 (rubric_candidates), then re-run: finishes with no lost or duplicated items."""
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc

from tasks.llm.offline import OfflineProvider
from tasks.stages.store import StageStore
from tests.fixtures.kill import kill_after_parts
from tests.fixtures.rubrics.support import offline_items, publish_queries

REPO = Path(__file__).resolve().parent.parent
N, CHUNK = 200, 4  # 50 parts of stage four: the kill lands after 5 of them, well before the last


def _texts() -> dict[str, str]:
    from tasks.queries.synthesize import sample_personas, synthesize_chunk

    t = synthesize_chunk(list(range(N)), 17, sample_personas(40, 17), 2, 4, OfflineProvider(), 1)
    return dict(zip(t.column("query_id").to_pylist(), t.column("text").to_pylist()))


def _cmd() -> list[str]:
    # what is proven here is the resume of stage four; the checks' browser dry run (3,000 checks) is not
    return [sys.executable, "-m", "flows.build_rubrics", "--set", f"rubrics.chunk_size={CHUNK}",
            "--set", "rubrics.check_dry_run=false"]


def test_kill_minus_nine_in_stage_four_then_resume(tmp_path, prefect_harness):
    from prefect.settings import PREFECT_API_URL

    data = tmp_path / "data"
    store = StageStore(data)
    texts = _texts()
    publish_queries(store, texts)
    # both runs report to the session's test server: each would otherwise start (and wait for) its own
    # ephemeral Prefect server, which is not what is proven here
    env = dict(os.environ, RUBRICRL_DATA_DIR=str(data), PREFECT_HOME=str(tmp_path / "prefect"),
               PREFECT_API_URL=PREFECT_API_URL.value())
    written = kill_after_parts(_cmd(), REPO, env, data / "stages" / "rubric_candidates", 5, 400)
    assert 5 <= written < N // CHUNK
    assert store.manifest("modules") is not None and store.manifest("rubric_candidates") is None

    res = subprocess.run(_cmd(), cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "rubric_candidates: resuming" in res.stdout + res.stderr
    cand = store.read("rubric_candidates")
    keys = [f"{q}/{c}" for q, c in zip(cand.column("query_id").to_pylist(), cand.column("candidate_id").to_pylist())]
    assert len(keys) == len(set(keys))
    assert set(cand.column("query_id").to_pylist()) == set(texts)
    items = store.read("rubric_items")
    ikeys = [f"{q}/{i}" for q, i in zip(items.column("query_id").to_pylist(), items.column("id").to_pylist())]
    assert len(ikeys) == len(set(ikeys)) and set(items.column("query_id").to_pylist()) == set(texts)

    # rows made before the kill and after it equal a clean in-memory computation
    for q in (min(texts), sorted(texts)[N // 2], max(texts)):
        got = items.filter(pc.equal(items.column("query_id"), q)).sort_by("position")
        assert list(zip(*(got.column(c).to_pylist() for c in ("scope", "id", "requirement")))) == offline_items(q, texts[q])
    assert pc.all(pc.equal(cand.column("provider"), "offline")).as_py()
