"""Offline rule of the rubric_checks stage: a check for each offline item, built from what the query states.

The rule reads the expanded query again (``prompt_spec``) and each final item's fields (``evidence_kind``,
``element``, ``trigger``, ``effect``: ``schemas/rubric.py``), never its requirement's words: the element and the
control it names by ``#id`` (or label) are found in the query's spec by that name; from them:
- a control, output or drawing area: it is there (located by the ``#id`` the query names), shows its
  stated default (a number within half a step, a text, checked or not; a dropdown only that it is there,
  since its options are not visible to a check), and a slider or number input with stated bounds takes its
  maximum and minimum; an output shows its stated text (a number as stated, give or take trailing zeros);
- a behaviour: operating the control as a user would (fill a value within its bounds other than the default,
  click, pick another option, press the named key) changes what the item says should change: the named
  output's text, else the drawing (a request's one canvas; in a plan that names a canvas or a drawing area,
  every canvas and svg on the page, of which one must change), else the page's text;
- a display the plan pairs with a slider (``slider-length`` / ``length-value``, said to show a value): it shows
  a number equal to the slider's value on load, and again once the slider is moved to a bound (both read from
  the page, within half a step or the display's rounding to one decimal place fewer);
- a display with a line format the plan states: every line of its text has as many parts set apart by whitespace
  as the format has words (``prompt_formats.line_pattern``);
- motion: the canvas a moment apart; a short request's input: a click, a drag, Space and an arrow key on
  its canvas (a request names no other);
- an element a sentence names by label: a button of that name, a field of that label;
- a synthesized query's capability (``capabilities``): the check its fields name (``checks_capability``).

A presence check counts matches, so an element that is there but hidden leaves it inconclusive, never
failed; whether a named element is missing is the judge's call (``tasks/env/rubric_evidence.py``). Items
with nothing a check can observe soundly (a rule stated in a sentence, what a short request draws, a drawing
in a plan that names no canvas or drawing area) get no check, and so do items without fields (an LLM's: the
rules know nothing of them), except an offline item stored before items carried fields, found by its whole
requirement text. An item its spec says no check can decide is listed in ``uncheckable`` with the reason
(``capabilities.EVIDENCE``), which its row keeps. Rows made by this rule say provider=offline like every offline row.
"""
from __future__ import annotations

import json
import re
from typing import Any

from schemas.rubric import DRAWING_EFFECT, MOTION_EFFECT, TEXT_EFFECT
from tasks.rubrics import text as T
from tasks.rubrics.check_locators import CANVAS, DRAWING, PAGE_TEXT, WORD_EDGE, by_id, present
from tasks.rubrics.checks_capability import capability_steps
from tasks.rubrics.offline_items import items_by_requirement
from tasks.rubrics.prompt_controls import Control
from tasks.rubrics.prompt_formats import line_pattern
from tasks.rubrics.prompt_spec import Spec, read_spec
from tasks.rubrics.vocab import CHECK_PAIR_KIND_WORDS, is_number, shares_subject

MOTION_WAIT_MS = 800  # how long a motion check lets the page run before comparing the canvas
TYPED_TEXT = "Hello World"
# Half a step (the browser snaps a value to the step), a hair more so that a value exactly half a step away
# still passes in floating point.
HALF_STEP = 0.51
# A number as stated, in a page's text: not part of a longer number before or after it.
_NO_NUMBER_BEFORE, _NO_DIGIT_AFTER = r"(?<![\d.])", r"(?![\d])"
_POINT, _MORE_ZEROS, _ANY_ZEROS = r"\.", "0*", r"(?:\.0*)?"
_GAP = r"\s*"  # a stated text's words, however the page spaces them
_ANY_DIGIT = r"\d"  # a display showing a number at all


def _tolerance(value: str, step: float | None) -> float:
    """Half a step, else one unit of the value's last stated decimal place."""
    if step:
        return step * HALF_STEP
    decimals = len(value.split(".", 1)[1]) if "." in value else 0
    return 10 ** -decimals


def number_pattern(value: str) -> str:
    """A pattern for the number as stated, written with more or fewer trailing zeros: 0.60 -> 0.6, 0.600."""
    whole, _, frac = value.strip().partition(".")
    frac = frac.rstrip("0")
    tail = (_POINT + frac + _MORE_ZEROS) if frac else _ANY_ZEROS
    return _NO_NUMBER_BEFORE + re.escape(whole) + tail + _NO_DIGIT_AFTER


def _value_equals(loc: dict[str, Any], value: str, step: float | None) -> dict[str, Any]:
    """An input's value equals a stated number, within half a step (the browser snaps values to the step)."""
    return {"expect": "number_relation", "left": {"read": loc}, "op": "eq", "right": {"const": float(value)},
            "tolerance": _tolerance(value.strip(), step)}


def text_shows(loc: dict[str, Any], value: str) -> dict[str, Any]:
    """A display shows the stated text or number ("NaN" where 22.7319 is stated fails, it is not unreadable)."""
    if is_number(value.strip()):
        return {"expect": "text", "target": loc, "matches": number_pattern(value)}
    return {"expect": "text", "target": loc, "matches": _GAP.join(re.escape(w) for w in value.split())}


def format_check(spec: Spec, display: str) -> list[dict[str, Any]] | None:
    """Each line of the display has the parts its stated line format sets apart (``prompt_formats``)."""
    stated = next((f for f in spec.formats if f.element == display), None)
    # Lines a script writes into child elements may be set apart by CSS, which their text does not show: such a
    # display is not read (the check finds nothing: no verdict), so a gap only the layout makes is never a finding.
    loc = by_id(display, ":not(:has(*))")
    return None if stated is None else [{"expect": "text", "target": loc, "matches": line_pattern(stated.template)}]


def control_check(c: Control) -> list[dict[str, Any]]:
    loc = by_id(c.id)
    if c.kind in ("checkbox", "radio") and c.default in ("checked", "unchecked"):
        return [present(by_id(c.id, ":checked" if c.default == "checked" else ":not(:checked)"))]
    steps = [present(loc)]
    if c.kind in ("range", "number") and c.default is not None:
        steps.append(_value_equals(loc, c.default, c.step))
    elif c.kind == "text" and c.default:
        steps.append({"expect": "value", "target": loc, "matches": re.escape(c.default)})
    if c.kind in ("range", "number") and c.min is not None and c.max is not None:
        for bound in (c.max, c.min):
            steps += [{"do": "fill", "target": loc, "value": f"{bound:g}"}, _value_equals(loc, f"{bound:g}", c.step)]
    return steps


def operate(c: Control) -> dict[str, Any] | None:
    """A user's action on ``c`` that changes its value from the stated default, or None when none is known."""
    loc = by_id(c.id)
    if c.kind in ("checkbox", "radio", "button"):
        return {"do": "click", "target": loc}
    if c.kind == "select":
        other = [o for o in c.options if o != c.default]
        return {"do": "select", "target": loc, "option": other[0]} if other else None
    if c.kind == "text":
        return {"do": "fill", "target": loc, "value": TYPED_TEXT if c.default != TYPED_TEXT else TYPED_TEXT + "!"}
    if c.min is None or c.max is None:
        return None
    default = float(c.default) if c.default and is_number(c.default) else None
    value = c.min if default is not None and abs(default - c.max) < 1e-9 else c.max
    return {"do": "fill", "target": loc, "value": f"{value:g}"}


def _decimals(v: float) -> int:
    text = f"{v:g}"
    return len(text.split(".", 1)[1]) if "." in text else 0


def readout_tolerance(v: float, step: float | None) -> float:
    """How far a display may be from the slider's value ``v``: half a step, or half a unit of one decimal place
    fewer than ``v`` has (a display may round 0.76 to 0.8, never show 0.5)."""
    return max(HALF_STEP * (step or 0.0), 0.5 * 10 ** -max(_decimals(v) - 1, 0))


def readout_check(c: Control, display: Control) -> list[dict[str, Any]]:
    """The display shows a number at load equal to the slider's value, and again once the slider is moved to the
    bound with the fewest decimals (other than the default): the two read from the page, not from the plan."""
    slider, shown = by_id(c.id), by_id(display.id)
    default = float(c.default) if c.default and is_number(c.default) else None
    same = lambda at: {"expect": "number_relation", "left": {"read": shown}, "op": "eq",  # noqa: E731
                       "right": {"read": slider}, "tolerance": readout_tolerance(at, c.step)}
    steps: list[dict[str, Any]] = [{"expect": "text", "target": shown, "matches": _ANY_DIGIT}]
    if default is not None:
        steps.append(same(default))
    bounds = sorted((b for b in (c.min, c.max) if b is not None and b != default), key=_decimals)
    if bounds:
        steps += [{"do": "fill", "target": slider, "value": f"{bounds[0]:g}"}, same(bounds[0])]
    return steps if len(steps) > 1 else []


def drawing_of(controls: list[Control], structured: bool = True) -> dict[str, Any] | None:
    """What a check watches for the drawing: a request's drawing is its one canvas; a plan that names a canvas
    or a drawing area, everything drawn (a plan's one canvas is seldom all it draws: a plot beside it, a
    diagram in SVG, and an app may draw in SVG what the plan puts on a canvas); else nothing."""
    if not structured:
        return CANVAS
    return DRAWING if any(c.kind in ("canvas", "area") for c in controls) else None


def _watched(c: Control | None, effect: list[str], drawn: dict[str, Any] | None) -> tuple[dict[str, Any], str] | None:
    """(locator, kind) of what a behaviour's check watches: the named output (the control's own first), the
    drawing, the page's text."""
    outs = [e[1:] for e in effect if e.startswith("#")]
    if outs and c is not None:
        own = [o for o in outs if shares_subject(c.id, o, CHECK_PAIR_KIND_WORDS)]
        return by_id((own or outs)[0]), "text"
    if (DRAWING_EFFECT in effect or MOTION_EFFECT in effect) and drawn is not None:
        return drawn, "canvas"
    if TEXT_EFFECT in effect and c is not None:
        return PAGE_TEXT, "text"
    return None


def behaviour_check(c: Control | None, key: str | None, effect: list[str],
                    drawn: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """Operating ``c`` (or pressing ``key``) changes what ``effect`` names."""
    watched = _watched(c, effect, drawn)
    action = {"do": "press", "key": key} if key is not None else operate(c) if c is not None else None
    if watched is None or action is None or (key is not None and watched[1] != "canvas"):
        return None
    loc, kind = watched
    change = {"expect": "canvas_changes" if kind == "canvas" else "text_changes", "target": loc, "since": "before"}
    return [{"do": "remember", "target": loc, "name": "before"}, action, change]


def motion_check(target: dict[str, Any] = CANVAS) -> list[dict[str, Any]]:
    """``target`` (the canvas, or every canvas and svg: one must change) a moment apart."""
    return [{"do": "remember", "target": target, "name": "before"}, {"do": "wait", "ms": MOTION_WAIT_MS},
            {"expect": "canvas_changes", "target": target, "since": "before"}]


def input_check() -> list[dict[str, Any]]:
    return [{"do": "remember", "target": CANVAS, "name": "before"},
            {"do": "click", "target": CANVAS, "position": [0.5, 0.5]},
            {"do": "drag", "target": CANVAS, "start": [0.3, 0.3], "end": [0.7, 0.6]}, {"do": "press", "key": "Space"},
            {"do": "press", "key": "ArrowUp"}, {"expect": "canvas_changes", "target": CANVAS, "since": "before"}]


def named_check(label: str, spec: Spec) -> list[dict[str, Any]] | None:
    """The element a sentence names by ``label`` is there: a button of that name, a field of that label."""
    n = next((n for n in spec.named if n.label == label), None)
    if n is None:
        return None
    name = WORD_EDGE + re.escape(n.label) + WORD_EDGE
    if n.kind == "button":
        return [present({"role": "button", "name": name})]
    if n.kind in ("text", "range", "select", "checkbox"):
        return [present({"label": name})]
    return None


def _named(spec: Spec, name: str | None) -> Control | None:
    """The query's element an item names as ``#id``."""
    return next((c for c in spec.controls if name and "#" + c.id == name), None)


def item_steps(item: dict[str, Any], spec: Spec, drawn: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The steps of ``item``'s check from its fields, or None when nothing can observe it soundly."""
    kind, effect = item.get("evidence_kind"), item.get("effect") or []
    element, trigger = _named(spec, item.get("element")), _named(spec, item.get("trigger"))
    if kind == "control_default" and element is not None:
        return control_check(element)
    if kind == "output_text" and element is not None and element.default:
        return [text_shows(by_id(element.id), element.default)]
    if kind == "output_format" and element is not None:
        return format_check(spec, element.id)
    if kind == "drawing_present" and element is not None:
        return [present(by_id(element.id))]
    if kind == "operate_control":
        return behaviour_check(trigger, None, effect, drawn)
    if kind == "press_key":
        return behaviour_check(None, item.get("trigger"), effect, drawn)
    if kind == "readout" and trigger is not None and element is not None:
        return readout_check(trigger, element) or None
    if kind == "motion_by_itself":  # a capability's motion may be on any canvas the page has
        return motion_check(DRAWING if DRAWING_EFFECT in effect else CANVAS)
    if kind == "answers_input":
        return input_check()
    if kind == "labelled_present" and item.get("element"):
        return named_check(item["element"], spec)
    return None


def offline_checks(v: dict[str, Any]) -> dict[str, Any]:
    items = json.loads(v["items"])
    spec = read_spec(v.get("expanded_query", ""))
    drawn = drawing_of(spec.controls, spec.structured)
    # Rubrics stored before items carried their fields: an offline item is found again by its own requirement
    # text (the rules' sentence, compared whole, never parsed), so re-running their checks loses none.
    stored = items_by_requirement(spec) if any(it.get("evidence_kind") is None for it in items) else {}
    out, uncheckable = [], []
    for it in items:
        known = stored.get(T.normalise(it["requirement"])) if it.get("evidence_kind") is None else None
        if known is not None:
            it = {**it, **known.structure()}
        steps = item_steps(it, spec, drawn) or capability_steps(it, spec)
        if steps:
            out.append({"item_id": it["id"], "check": {"steps": steps}})
        elif known is not None and known.uncheckable:
            uncheckable.append({"item_id": it["id"], "reason": known.uncheckable})
    return {"checks": out, "uncheckable": uncheckable}
