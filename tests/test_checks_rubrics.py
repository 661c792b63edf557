"""The rubric_checks stage of build-rubrics: proposed checks validated (a bad one dropped and reported),
dry-run on an empty page (a vacuous one dropped), kept checks on rubric_items and in load_tasks; the
offline teacher's answers, written from the queries, pass the checks the offline rules built from them."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from schemas.checks import parse_check
from schemas.config.checks import ChecksConfig
from schemas.config.env import EnvConfig, RuntimeConfig
from schemas.config.rubrics import RubricsConfig
from schemas.contracts.rubrics import CHECKS_SCHEMA
from tasks.env.records import CheckResult
from tasks.rubrics import load_tasks
from tasks.rubrics.checks import check_rows, dropped_markdown, dry_run, dry_run_verdict
from tasks.rubrics.checks_offline import offline_checks
from tasks.stages.store import StageStore

RT = RuntimeConfig(concurrency=6)
needs_browser = pytest.mark.skipif(not Path(RT.executable_path).exists(),
                                   reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")
ITEMS = [{"id": "I1", "scope": "initial_state", "requirement": "Shows a counter at 0"},
         {"id": "D1", "scope": "dynamic", "requirement": "Clicking Increment adds one to the counter"},
         {"id": "D2", "scope": "dynamic", "requirement": "Reset sets the counter to 0"}]
GOOD = {"steps": [{"do": "click", "target": {"role": "button", "name": "reset"}},
                  {"expect": "text", "target": {"role": "status"}, "matches": "^0$"}]}


def test_each_proposed_check_is_validated_on_its_own():
    proposed = [{"item_id": "D1", "check": {"steps": [{"do": "click", "target": {"role": "button"}}]}},  # no expect
                {"item_id": "D2", "check": GOOD}, {"item_id": "D2", "check": {"steps": []}},  # second for D2: ignored
                {"item_id": "D9", "check": GOOD}]  # unknown item: ignored
    rows = {r["item_id"]: r for r in check_rows(ITEMS, proposed)}
    assert [rows[i]["check_status"] for i in ("I1", "D1", "D2")] == ["none", "dropped", "kept"]
    assert "at least one 'expect' step" in rows["D1"]["check_problem"]
    assert parse_check(rows["D2"]["check_json"]) == parse_check(GOOD)


def test_dry_run_keeps_only_checks_that_find_nothing_on_an_empty_page():
    assert dry_run_verdict(CheckResult("I1", "inconclusive", reason="locator found nothing: role=button")) == (
        "inconclusive", None)
    assert dry_run_verdict(CheckResult("I1", "passed"))[1].startswith("passes on an empty page")
    assert dry_run_verdict(CheckResult("I1", "failed", reason="x"))[1].startswith("fails on an empty page")
    assert dry_run_verdict(CheckResult("I1", "inconclusive", reason="check time limit"))[0] == "error"


def test_offline_checks_come_from_the_query_not_from_the_items_words():
    query = ("Build a counter miniapp. Show the count; an Increment button adds one to it. "
             "A Reset button sets it back to zero.")
    # the rules' item carries its fields (#41): the checks read them, not its words
    named = [{"id": "I1", "scope": "initial_state", "requirement": 'The page has a button labelled "Increment".',
              "evidence_kind": "labelled_present", "element": "Increment"}, *ITEMS]
    out = offline_checks({"items": json.dumps(named), "expanded_query": query})
    assert [c["item_id"] for c in out["checks"]] == ["I1"]  # the only item the query's rules wrote
    (step,) = parse_check(out["checks"][0]["check"]).steps
    assert step.target.role == "button" and "Increment" in step.target.name


@needs_browser
def test_dry_run_drops_a_vacuous_check_and_reports_it():
    vacuous = {"steps": [{"do": "wait", "ms": 10}, {"expect": "no_error"}]}
    rows = [{"query_id": q, "input_hash": "h", "status": "ok", "error": None, "attempts": 1, "provider": "offline",
             "model": "m", "prompt_version": "1", **r} for q in ("q1", "q2")  # the same checks in two queries
            for r in check_rows(ITEMS, [{"item_id": "D1", "check": vacuous}, {"item_id": "D2", "check": GOOD}])]
    done = dry_run(pa.Table.from_pylist(rows, schema=CHECKS_SCHEMA), RT, 150).to_pylist()
    out = {r["item_id"]: r for r in done if r["query_id"] == "q1"}
    assert (out["D1"]["check_status"], out["D1"]["dry_run"]) == ("dropped", "passed")
    assert (out["D2"]["check_status"], out["D2"]["dry_run"]) == ("kept", "inconclusive")
    # each distinct check runs once; the other query's rows get its verdict
    twin = {r["item_id"]: r for r in done if r["query_id"] == "q2"}
    assert [{k: r[k] for k in ("check_status", "dry_run", "check_problem")} for r in twin.values()] == \
        [{k: r[k] for k in ("check_status", "dry_run", "check_problem")} for r in out.values()]
    report = dropped_markdown(pa.Table.from_pylist(list(out.values()), schema=CHECKS_SCHEMA))
    assert "| q1 | D1 | passes on an empty page" in report


@needs_browser
def test_offline_rubrics_carry_checks_and_the_offline_teacher_passes_them(prefect_harness, data_dir):
    from tasks.rubrics.build import build_stages
    from tasks.env.score import ScoreInput, score_batch
    from tasks.llm.offline import OfflineProvider
    from tasks.queries.synthesize import sample_personas, synthesize_chunk
    from tasks.sft.teacher import offline_teacher_answer
    from tests.fixtures.rubrics.support import publish_queries

    store = StageStore(data_dir)
    t = synthesize_chunk(list(range(4)), 17, sample_personas(10, 17), 2, 4, OfflineProvider(), 1)
    publish_queries(store, dict(zip(t.column("query_id").to_pylist(), t.column("text").to_pylist())))
    outs = {o.manifest.stage: o for o in build_stages(store, OfflineProvider(), RubricsConfig(chunk_size=2),
                                                      concurrency=1, runtime=RT)}
    st = outs["rubric_checks"].manifest.stats
    assert st["checks_kept"] > 0 and st["checks_dropped"] == 0  # every check finds nothing on an empty page
    items = store.read("rubric_items").to_pylist()
    assert items and any(i["check"] is not None for i in items)
    tasks = load_tasks(store)
    assert sum(len(x.rubric.checks()) for x in tasks) == st["checks_kept"]
    cfg = EnvConfig(runtime=RT, checks=ChecksConfig(step_timeout_ms=1000))
    results = score_batch([ScoreInput(x.query_id, x, offline_teacher_answer(x)) for x in tasks],
                          provider=OfflineProvider(), cfg=cfg)
    statuses = [c.status for r in results for c in r.check_results]
    print("offline teacher checks:", {s: statuses.count(s) for s in set(statuses)})
    assert statuses and set(statuses) == {"passed"}
    assert all(r.runtime_valid for r in results)
