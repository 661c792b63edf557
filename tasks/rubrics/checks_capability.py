"""Offline checks of a synthesized query's capability items (``tasks/rubrics/capabilities.py``), from their fields
(``evidence_kind``, ``element``, ``trigger``, ``effect``) and, for bounds, the spec the query was written from: a
slider named for ``element`` moved to each stated bound holds it; clicking the button named ``trigger`` changes the
page's text or the drawing (or, where the query does not say what it changes on a page just loaded, throws no
uncaught error); the first draggable item dropped on the third is no longer first; typing what names nothing in the
search box changes the page's text; the first button clicked several times in a row throws no uncaught error; the
first button used and the page reloaded, it throws none (what was saved is read back); the seed field filled alike
before and after a reload shows the same page; the slider named for the parameter moved from end to end, a value
past the stated maximum or text of no format typed in the field named for it (then Tab), changes the page's text;
the named button is disabled on load; where the stated label shows, the page's text changes by itself; the page
starts with the stated number of list items; a name added twice is refused with a message.

A locator that finds nothing (the named control is not there, or is disabled) leaves a check inconclusive; each
phrase states what its check needs, so an app that does what it says passes. Run: ``capability_steps(item, spec)``
(``checks_offline.offline_checks`` calls it for an item its role's checks leave; the locators both use are
``check_locators``).
"""
from __future__ import annotations

import re
from typing import Any

from schemas.rubric import DRAWING_EFFECT, NO_ERROR_EFFECT, TEXT_EFFECT
from tasks.rubrics.capabilities import Checkable, clause_evidence
from tasks.rubrics.check_locators import DRAWING, PAGE_TEXT, WORD_EDGE, once_begun, present
from tasks.rubrics.prompt_spec import Spec

BOUND_TOLERANCE = 0.01  # a slider moved to a stated bound holds it exactly (the browser keeps min and max)
DRAGGABLE = '[draggable="true"]'
MATCHES_NOTHING = "zqxjv"  # a search no item's name matches
REPEAT_CLICKS = 4  # "clicks quickly many times in a row"
SEED_VALUE = "42"  # any seed: the same one is typed before and after the reload
BAD_FORMAT_TEXT = "?#@!"  # text no stated format of a parameter takes
TICK_WAIT_MS = 1200  # how long a text said to change by itself (a countdown's seconds) is left to run first


def range_check(element: str, bounds: tuple[float, float]) -> list[dict[str, Any]]:
    """The slider named for ``element`` takes the query's bounds: moved to each, it holds it."""
    loc = {"role": "slider", "name": WORD_EDGE + re.escape(element)}
    steps: list[dict[str, Any]] = []
    for bound in (bounds[1], bounds[0]):
        steps += [{"do": "fill", "target": loc, "value": f"{bound:g}"},
                  {"expect": "number_relation", "left": {"read": loc}, "op": "eq", "right": {"const": bound},
                   "tolerance": BOUND_TOLERANCE}]
    return steps


def _button(name: str) -> dict[str, Any]:
    return {"role": "button", "name": WORD_EDGE + re.escape(name) + WORD_EDGE}


def named_button_check(name: str) -> list[dict[str, Any]]:
    """Clicking the button named ``name`` changes the page's text (once begun: ``once_begun``)."""
    return once_begun(name, [{"do": "remember", "target": PAGE_TEXT, "name": "before"},
                             {"do": "click", "target": _button(name)},
                             {"expect": "text_changes", "target": PAGE_TEXT, "since": "before"}])


def works_check(name: str) -> list[dict[str, Any]]:
    """Clicking the button named ``name`` throws no uncaught error (one not there leaves it inconclusive)."""
    return [{"do": "click", "target": _button(name)}, {"expect": "no_error"}]


def repeat_check() -> list[dict[str, Any]]:
    """The first button clicked ``REPEAT_CLICKS`` times in a row throws no uncaught error."""
    return [{"do": "click", "target": {"role": "button"}}] * REPEAT_CLICKS + [{"expect": "no_error"}]


def restore_check() -> list[dict[str, Any]]:
    """The first button used (the app has something to save), the page reloaded: reading back what it saved throws
    no uncaught error (an app with no button leaves it inconclusive)."""
    return [{"do": "click", "target": {"role": "button"}}, {"do": "reload"}, {"expect": "no_error"}]


def seed_check(element: str) -> list[dict[str, Any]]:
    """The field named for ``element`` filled with one seed, the page read; reloaded and filled alike, it shows
    the same page (a page without the field leaves it inconclusive)."""
    field = {"label": WORD_EDGE + re.escape(element)}
    fill = {"do": "fill", "target": field, "value": SEED_VALUE}
    return [fill, {"do": "remember", "target": PAGE_TEXT, "name": "run"}, {"do": "reload"}, fill,
            {"expect": "text_same", "target": PAGE_TEXT, "since": "run"}]


def reorder_check() -> list[dict[str, Any]]:
    """Dragging the first draggable item onto the third changes which item is first (HTML drag and drop marks
    what can be dragged; an app that reorders another way leaves it inconclusive)."""
    first, third = {"css": DRAGGABLE}, {"css": DRAGGABLE, "nth": 2}
    return [{"do": "remember", "target": first, "name": "first"},
            {"do": "drag", "target": first, "to": third, "start": [0.5, 0.5], "end": [0.5, 0.8]},
            {"expect": "text_changes", "target": first, "since": "first"}]


def filter_check() -> list[dict[str, Any]]:
    """Typing what names nothing into the search box changes the page's text (items are hidden)."""
    return [{"do": "remember", "target": PAGE_TEXT, "name": "before"},
            {"do": "fill", "target": {"placeholder": "search"}, "value": MATCHES_NOTHING},
            {"expect": "text_changes", "target": PAGE_TEXT, "since": "before"}]


def drawing_button_check(name: str) -> list[dict[str, Any]]:
    """Clicking the button named ``name`` changes the drawing (some canvas or svg of the page; once begun)."""
    return once_begun(name, [{"do": "remember", "target": DRAWING, "name": "before"},
                             {"do": "click", "target": _button(name)},
                             {"expect": "canvas_changes", "target": DRAWING, "since": "before"}])


def slider_check(name: str) -> list[dict[str, Any]]:
    """The slider named ``name`` moved to one end and then to the other (Home, End: the browser's own bounds)
    changes the page's text (the value it is said to show)."""
    loc = {"role": "slider", "name": WORD_EDGE + re.escape(name) + WORD_EDGE}
    return [{"do": "press", "target": loc, "key": "Home"}, {"do": "remember", "target": PAGE_TEXT, "name": "low"},
            {"do": "press", "target": loc, "key": "End"}, {"expect": "text_changes", "target": PAGE_TEXT, "since": "low"}]


def typed_check(name: str, value: str) -> list[dict[str, Any]]:
    """``value`` typed in the field labelled ``name``, then Tab (an app may check a field when it is left: filling
    fires no change event): the page's text changes (the error message it is said to show; a field not there, or
    one that takes no such text, leaves it inconclusive)."""
    field = {"label": WORD_EDGE + re.escape(name) + WORD_EDGE}
    return [{"do": "remember", "target": PAGE_TEXT, "name": "before"}, {"do": "fill", "target": field, "value": value},
            {"do": "press", "target": field, "key": "Tab"},
            {"expect": "text_changes", "target": PAGE_TEXT, "since": "before"}]


def ticking_check(label: str) -> list[dict[str, Any]]:
    """Where the text labelled ``label`` is on the page, the page's text changes by itself (nothing operated)."""
    return [present({"text": WORD_EDGE + re.escape(label) + WORD_EDGE}),
            {"do": "remember", "target": PAGE_TEXT, "name": "before"}, {"do": "wait", "ms": TICK_WAIT_MS},
            {"expect": "text_changes", "target": PAGE_TEXT, "since": "before"}]


def duplicate_check(field: str, button: str) -> list[dict[str, Any]]:
    """A name that names nothing typed in the field labelled ``field`` and added with the button named exactly
    ``button`` (other buttons may start with its name), then typed and added again: the page's text changes (the
    refusal it is said to show)."""
    fill = {"do": "fill", "target": {"label": WORD_EDGE + re.escape(field) + WORD_EDGE}, "value": MATCHES_NOTHING}
    click = {"do": "click", "target": {"role": "button", "name": "^" + re.escape(button) + "$"}}
    return [fill, click, fill, {"do": "remember", "target": PAGE_TEXT, "name": "once"}, click,
            {"expect": "text_changes", "target": PAGE_TEXT, "since": "once"}]


def _stated_bounds(kind: str, element: str, spec: Spec) -> tuple[float, float] | None:
    """The bounds the spec of ``kind``'s clause naming ``element`` states (a slider's, a field's)."""
    return next((f.evidence.bounds for f in clause_evidence(spec.clauses) if f and isinstance(
        f.evidence, Checkable) and f.evidence.kind == kind and f.evidence.element == element), None)


def _field_steps(kind: str, item: dict[str, Any], spec: Spec) -> list[dict[str, Any]] | None:
    """A capability's check that types in a field or watches text (``capability_steps``)."""
    element = item.get("element")
    if kind == "rejects_out_of_range" and element:
        bounds = _stated_bounds(kind, element, spec)
        return typed_check(element, f"{bounds[1] + 1:g}") if bounds else None
    if kind == "rejects_bad_format" and element:
        return typed_check(element, BAD_FORMAT_TEXT)
    if kind == "starts_disabled" and item.get("trigger"):
        return [{"expect": "disabled", "target": _button(item["trigger"])}]
    if kind == "text_by_itself" and element:
        return ticking_check(element)
    if kind == "starts_listed" and element:
        bounds = _stated_bounds(kind, element, spec)
        return [{"expect": "count", "target": {"role": "listitem"}, "at_least": int(bounds[0])}] if bounds else None
    if kind == "refuses_duplicate" and element and item.get("trigger"):
        return duplicate_check(element, item["trigger"])
    return None


def capability_steps(item: dict[str, Any], spec: Spec) -> list[dict[str, Any]] | None:
    """The steps of a synthesized query's capability item (``capabilities``): from its fields, and for a slider
    the bounds its spec states."""
    kind, effect = item.get("evidence_kind"), item.get("effect") or []
    if kind == "takes_range" and item.get("element"):
        bounds = _stated_bounds(kind, item["element"], spec)
        return range_check(item["element"], bounds) if bounds else None
    if kind == "operate_named" and item.get("trigger") and TEXT_EFFECT in effect:
        return named_button_check(item["trigger"])
    if kind == "operate_named" and item.get("trigger") and DRAWING_EFFECT in effect:
        return drawing_button_check(item["trigger"])
    if kind == "slides_named" and item.get("trigger"):
        return slider_check(item["trigger"])
    if kind == "operate_named" and item.get("trigger") and NO_ERROR_EFFECT in (item.get("effect") or []):
        return works_check(item["trigger"])
    if kind == "repeat_no_error":
        return repeat_check()
    if kind == "restores_on_reload":
        return restore_check()
    if kind == "reproduces_by_seed" and item.get("element"):
        return seed_check(item["element"])
    if kind == "reorder_by_drag":
        return reorder_check()
    if kind == "filter_by_typing":
        return filter_check()
    return _field_steps(kind, item, spec) if kind else None
