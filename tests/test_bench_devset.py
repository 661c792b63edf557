"""The development set of bench_realapps (issue #41): the within-task pair arithmetic (bench/realapps_pairs.py),
the labels read from our PFT run's eval_results (bench/realapps_devset.py) and the VLM judge's scores of the
snapshot (bench/interactscience.py: Corpus.vlm_scores)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
import interactscience  # noqa: E402
from realapps_devset import read_official_labels  # noqa: E402
from realapps_pairs import App, Groups, figures, group_spread, official_label, order_pairs, within_pairs  # noqa: E402

from schemas.contracts.evaluation import EVAL_RESULTS_SCHEMA, STAGE  # noqa: E402
from tasks.evaluation.agreement import pairwise_within  # noqa: E402
from tasks.evaluation.official import HARNESS_CHANGED_SCRIPT, harness_changes_script, with_harness_note  # noqa: E402
from tasks.stages.store import StageStore  # noqa: E402

# (apps as (task, model, reward, label), pairs, right, reward ties, rate with ties as misses, rate on untied pairs)
PAIR_TABLE = [
    ("ordered right", [("t", "a", 0.9, 1.0), ("t", "b", 0.2, 0.5)], 1, 1, 0, 1.0, 1.0),
    ("ordered wrong", [("t", "a", 0.2, 1.0), ("t", "b", 0.9, 0.5)], 1, 0, 0, 0.0, 0.0),
    ("reward tie is a miss", [("t", "a", 0.7, 1.0), ("t", "b", 0.7, 0.5), ("t", "c", 0.1, 0.0)], 3, 2, 1, 2 / 3,
     1.0),
    ("label tie skipped", [("t", "a", 0.9, 1.0), ("t", "b", 0.1, 1.0)], 0, 0, 0, None, None),
    ("only ties", [("t", "a", 0.5, 1.0), ("t", "b", 0.5, 0.0)], 1, 0, 1, 0.0, None),
    ("pairs within a task only", [("t", "a", 0.9, 1.0), ("u", "b", 0.1, 0.0)], 0, 0, 0, None, None),
    ("dropped app (no label) in no pair", [("t", "a", 0.9, 1.0), ("t", "b", 0.1, None), ("t", "c", 0.2, 0.0)],
     1, 1, 0, 1.0, 1.0),
    ("app without reward in no pair", [("t", "a", None, 1.0), ("t", "b", 0.1, 0.5), ("t", "c", 0.2, 0.0)],
     1, 0, 0, 0.0, 0.0),
]


@pytest.mark.parametrize("name,apps,pairs,right,ties,rate,untied", PAIR_TABLE, ids=[r[0] for r in PAIR_TABLE])
def test_pair_figures(name, apps, pairs, right, ties, rate, untied):
    got = figures(within_pairs([App(t, m, r, lab) for t, m, r, lab in apps]))
    assert (got.pairs, got.right, got.ties) == (pairs, right, ties), name
    assert got.rate == pytest.approx(rate) if rate is not None else got.rate is None
    assert got.untied_rate == pytest.approx(untied) if untied is not None else got.untied_rate is None
    # the same count as the bench's own pairwise figure (tasks.evaluation.agreement)
    old = pairwise_within([(t, r, lab) for t, _, r, lab in apps])
    assert (old.agree, old.pairs, old.reward_ties) == (got.right, got.pairs, got.ties)


# (apps as (task, model, reward, label), groups, no reward spread, no label spread, flat reward but labels differ)
GROUP_TABLE = [
    ("spread", [("t", "a", 0.9, 1.0), ("t", "b", 0.2, 0.5)], 1, 0, 0, 0),
    ("reward flat, labels differ", [("t", "a", 1.0, 1.0), ("t", "b", 1.0, 0.5)], 1, 1, 0, 1),
    ("both flat", [("t", "a", 1.0, 1.0), ("t", "b", 1.0, 1.0)], 1, 1, 1, 0),
    ("labels flat only", [("t", "a", 0.9, 1.0), ("t", "b", 0.4, 1.0)], 1, 0, 1, 0),
    ("a lone app is no group; unlabelled and unrewarded apps are in none",
     [("t", "a", 1.0, 1.0), ("u", "a", 1.0, 1.0), ("u", "b", 0.2, None), ("u", "c", None, 0.0)], 0, 0, 0, 0),
    ("groups per task", [("t", "a", 1.0, 1.0), ("t", "b", 1.0, 0.0), ("u", "a", 0.5, 1.0), ("u", "b", 0.1, 0.0)],
     2, 1, 0, 1),
]


@pytest.mark.parametrize("name,apps,groups,flat,labels_flat,differ", GROUP_TABLE, ids=[r[0] for r in GROUP_TABLE])
def test_group_spread(name, apps, groups, flat, labels_flat, differ):
    assert group_spread(App(*a) for a in apps) == Groups(groups, flat, labels_flat, differ)


def test_the_other_judge_orders_the_same_pairs():
    pairs = within_pairs([App("t", "a", 0.9, 1.0), App("t", "b", 0.9, 0.5), App("t", "c", 0.1, 0.0),
                          App("u", "a", 0.3, 1.0), App("u", "b", 0.4, 0.0)])
    assert [p.verdict for p in pairs] == ["tie", "right", "right", "wrong"]
    vlm = {("a", "t"): 5.0, ("b", "t"): 1.0, ("c", "t"): 1.0, ("a", "u"): 2.0}  # ("b", "u") unscored
    got, unscored = order_pairs(pairs, vlm)
    # t: a>b right, a>c right, b=c tie (the VLM's tie is its miss); u: not scored
    assert (got.pairs, got.right, got.ties, unscored) == (3, 2, 1, 1)


def d(status, passed):
    return {"name": status, "passed": passed, "status": status, "score": None, "note": None}


LABEL_TABLE = [
    ("pass share", [d("passed", True), d("failed", False), d("passed", True), d("failed", False)], False, 0.5, None),
    ("not judged left out", [d("passed", True), d("no_reference", None), d("unserved", None)], False, 1.0, None),
    ("timeout not judged", [d("passed", True), d("timedOut", False)], False, 1.0, None),
    ("timeout judged on request", [d("passed", True), d("timedOut", False)], True, 0.5, None),
    ("only timeouts: dropped", [d("timedOut", False), d("no_reference", None)], False, None,
     "no test judged: 1 no_reference, 1 timedOut"),
    ("no test ran: dropped", [], False, None, "no official test ran (the spec ran no test)"),
]


@pytest.mark.parametrize("name,detail,timeouts,label,why", LABEL_TABLE, ids=[r[0] for r in LABEL_TABLE])
def test_official_label(name, detail, timeouts, label, why):
    assert official_label(detail, "the spec ran no test", timeouts) == (label, why), name


# InteractScience's harness unescapes entities in the whole page: where that changes a script, its tests ran on a page
# the answer is not. Twins: entities in the markup only, and a script without any, are pages the harness leaves as
# the answer wrote them.
ESCAPING = "const esc = (s) => s.replace(/&/g, '&amp;').replace(/'/g, '&#39;');"
HARNESS_TABLE = [
    ("a script's own escaping function", f"<p>hi</p><script>{ESCAPING}</script>", True),
    ("entities in the markup only", "<p>a &amp; b &lt; c</p><script>const n = 1 && 2;</script>", False),
    ("a script without entities", "<script type=\"module\">const q = \"'\";</script>", False),
    ("no html block", None, False),
]


@pytest.mark.parametrize("name,page,changed", HARNESS_TABLE, ids=[r[0] for r in HARNESS_TABLE])
def test_the_harness_changing_a_script_is_noted_and_such_an_app_has_no_label(name, page, changed):
    response = "Here it is." if page is None else f"Here it is.\n```html\n{page}\n```\n"
    assert harness_changes_script(response) is changed, name
    scored = with_harness_note(response, (0.0, [d("failed", False)], "1 of 2 tests not judged"))
    assert scored[0] == 0.0 and (HARNESS_CHANGED_SCRIPT in (scored[2] or "")) is changed
    label, why = official_label(scored[1], scored[2])
    assert (label, why) == ((None, HARNESS_CHANGED_SCRIPT) if changed else (0.0, None)), name


def test_labels_read_from_a_published_eval_results(tmp_path):
    rows = [
        {"eval_id": "gpt-5:0:ext-A", "model": "gpt-5", "query_id": "ext-A", "reward": 0.8,
         "official_detail": [d("passed", True), d("failed", False), d("timedOut", False)],
         "official_score": 1 / 3},
        {"eval_id": "o3:0:ext-A", "model": "o3", "query_id": "ext-A", "reward": 0.6,
         "official_detail": [d("no_reference", None)], "official_note": "none of its 1 tests could be judged here"},
        {"eval_id": "o3:0:ext-B", "model": "o3", "query_id": "ext-B", "reward": 0.6, "official_detail": [],
         "official_note": "the spec ran no test"},
    ]
    store = StageStore(tmp_path)
    build = store.begin(STAGE, "fixture", EVAL_RESULTS_SCHEMA)
    build.write_part("m00", pa.Table.from_pylist(rows, schema=EVAL_RESULTS_SCHEMA))
    build.publish(provider="offline", config_hash="-", inputs={}, config={}, validation={})
    labels, dropped = read_official_labels(tmp_path, {"gpt-5": "GPT-5"})
    assert labels == {"GPT-5": {"ext-A": 0.5}}
    assert dropped == [("o3", "ext-A", "no test judged: 1 no_reference"),
                       ("o3", "ext-B", "no official test ran (the spec ran no test)")]
    strict, _ = read_official_labels(tmp_path, timeouts_judged=True)
    assert strict == {"gpt-5": {"ext-A": pytest.approx(1 / 3)}}


def test_vlm_scores_of_the_snapshot(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "interactscience.jsonl").write_text(
        "".join(json.dumps({"id": t, "question": "q"}) + "\n" for t in ("Alpha", "Beta", "Zeta")), encoding="utf-8")
    vlm = tmp_path / "results" / "lm_results" / "VQT_vlm_judge_results"
    vlm.mkdir(parents=True)
    lines = [("Alpha", "1", 2.0), ("Alpha", "2", 4.0), ("Beta", "1", 0), ("Zeta", "1", 5.0)]
    (vlm / "m.jsonl").write_text("".join(json.dumps({"id": t, "screenshot_id": s, "overall_score": v}) + "\n"
                                         for t, s, v in lines), encoding="utf-8")
    c = interactscience.load(tmp_path, "dev")
    assert c.vlm_scores("m") == {"ext-Alpha": 3.0, "ext-Beta": 0.0}  # mean over screenshots; Zeta is held out
    assert c.vlm_scores("other") is None  # no results for that model: None, not an empty dict
    assert c.outcomes("m") == {} and c.labels("m") == {}  # no published PFT results for it
