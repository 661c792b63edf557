"""Pure parts of build-rubrics: normalised evidence match, clause rules, finalize, and the single
corrective retry on an unknown requirement id (then recorded missing)."""
import json

import pytest

from schemas.llm.rubric_construction import FinalReference, ModuleMap
from tasks.llm.offline import OfflineProvider
from tasks.rubrics import text as T
from tasks.rubrics.filtering import NOT_IN_QUERY, finalize
from tasks.rubrics.pipeline import QueryContext, build_part, chunk_query_ids, query_hash
from tasks.rubrics.stages import stage_defs
from tests.fixtures.rubrics.support import Q5, ScriptedProvider, q5_text

SETTINGS = {"max_tokens": 2000, "temperature": 0.0}


@pytest.mark.parametrize("evidence, ok", [
    ("Display five random playing cards", True),
    ("display   FIVE random playing-cards.", True),  # case, spacing, punctuation
    ("\u201cEasy (10 seconds per round\u201d", True),  # curly quotes, brackets
    ("Easy (10 seconds ... Hard (3 seconds per round", True),  # fragments in order
    ("Hard (3 seconds ... Easy (10 seconds", False),  # fragments out of order
    ("Display five random playing card", False),  # word boundary: "card" is not "cards"
    ("Aces count high or low in straights", False),
    ("", False), ("  ...  ", False),
])
def test_evidence_in_is_a_normalised_ordered_match(evidence, ok):
    assert T.evidence_in(evidence, q5_text()) is ok


def test_clauses_keep_verbatim_evidence_and_drop_lead_ins():
    q = ("Build a Budget Planner miniapp for a nurse who is busy. It must let the user add expenses; "
         "and show a total per category. Keep the interface simple.")
    cl = T.clauses_of(q)
    assert [c.evidence for c in cl] == ["Build a Budget Planner miniapp", "It must let the user add expenses",
                                        "and show a total per category", "Keep the interface simple"]
    assert [c.text for c in cl][1:3] == ["Let the user add expenses", "Show a total per category"]
    assert all(T.evidence_in(c.evidence, q) for c in cl)
    assert [T.classify(c.text)[0] for c in cl] == ["app", "input", "scoring", "constraint"]


def test_offline_stages_chain_on_q5_with_supported_items_only():
    sd = stage_defs()
    p = OfflineProvider()
    ctx = QueryContext("q5", q5_text(), query_hash("q5", q5_text()))
    for i, stage in enumerate(sd):
        table, counts = build_part(stage, [ctx], p, SETTINGS, None, None, 1)
        rows = table.to_pylist()
        assert counts.computed == 1 and all(r["status"] == "ok" and r["provider"] == "offline" for r in rows)
        if i == 0:
            ctx.expanded_query, ctx.trace = rows[0]["expanded_query"], rows[0]
            # high-risk gaps get minimal testable defaults in the expanded query itself
            assert "Each correct answer adds one point to the score." in ctx.expanded_query
        elif i == 1:
            ctx.requirements = rows
            assert all(r["evidence_in_query"] for r in rows)
        elif i == 2:
            ctx.modules = rows
        elif i == 3:
            ctx.candidates = rows
    ref = rows[0]
    items = json.loads(ref["reference_json"])
    assert items["initial_state"] and items["dynamic"]
    assert all(T.evidence_in(i["query_evidence"], ctx.expanded_query) for s in items.values() for i in s)
    assert ref["uncovered_must_cover_ids"] == []


def test_finalize_merges_exact_duplicates_and_numbers_ids_in_order():
    ctx = QueryContext("q", "", "h", expanded_query=q5_text(),
                       requirements=[{"requirement_id": "R1", "must_cover": True},
                                     {"requirement_id": "R2", "must_cover": True},
                                     {"requirement_id": "R3", "must_cover": False}])
    item = lambda i, req, ev, cov: {"id": i, "requirement": req, "verification": "look", "source_module": "M",  # noqa: E731
                                    "covered_requirement_ids": cov, "query_evidence": ev, "rubric_level": "core_module"}
    ans = FinalReference.model_validate({
        "initial_state": [item("X", "Cards shown.", "Display five random playing cards", ["R1"])],
        "dynamic": [item("A", "Timer runs.", "per-round countdown timer", ["R1"]),
                    item("B", "timer  runs", "auto-fails the round if it expires", ["R2"]),
                    item("C", "Nope.", "drag the cards", ["R2"])]})
    row = finalize(ctx, ans)
    ref = json.loads(row["reference_json"])
    assert [i["id"] for i in ref["initial_state"]] == ["I1"] and [i["id"] for i in ref["dynamic"]] == ["D1"]
    assert ref["dynamic"][0]["covered_requirement_ids"] == ["R1", "R2"]  # B merged into A
    assert [(u["ids"], u["reason"]) for u in row["unsupported_items"]] == [(["C"], NOT_IN_QUERY)]
    assert row["uncovered_requirement_ids"] == ["R3"] and row["uncovered_must_cover_ids"] == []
    assert [d["action"] for d in row["filtering_decisions"]] == ["merge", "remove"]


def test_unknown_requirement_id_gets_one_corrective_retry_then_is_missing():
    reqs = [{"requirement_id": f"R{i}", "requirement_type": "rule", "functional_role": "x", "description": "d",
             "query_evidence": "e", "must_cover": True, "status": "ok"} for i in (1, 2)]
    bad = {"modules": [{"id": "M1", "name": "Timer", "kind": "state_system", "covered_requirement_ids": ["R1", "R9"],
                        "query_evidence": "Use a per-round countdown timer"}]}
    provider = ScriptedProvider(lambda _req, _msgs: json.dumps(bad))
    ctx = QueryContext("q5", q5_text(), "h", expanded_query=q5_text(), requirements=reqs)
    table, counts = build_part(stage_defs()[2], [ctx], provider, SETTINGS, None, None, 1)
    row = table.to_pylist()[0]
    assert len(provider.calls) == 2  # the first answer and exactly one corrective retry
    retry_msgs = provider.calls[1][2]
    assert "unknown requirement ids ['R9']" in retry_msgs[-1]["content"]
    assert row["status"] == "missing" and row["attempts"] == 2 and row["module_id"] is None
    assert "missing after one corrective retry" in row["error"] and "R9" in row["error"]
    assert counts.missing == 1
    # a corrected second answer is accepted
    good = {"modules": [{**bad["modules"][0], "covered_requirement_ids": ["R1"]}]}
    fixed = ScriptedProvider(lambda _req, msgs: json.dumps(bad if len(msgs) == 1 else good))
    row = build_part(stage_defs()[2], [ctx], fixed, SETTINGS, None, None, 1)[0].to_pylist()[0]
    assert row["status"] == "ok" and row["attempts"] == 2 and row["covered_requirement_ids"] == ["R1"]


def test_validation_context_names_the_unknown_ids():
    with pytest.raises(ValueError, match=r"unknown requirement ids \['R7'\]"):
        ModuleMap.model_validate(json.loads((Q5 / "3_modules.json").read_text().replace('"R1"', '"R7"')),
                                 context={"requirement_ids": {f"R{i}" for i in range(1, 7)} - {"R7"}})


def test_chunks_are_sorted_and_stable():
    assert chunk_query_ids(["q3", "q1", "q2"], 2) == {"c00000": ["q1", "q2"], "c00001": ["q3"]}


def _publish_offline(store, sd, key: str, texts: dict[str, str]):
    """Publish one stage's part for ``texts`` on the offline provider (no GX suite: the part is the point)."""
    from schemas.config.rubrics import RubricsConfig
    from tasks.rubrics.stages import stage_part
    from tasks.stages.stage import StageSpec, run_stage

    index = [d.name for d in stage_defs()].index(sd.name)
    table, _ = stage_part(store, index, key, sorted(texts), texts, OfflineProvider(), RubricsConfig(), None, 1)
    run_stage(store, StageSpec(sd.name, sd.schema, lambda: []), part_keys=[key], make_part=lambda _k: table,
              provider="offline", config={}, config_hash=sd.name, inputs={}, force=True)


def test_a_stage_reads_only_the_stages_its_needs_declare(tmp_path):
    """rubric_candidates reads modules: declared, its contexts carry them; left out of its needs, the read is
    an error naming the stage and the fix, never an empty list the stage would build on."""
    import dataclasses

    from tasks.rubrics.pipeline import UndeclaredStage
    from tasks.rubrics.stages import load_contexts
    from tasks.stages.store import StageStore

    store, texts = StageStore(tmp_path / "data"), {"q5": q5_text()}
    defs = stage_defs()
    for sd in defs[:3]:  # expansions, requirements, modules
        _publish_offline(store, sd, "c0", texts)
    candidates = defs[3]
    ctx, = load_contexts(store, candidates, "c0", ["q5"], {})
    assert ctx.modules and ctx.requirements and ctx.expanded_query
    table, counts = build_part(candidates, [ctx], OfflineProvider(), SETTINGS, None, None, 1)
    assert counts.computed == 1 and set(table.column("status").to_pylist()) == {"ok"}

    blind = dataclasses.replace(candidates, needs=("expansions", "requirements"))
    ctx, = load_contexts(store, blind, "c0", ["q5"], {})
    assert ctx.requirements and ctx.input_hash  # what it declares it reads, chained to requirements
    with pytest.raises(UndeclaredStage, match=r"rubric_candidates reads 'modules' \(rows of modules\).*needs"):
        build_part(blind, [ctx], OfflineProvider(), SETTINGS, None, None, 1)


def test_needs_name_earlier_stages_only_the_previous_one_last():
    import dataclasses

    from tasks.rubrics.stages import check_needs

    defs = stage_defs()
    check_needs(defs)
    ahead = dataclasses.replace(defs[1], needs=("expansions", "modules"))
    with pytest.raises(ValueError, match="requirements needs .*name only stages before it"):
        check_needs([defs[0], ahead, *defs[2:]])
    skipped = dataclasses.replace(defs[3], needs=("expansions", "requirements"))  # modules is not last
    with pytest.raises(ValueError, match="rubric_candidates needs"):
        check_needs([*defs[:3], skipped, defs[4]])
