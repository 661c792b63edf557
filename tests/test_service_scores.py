"""``service_scores``: with ``service.keep_scores`` every answered item is a row of a validated stage, published
through ``run_stage`` while serving and at shutdown, queryable in DuckDB; off by default, nothing is kept."""
from __future__ import annotations

import json
import time

import httpx

from rubricrl.service.engine import ScoreEngine
from tasks.stages.catalog import query
from tasks.stages.store import StageStore
from tests.fixtures.service import FIX, fixture_tasks, project, publish_tasks, running_service

RESPONSES = [(FIX / n).read_text() for n in ("clean.txt", "no_html.txt", "syntax_error.txt")]


def test_kept_scores_are_a_stage_queryable_in_duckdb(tmp_path):
    data = tmp_path / "data"
    publish_tasks(data, fixture_tasks())
    cfg = project(data, "llm.provider=offline", "env.runtime.enabled=false", "service.keep_scores=true",
                  "service.publish_every_s=0.5")
    items = [{"query_id": "q-counter", "response": r} for r in RESPONSES]
    with running_service(ScoreEngine(cfg)) as s:
        answers = httpx.post(f"{s.url}/score", json={"items": items}, timeout=120).json()["results"]
        deadline = time.monotonic() + 30
        while StageStore(data).manifest("service_scores") is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert StageStore(data).manifest("service_scores").row_count == 3  # published while serving
        with httpx.stream("POST", f"{s.url}/score/stream", json={"items": items[:2]}, timeout=120) as r:
            stream_id = r.headers["x-rubricrl-request-id"]
            assert len([line for line in r.iter_lines() if line]) == 2
        rlhf = {"query": ["Q\n" + RESPONSES[0]], "prompts": ["Q\n"], "labels": ["q-counter"]}
        assert httpx.post(f"{s.url}/openrlhf/get_reward", json=rlhf, timeout=120).status_code == 200
    store = StageStore(data)  # the service stopped: the last rows are published
    man = store.manifest("service_scores")
    assert man.row_count == 6 and man.provider == "offline" and man.validation["success"]
    rows = store.read("service_scores").to_pylist()
    first = sorted((r for r in rows if r["route"] == "score"), key=lambda r: r["item_index"])
    assert [r["reward"] for r in first] == [a["reward"] for a in answers]
    assert [json.loads(r["result_json"]) for r in first] == answers
    assert [r["response"] for r in first] == RESPONSES
    assert sorted(r["route"] for r in rows) == ["openrlhf", "score", "score", "score", "score/stream", "score/stream"]
    assert {r["request_id"] for r in rows if r["route"] == "score/stream"} == {stream_id}
    cols, got = query(store, "SELECT tier, count(*) AS n, any_value(provider) FROM service_scores GROUP BY 1 ORDER BY 1")
    assert cols == ["tier", "n", "any_value(provider)"]
    assert {t: n for t, n, _ in got} == {"valid": 3, "format_invalid": 2, "source_invalid": 1}
    assert {t: p for t, _, p in got} == {"valid": "offline", "format_invalid": "none", "source_invalid": "offline"}


def test_scores_are_not_kept_by_default(tmp_path):
    data = tmp_path / "data"
    cfg = project(data, "llm.provider=offline", "env.runtime.enabled=false")
    task = json.loads((FIX / "task_counter.json").read_text())
    with running_service(ScoreEngine(cfg)) as s:
        assert httpx.post(f"{s.url}/score", json={"items": [{"task": task, "response": RESPONSES[0]}]},
                          timeout=60).status_code == 200
    assert StageStore(data).manifest("service_scores") is None and not (data / "runs").exists()
