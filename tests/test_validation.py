import pyarrow as pa
import pytest

from schemas.contracts.queries import QUERIES_SCHEMA, queries_suites
from tasks.stages.stage import StageSpec, run_stage
from tasks.stages.store import StageStore
from tasks.queries.synthesize import load_taxonomy
from tasks.stages.validate import StageValidationError


def _row(qid, cats=("interaction",), caps=("in_drag_reorder",), domain="Games"):
    return {"query_id": qid, "text": "Build an app", "title": "t", "capability_ids": list(caps),
            "category_ids": list(cats), "persona_id": "p1", "domain": domain, "difficulty": "easy",
            "source": "synthesized", "provider": "offline", "model": "m", "prompt_version": "1", "candidate_index": 1}


def _spec():
    tax = load_taxonomy()
    return StageSpec("queries", QUERIES_SCHEMA, lambda: queries_suites([c.id for c in tax.categories], list(tax.capability())))


def _run(store, rows):
    table = pa.Table.from_pylist(rows, schema=QUERIES_SCHEMA)
    return run_stage(store, _spec(), part_keys=["all"], make_part=lambda _k: table, provider="offline", config={},
                     config_hash="c", inputs={})


def test_gate_blocks_bad_rows_and_names_them(tmp_path):
    store = StageStore(tmp_path)
    rows = [_row("q1"), _row("q2"), _row("q2"), _row(None), _row("q9", cats=("made_up_category",))]
    with pytest.raises(StageValidationError) as e:
        _run(store, rows)
    msg = str(e.value)
    assert "expect_column_values_to_not_be_null on 'query_id'" in msg
    assert "expect_column_values_to_be_unique on 'query_id'" in msg
    assert "expect_column_values_to_be_in_set on 'category_id'" in msg and "q9" in msg and "q2" in msg
    assert store.manifest("queries") is None  # not published
    failed = {o.column for o in e.value.report.failed}
    assert failed == {"query_id", "category_id"}


def test_good_rows_publish_and_keep_a_report(tmp_path):
    store = StageStore(tmp_path)
    out = _run(store, [_row("q1"), _row("q2", cats=("presentation",), caps=("pr_theme_toggle",))])
    assert out.manifest.row_count == 2 and out.manifest.validation["success"]
    assert (tmp_path / "validation" / "queries").is_dir()
    assert (tmp_path / "catalog.duckdb").exists()
