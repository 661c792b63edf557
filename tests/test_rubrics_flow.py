"""build-rubrics end to end on the offline provider under a real (temporary) Prefect server:
artifact with counts per stage and the coverage summary; re-run does no work; new queries only are
processed; a changed prompt re-runs that stage and those after it only; force rebuilds."""
import asyncio
import shutil

import duckdb

from flows.build_rubrics import build_rubrics
from tasks.llm.offline import OfflineProvider
from tasks.llm.prompts import PROMPT_DIR, load_prompt
from tasks.stages.store import StageStore
from tasks.queries.synthesize import sample_personas, synthesize_chunk
from tests.fixtures.rubrics.support import publish_queries

# What is proven here is the stage bookkeeping (artifact, re-run, incremental, changed prompt, force); the
# checks' browser dry run is proven in test_checks_rubrics.py and through this flow in test_cli_readme.py.
NO_DRY_RUN = "rubrics.check_dry_run=false"
STAGES = ["expansions", "requirements", "modules", "rubric_candidates", "rubric_references", "rubric_checks",
          "rubric_items"]


def _texts(n: int, start: int = 0) -> dict[str, str]:
    t = synthesize_chunk(list(range(start, start + n)), 17, sample_personas(10, 17), 2, 4, OfflineProvider(), 1)
    return dict(zip(t.column("query_id").to_pylist(), t.column("text").to_pylist()))


def _by_stage(out):
    return {s["stage"]: s for s in out["stages"]}


def test_flow_artifact_rerun_and_incremental(prefect_harness, data_dir):
    from prefect.client.orchestration import get_client

    store = StageStore(data_dir)
    publish_queries(store, _texts(12))
    sets = ["rubrics.chunk_size=5", NO_DRY_RUN]
    out = build_rubrics(profile="demo", sets=sets)
    st = _by_stage(out)
    assert list(st) == STAGES and all(not s["skipped"] for s in st.values())
    assert st["expansions"]["computed"] == 12 and st["rubric_references"]["queries_ok"] == 12
    cov = out["coverage"]
    assert cov["references"] == 12 and cov["uncovered_must_cover"] == 0 and cov["items"] > 12

    async def latest():
        async with get_client() as c:
            return await c.read_latest_artifacts()

    art = [a for a in asyncio.run(latest()) if a.key == "build-rubrics-summary"][0].data
    for stage in STAGES:
        assert f"| {stage} |" in art
    assert "## Coverage summary" in art and "| uncovered_must_cover | 0 |" in art and "| references | 12 |" in art

    con = duckdb.connect(str(data_dir / "catalog.duckdb"), read_only=True)
    n_items = con.execute("select count(*) from rubric_items").fetchone()[0]
    assert con.execute("select count(*) from rubric_items where provider <> 'offline'").fetchone()[0] == 0
    con.close()
    assert n_items == cov["items"]

    again = _by_stage(build_rubrics(profile="demo", sets=sets))
    assert all(s["skipped"] for s in again.values())

    # nightly: three new queries; only they are sent to the (offline) model, the rest are re-used
    publish_queries(store, {**_texts(12), **_texts(3, start=100)})
    inc = _by_stage(build_rubrics(profile="demo", sets=sets))
    for stage in STAGES[:5]:
        assert (inc[stage]["computed"], inc[stage]["reused"]) == (3, 12), stage
    assert store.manifest("rubric_references").row_count == 15

    forced = _by_stage(build_rubrics(profile="demo", sets=sets, force=True))
    assert forced["expansions"]["computed"] == 15 and forced["expansions"]["reused"] == 0


def test_changed_prompt_reruns_that_stage_and_later_only(prefect_harness, data_dir, tmp_path):
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    for f in PROMPT_DIR.glob("rubric_*.md"):
        shutil.copy(f, prompts / f.name)
    store = StageStore(data_dir)
    publish_queries(store, _texts(6))
    sets = ["rubrics.chunk_size=4", f"rubrics.prompt_dir={prompts}", NO_DRY_RUN]
    first = _by_stage(build_rubrics(profile="demo", sets=sets))
    versions = {s: store.manifest(s).version for s in STAGES}

    p = prompts / "rubric_modules.md"
    p.write_text(p.read_text().replace("version: 1", "version: 2", 1))
    load_prompt.cache_clear()
    second = _by_stage(build_rubrics(profile="demo", sets=sets))
    assert second["expansions"]["skipped"] and second["requirements"]["skipped"]
    for stage in ("modules", "rubric_candidates", "rubric_references"):
        assert not second[stage]["skipped"] and second[stage]["computed"] == 6, stage
    assert store.manifest("expansions").version == versions["expansions"]
    assert store.manifest("modules").version != versions["modules"]
    assert set(store.read("modules").column("prompt_version").to_pylist()) == {"2"}
    assert first["modules"]["computed"] == 6
