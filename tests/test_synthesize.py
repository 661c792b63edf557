import pytest

from schemas.config.llm import OFFLINE_MODEL
from tasks.queries.dedup import exact_jaccard, near_duplicates
from tasks.llm.offline import OfflineProvider
from tasks.queries.synthesize import candidate_spec, load_taxonomy, sample_personas, synthesize_chunk


def test_taxonomy_has_twelve_validated_categories():
    tax = load_taxonomy()
    assert len(tax.categories) == 12
    names = {c.id for c in tax.categories}
    for paper_name in ("execution_reliability", "interaction", "workflow_completion", "state_management",
                       "domain_logic", "information_processing", "simulation", "presentation",
                       "requirement_completeness"):
        assert paper_name in names


def test_bad_taxonomy_is_rejected(tmp_path):
    import json

    from schemas.taxonomy import Taxonomy

    data = json.loads(load_taxonomy().model_dump_json())
    data["categories"] = data["categories"][:11]
    with pytest.raises(ValueError, match="12 operational categories"):
        Taxonomy.model_validate(data)


def test_candidates_are_deterministic_and_independent_of_chunking():
    personas = sample_personas(30, 5)
    whole = synthesize_chunk(list(range(10)), 5, personas, 2, 4, OfflineProvider(), 1).to_pylist()
    parts = (synthesize_chunk(list(range(4)), 5, personas, 2, 4, OfflineProvider(), 1).to_pylist()
             + synthesize_chunk(list(range(4, 10)), 5, personas, 2, 4, OfflineProvider(), 1).to_pylist())
    assert whole == parts
    assert all(r["provider"] == "offline" and r["model"] == OFFLINE_MODEL for r in whole)


def test_candidate_traceability():
    tax = load_taxonomy()
    cat_of = tax.category_of()
    personas = sample_personas(10, 1)
    for i in range(50):
        spec = candidate_spec(i, 1, personas, 2, 4)
        assert 2 <= len(spec.capability_ids) <= 4
        assert len(set(spec.capability_ids)) == len(spec.capability_ids)
        assert set(spec.category_ids) == {cat_of[c] for c in spec.capability_ids}
        assert spec.difficulty == ("easy", "medium", "hard")[len(spec.capability_ids) - 2]


def test_near_duplicates_are_removed_and_recorded():
    base = "Build a habit tracker app that lets the user add habits, mark them done each day and see a weekly streak chart"
    texts = [base, base + " please", "A completely different request: a chess puzzle board with a timer and hints shown"]
    assert exact_jaccard(texts[0], texts[1]) > 0.8
    res = near_duplicates(texts, threshold=0.8, num_perm=128)
    assert res.kept == [0, 2]
    assert res.duplicate_of == {1: 0}
