"""synthesize-queries end to end on the offline provider, under a real (temporary) Prefect server."""
import json

import duckdb
import pytest

from flows.synthesize_queries import synthesize_queries
from tasks.stages.store import StageStore

SETS = ["synth.n_queries=120", "synth.n_personas=20", "synth.chunk_size=40"]


def test_flow_publishes_queries_and_rerun_does_no_work(prefect_harness, data_dir):
    out = synthesize_queries(profile="demo", sets=SETS)
    store = StageStore(data_dir)
    man = store.manifest("queries")
    assert man is not None and man.row_count == 120 and man.provider == "offline"
    con = duckdb.connect(str(data_dir / "catalog.duckdb"), read_only=True)
    assert con.execute("select count(*) from queries").fetchall() == [(120,)]
    assert con.execute("select count(*) from queries where provider <> 'offline'").fetchall() == [(0,)]
    con.close()
    assert (data_dir / "reports" / "queries_coverage.png").stat().st_size > 1000
    assert all(not s["skipped"] for s in out["stages"])

    again = synthesize_queries(profile="demo", sets=SETS)
    assert all(s["skipped"] for s in again["stages"])
    assert store.manifest("queries").version == man.version


def test_flow_publishes_a_summary_artifact(prefect_harness, data_dir):
    from prefect.client.orchestration import get_client

    synthesize_queries(profile="demo", sets=SETS)

    async def latest():
        async with get_client() as c:
            return await c.read_latest_artifacts()

    import asyncio

    arts = [a for a in asyncio.run(latest()) if a.key == "synthesize-queries-summary"]
    assert arts and "query_candidates" in arts[0].data and "near_duplicates_removed" in arts[0].data


def test_ingest_flow_keeps_good_lines(prefect_harness, data_dir, tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text(json.dumps({"id": 1, "instruction": "Build a pomodoro timer."}) + "\n{oops\n")
    out = synthesize_queries(profile="demo", sets=[f"synth.ingest_path={f}"])
    assert out["ingest_errors"] == ["line 2: not valid JSON (Expecting property name enclosed in double quotes at column 2)"]
    assert StageStore(data_dir).read("queries").column("query_id").to_pylist() == ["ext-1"]
