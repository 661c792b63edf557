"""The check language (schemas/checks.py) and the runner's pure parts: bad checks get errors that name
the fix; numbers are read the same way everywhere; hand-label agreement is counted honestly."""
from __future__ import annotations

import numpy as np
import pytest

from schemas.checks import MAX_WAIT_MS, Check, parse_check
from tasks.env.checks import label_agreement
from tasks.env.check_steps import changed_fraction, drawing_changed, parse_number

CLICK = {"do": "click", "target": {"role": "button", "name": "add"}}


@pytest.mark.parametrize("steps, needle", [
    ([CLICK], "at least one 'expect' step"),
    ([{"do": "jump"}], "each step needs 'do'"),
    ([{"expect": "text", "target": {"text": "(?P<n>x)"}, "matches": "x"}], "Python-only syntax"),
    ([{"expect": "text_changes", "target": {"text": "a"}, "since": "x"}], "no earlier remember step defines"),
    ([{"expect": "visible", "target": {"text": "a", "css": "b"}}], "exactly one of role, text"),
    ([{"do": "remember", "target": {"canvas": True, "drawing": True}, "name": "a"}, {"expect": "canvas_changes",
      "target": {"drawing": True}, "since": "a"}], "got ['canvas', 'drawing']"),
    ([{"expect": "visible", "target": {"text": "x", "name": "a"}}], "goes with 'role'"),
    ([{"expect": "visible", "target": {"role": "buton"}}], "unknown role"),
    ([{"do": "wait", "ms": MAX_WAIT_MS + 1}, {"expect": "no_error"}], "less than or equal to"),
    ([{"expect": "number_relation", "left": {"const": 1}, "op": "eq", "right": {"const": 1}}], "must read at least one"),
    ([{"do": "press", "key": "rm -rf"}, {"expect": "no_error"}], "is not a key name"),
    ([{"expect": "text", "target": {"text": "("}, "matches": "x"}], "not a regular expression"),
])
def test_bad_checks_are_refused_with_the_fix(steps, needle):
    with pytest.raises(ValueError, match="not a valid check") as e:
        parse_check({"steps": steps})
    assert needle in str(e.value)


def test_a_good_check_round_trips_and_has_no_javascript_field():
    c = parse_check({"steps": [CLICK, {"do": "remember", "target": {"role": "status"}, "name": "n"},
                               {"expect": "number_changes", "target": {"role": "status"}, "since": "n"}]})
    assert Check.model_validate_json(c.model_dump_json()) == c
    with pytest.raises(ValueError, match="not a valid check"):
        parse_check({"steps": [{"expect": "no_error", "script": "alert(1)"}]})


@pytest.mark.parametrize("text, pattern, want", [
    ("Accuracy: 67%", None, 67.0), ("Score: 1,250 pts", None, 1250.0), ("-3.5 °C", None, -3.5),
    ("Round 2 of 10, score 7", r"score (\d+)", 7.0), ("Round 2 of 10", r"\d+ of (\d+)", 10.0),
    ("no digits", None, None), ("x", r"score (\d+)", None),
])
def test_numbers_are_read_from_text(text, pattern, want):
    assert parse_number(text, pattern) == want


def test_changed_fraction_counts_only_the_region():
    a = np.zeros((10, 10, 3), dtype=np.uint8)
    b = a.copy()
    b[:, :5] = 255  # left half changes
    assert changed_fraction(a, b, (0, 0, 1, 1)) == 0.5
    assert changed_fraction(a, b, (0.5, 0, 1, 1)) == 0.0
    assert changed_fraction(a, a, (0, 0, 1, 1)) == 0.0


def test_the_drawing_changed_when_any_of_its_elements_did_or_one_came_or_went():
    a = np.zeros((10, 10, 3), dtype=np.uint8)
    b = a.copy()
    b[:2] = 255  # a fifth of the second element
    assert drawing_changed([a, a], [a, b], (0, 0, 1, 1)) == 0.2
    assert drawing_changed([a, a], [a, a], (0, 0, 1, 1)) == 0.0
    assert drawing_changed([a, None], [a, None], (0, 0, 1, 1)) == 0.0  # off screen both times: nothing seen to change
    assert drawing_changed([a], [a, a], (0, 0, 1, 1)) == drawing_changed([a, None], [a, a], (0, 0, 1, 1)) == 1.0
    assert drawing_changed([a, a], [a, b], (0, 0.5, 1, 1)) == 0.0  # the region of each element
    assert parse_check({"steps": [{"do": "remember", "target": {"drawing": True}, "name": "d"}, {
        "expect": "canvas_changes", "target": {"drawing": True}, "since": "d"}]}).steps[0].target.describe() == \
        "the drawing (every canvas and svg)"


def test_label_agreement_counts_inconclusive_apart_and_false_fails():
    rep = label_agreement([("met", "passed"), ("not_met", "failed"), ("met", "failed"), ("not_met", "inconclusive")])
    assert rep == {"pairs": 4, "conclusive": 3, "agreement": round(2 / 3, 4), "inconclusive_rate": 0.25,
                   "false_fails": 1, "false_passes": 0}


def test_the_step_union_the_type_checker_reads_names_every_step_kind():
    """schemas/checks.py spells Step out for mypy under TYPE_CHECKING; a step kind added to ACTIONS or
    EXPECTATIONS and not there would be unknown to the checker."""
    import ast
    import inspect

    import schemas.checks as checks
    block = next(n for n in ast.walk(ast.parse(inspect.getsource(checks)))
                 if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING")
    spelled = {n.id for n in ast.walk(block.body[0]) if isinstance(n, ast.Name)} - {"Step", "Union"}
    assert spelled == {c.__name__ for c in [*checks.ACTIONS.values(), *checks.EXPECTATIONS.values()]}
