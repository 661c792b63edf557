"""A real run killed with SIGKILL half way resumes: no lost and no duplicated rows."""
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from tasks.llm.offline import OfflineProvider
from tasks.stages.store import StageStore
from tasks.queries.synthesize import sample_personas, synthesize_chunk
from tests.fixtures.kill import kill_after_parts

REPO = Path(__file__).resolve().parent.parent
N, CHUNK = 3000, 50  # 63 parts, about 40 ms each here: the kill lands after 6, 2 s before the last
OVERSAMPLE = 0.05
CANDIDATES = int(N * (1 + OVERSAMPLE))  # what synthesize-queries makes before deduplication
SETS = [f"synth.n_queries={N}", f"synth.chunk_size={CHUNK}", "synth.n_personas=40", f"synth.oversample={OVERSAMPLE}"]


def _cmd():
    args = [sys.executable, "-m", "rubricrl.cli", "run", "--only", "synthesize-queries"]
    for s in SETS:
        args += ["--set", s]
    return args


def test_kill_minus_nine_then_resume(tmp_path, prefect_harness):
    from prefect.settings import PREFECT_API_URL

    data = tmp_path / "data"
    # both runs report to the session's test server: each would otherwise start (and wait for) its own
    # ephemeral Prefect server, which is not what is proven here
    env = dict(os.environ, RUBRICRL_DATA_DIR=str(data), PREFECT_HOME=str(tmp_path / "prefect"),
               PREFECT_API_URL=PREFECT_API_URL.value())
    written = kill_after_parts(_cmd(), REPO, env, data / "stages" / "query_candidates", 6, 240)
    n_chunks = -(-CANDIDATES // CHUNK)
    assert 6 <= written < n_chunks
    store = StageStore(data)
    assert store.manifest("query_candidates") is None  # nothing half-built was published

    res = subprocess.run(_cmd(), cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "resuming" in res.stdout + res.stderr
    cand = store.read("query_candidates")
    ids = cand.column("query_id").to_pylist()
    assert len(ids) == len(set(ids)) == CANDIDATES
    assert sorted(ids) == [f"q{i:06d}" for i in range(CANDIDATES)]
    # rows made before the kill equal rows made after it: same as a clean computation
    picks = [0, CANDIDATES // 2, CANDIDATES - 1]
    sample = sorted(cand.filter(pc.is_in(cand.column("candidate_index"), value_set=pa.array(picks))).to_pylist(),
                    key=lambda r: r["candidate_index"])
    clean = synthesize_chunk(picks, 17, sample_personas(40, 17), 2, 4, OfflineProvider(), 1).to_pylist()
    assert sample == clean
    assert store.manifest("queries").row_count == N
