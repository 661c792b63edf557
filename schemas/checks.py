"""The check language (version 1): executable checks of rubric items, run in the browser.

A check is JSON validated by these pydantic models. It holds no JavaScript: only ``steps``, each
either an action (``do``: click, dblclick, fill, select, press, drag, hover, wait, resize, reload, and
``remember``, which reads a text, number or canvas picture for later comparison) or an expectation
(``expect``: visible, hidden, text, text_changes, text_same, number_changes, number_relation, count,
canvas_changes, no_error, value, enabled, disabled).

Checks are written from the expanded query before any implementation exists, so targets are
**semantic locators**: a role with an accessible-name pattern, a visible-text pattern, a label or a
placeholder; a CSS selector only as a last resort; a canvas with positions relative to its box.
A locator that finds nothing makes the check *inconclusive*, never *failed*: the check could not
find what it looks for, which says nothing certain about the app.

Every step has a bounded timeout (``timeout_ms`` up to ``MAX_STEP_TIMEOUT_MS``); a check has at most
``MAX_STEPS`` steps; numbers are combined only by +, -, *, / (``Arith``), nested at most
``MAX_EXPR_DEPTH`` deep.

Example (the quiz of the attribution tests, tests/fixtures/checks/quiz_accuracy_check.json: answer
four questions; accuracy must equal correct answers (score / 10) over answered questions, in %)::

    {"version": "1", "steps": [
      {"do": "select", "target": {"role": "combobox"}, "option": "One Pair"},
      {"do": "click", "target": {"role": "button", "name": "submit"}},
      ... (three more answers) ...,
      {"expect": "number_relation", "left": {"read": {"text": "^accuracy"}}, "op": "eq",
       "right": {"op": "div", "args": [{"op": "mul", "args": [{"const": 10}, {"read": {"text": "^score"}}]},
                                       {"const": 4}]}, "tolerance": 1}]}
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

CHECKS_VERSION: Final = "1"
MAX_STEPS = 30
MAX_STEP_TIMEOUT_MS = 5000
MAX_WAIT_MS = 5000
MAX_PATTERN_CHARS = 200
MAX_EXPR_DEPTH = 4
MAX_TEXT_CHARS = 500
VIEWPORT_LIMITS = (200, 3840)  # resize bounds, pixels
STATUSES = ("passed", "failed", "inconclusive")
ROLES = ("alert", "button", "checkbox", "combobox", "dialog", "grid", "gridcell", "heading", "img", "link", "list",
         "listbox", "listitem", "menu", "menuitem", "option", "progressbar", "radio", "region", "row", "cell",
         "columnheader", "rowheader", "searchbox", "slider", "spinbutton", "status", "switch", "tab", "table",
         "tablist", "tabpanel", "textbox", "timer", "toolbar", "tree", "treeitem", "meter", "log", "form",
         "navigation", "main", "article", "paragraph", "figure")
KEY = re.compile(r"^((Control|Shift|Alt|Meta)\+)*([A-Za-z0-9]|Enter|Escape|Tab|Backspace|Delete|Space|ArrowUp|"
                 r"ArrowDown|ArrowLeft|ArrowRight|Home|End|PageUp|PageDown|F[1-9]|F1[0-2]| )$")


def _pattern(p: str | None) -> str | None:
    if p is None:
        return p
    if len(p) > MAX_PATTERN_CHARS:
        raise ValueError(f"pattern longer than {MAX_PATTERN_CHARS} characters; shorten it")
    if re.search(r"\(\?(P|[aiLmsux]+\))", p):  # Python-only syntax: the browser reads patterns as JS regexes
        raise ValueError(f"pattern {p!r} uses Python-only syntax ((?P<..>) or inline flags); use plain groups, "
                         "matching is case-insensitive already")
    try:
        re.compile(p)
    except re.error as e:
        raise ValueError(f"pattern {p!r} is not a regular expression ({e}); escape special characters") from None
    return p


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


Rel = Annotated[float, Field(ge=0.0, le=1.0)]


class Locator(_Model):
    """Exactly one way to find the target; patterns are case-insensitive regular expressions."""

    role: str | None = Field(None, description="ARIA role, e.g. button, textbox, status")
    name: str | None = Field(None, description="Accessible-name pattern (with role only)")
    text: str | None = Field(None, description="Visible-text pattern")
    label: str | None = Field(None, description="Label-text pattern of a form control")
    placeholder: str | None = Field(None, description="Placeholder pattern of an input")
    css: str | None = Field(None, max_length=MAX_PATTERN_CHARS, description="CSS selector: last resort only")
    canvas: bool = Field(False, description="The (nth) visible canvas element")
    drawing: bool = Field(False, description="Everything drawn on the page: each visible canvas and svg, wherever "
                          "the app put them (for remember and canvas_changes: it changed when any of them did)")
    nth: int = Field(0, ge=0, le=50, description="Which match, when several match")

    _norm = field_validator("name", "text", "label", "placeholder")(lambda v: _pattern(v))

    @model_validator(mode="after")
    def _one(self) -> "Locator":
        ways = [k for k in ("role", "text", "label", "placeholder", "css") if getattr(self, k) is not None]
        ways += [k for k in ("canvas", "drawing") if getattr(self, k)]
        if len(ways) != 1:
            raise ValueError("a locator uses exactly one of role, text, label, placeholder, css, canvas, drawing; got "
                             f"{ways or 'none'}")
        if self.name is not None and self.role is None:
            raise ValueError("'name' (accessible-name pattern) goes with 'role'; add a role or use 'text'")
        if self.role is not None and self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}; use one of {', '.join(ROLES)}")
        return self

    def describe(self) -> str:
        if self.role:
            return f"role={self.role}" + (f" name~/{self.name}/" if self.name else "") + (f" #{self.nth}" if self.nth else "")
        for k in ("text", "label", "placeholder", "css"):
            if getattr(self, k) is not None:
                return f"{k}~/{getattr(self, k)}/" + (f" #{self.nth}" if self.nth else "")
        return "the drawing (every canvas and svg)" if self.drawing else f"canvas #{self.nth}"


class _Step(_Model):
    timeout_ms: int | None = Field(None, ge=50, le=MAX_STEP_TIMEOUT_MS, description="This step's limit")


# -- actions ------------------------------------------------------------------------------------------
class Click(_Step):
    do: Literal["click"]
    target: Locator
    position: tuple[Rel, Rel] | None = Field(None, description="Relative (x, y) in the target's box (canvas)")


class DblClick(_Step):
    do: Literal["dblclick"]
    target: Locator
    position: tuple[Rel, Rel] | None = None


class Fill(_Step):
    do: Literal["fill"]
    target: Locator
    value: str = Field(max_length=MAX_TEXT_CHARS)


class Select(_Step):
    do: Literal["select"]
    target: Locator
    option: str = Field(max_length=MAX_TEXT_CHARS, description="The option's label (or value)")


class Press(_Step):
    do: Literal["press"]
    key: str = Field(description="Enter, ArrowUp, a, Shift+A, Control+z, ...")
    target: Locator | None = Field(None, description="Focus this first; none: the page")

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        if not KEY.match(v):
            raise ValueError(f"key {v!r} is not a key name; use e.g. Enter, ArrowLeft, a, Shift+A, Control+z")
        return v


class Drag(_Step):
    do: Literal["drag"]
    target: Locator
    to: Locator | None = Field(None, description="Drop target; none: within the target's own box")
    start: tuple[Rel, Rel] = (0.5, 0.5)
    end: tuple[Rel, Rel] = (0.5, 0.5)


class Hover(_Step):
    do: Literal["hover"]
    target: Locator


class Wait(_Step):
    do: Literal["wait"]
    ms: int = Field(ge=0, le=MAX_WAIT_MS)


class Resize(_Step):
    do: Literal["resize"]
    width: int = Field(ge=VIEWPORT_LIMITS[0], le=VIEWPORT_LIMITS[1])
    height: int = Field(ge=VIEWPORT_LIMITS[0], le=VIEWPORT_LIMITS[1])


class Reload(_Step):
    """Load the app's document again in the same page: what it stored in the page's storage stays, what it
    remembered in memory does not (the check's own remembered readings do)."""

    do: Literal["reload"]


class Remember(_Step):
    """Read the target now (text, the number in it, or a canvas picture) under ``name``."""

    do: Literal["remember"]
    target: Locator
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,30}$")
    pattern: str | None = Field(None, description="Pattern whose first group (or match) is the number")

    _p = field_validator("pattern")(lambda v: _pattern(v))


# -- numbers ------------------------------------------------------------------------------------------
class Const(_Model):
    const: float


class Read(_Model):
    read: Locator
    pattern: str | None = Field(None, description="Pattern whose first group (or match) is the number; "
                                                  "default: the first number in the text")
    _p = field_validator("pattern")(lambda v: _pattern(v))


class Ref(_Model):
    ref: str = Field(description="A number remembered earlier in this check")


class Arith(_Model):
    op: Literal["add", "sub", "mul", "div"]
    args: tuple["Num", "Num"]


Num = Union[Const, Read, Ref, Arith]
Arith.model_rebuild()


def expr_depth(n: Num) -> int:
    return 1 + max(expr_depth(a) for a in n.args) if isinstance(n, Arith) else 1


def expr_reads(n: Num) -> list[Read | Ref]:
    return [r for a in n.args for r in expr_reads(a)] if isinstance(n, Arith) else [] if isinstance(n, Const) else [n]


# -- expectations -------------------------------------------------------------------------------------
class Visible(_Step):
    expect: Literal["visible"]
    target: Locator


class Hidden(_Step):
    expect: Literal["hidden"]
    target: Locator


class Absent(_Step):
    """A precondition, never a failure: nothing the target finds is shown when the step is read. Where something
    is, the check does not apply to this page (inconclusive): a quiz waiting behind its Start button, whose Skip
    changes nothing yet, is a design the query may leave to the app."""
    expect: Literal["absent"]
    target: Locator


class TextMatches(_Step):
    expect: Literal["text"]
    target: Locator
    matches: str
    _p = field_validator("matches")(lambda v: _pattern(v))


class TextChanges(_Step):
    expect: Literal["text_changes"]
    target: Locator
    since: str = Field(description="Name of a remember step on this target")


class TextSame(_Step):
    """The target shows the text remembered under ``since`` (a run reproduced, a state restored)."""

    expect: Literal["text_same"]
    target: Locator
    since: str = Field(description="Name of a remember step on this target")


class NumberChanges(_Step):
    expect: Literal["number_changes"]
    target: Locator
    since: str
    direction: Literal["any", "up", "down"] = "any"
    pattern: str | None = None
    _p = field_validator("pattern")(lambda v: _pattern(v))


class NumberRelation(_Step):
    expect: Literal["number_relation"]
    left: Num
    op: Literal["eq", "ne", "lt", "le", "gt", "ge"]
    right: Num
    tolerance: float = Field(0.0, ge=0.0, description="eq/ne: |left - right| <= tolerance counts as equal")

    @model_validator(mode="after")
    def _depth(self) -> "NumberRelation":
        if max(expr_depth(self.left), expr_depth(self.right)) > MAX_EXPR_DEPTH:
            raise ValueError(f"number expressions nest at most {MAX_EXPR_DEPTH} deep; simplify")
        if not any(expr_reads(x) for x in (self.left, self.right)):
            raise ValueError("a number_relation must read at least one number from the page")
        return self


class Count(_Step):
    expect: Literal["count"]
    target: Locator
    at_least: int = Field(ge=1, le=10000)


class CanvasChanges(_Step):
    expect: Literal["canvas_changes"]
    target: Locator
    since: str
    region: tuple[Rel, Rel, Rel, Rel] = Field((0.0, 0.0, 1.0, 1.0), description="x0, y0, x1, y1, relative")
    min_changed: float = Field(0.001, gt=0.0, le=1.0, description="Share of region pixels that must differ")

    @model_validator(mode="after")
    def _region(self) -> "CanvasChanges":
        x0, y0, x1, y1 = self.region
        if x1 <= x0 or y1 <= y0:
            raise ValueError(f"region {self.region} is empty; give x0 < x1 and y0 < y1")
        return self


class NoError(_Step):
    expect: Literal["no_error"]


class Value(_Step):
    expect: Literal["value"]
    target: Locator
    matches: str
    _p = field_validator("matches")(lambda v: _pattern(v))


class Enabled(_Step):
    expect: Literal["enabled"]
    target: Locator


class Disabled(_Step):
    expect: Literal["disabled"]
    target: Locator


ACTIONS = {get_args(c.model_fields["do"].annotation)[0]: c
           for c in (Click, DblClick, Fill, Select, Press, Drag, Hover, Wait, Resize, Reload, Remember)}
EXPECTATIONS = {get_args(c.model_fields["expect"].annotation)[0]: c
                for c in (Visible, Hidden, Absent, TextMatches, TextChanges, TextSame, NumberChanges, NumberRelation,
                          Count, CanvasChanges, NoError, Value, Enabled, Disabled)}


def _kind(v: Any) -> str | None:
    if isinstance(v, dict):
        k = v.get("do") if "do" in v else v.get("expect")
        return f"do:{k}" if "do" in v else f"expect:{k}" if "expect" in v else None
    return f"do:{v.do}" if hasattr(v, "do") else f"expect:{v.expect}" if hasattr(v, "expect") else None


if TYPE_CHECKING:  # the union below, spelled out: a type checker cannot read one built from ACTIONS at run time
    Step = Union[Click, DblClick, Fill, Select, Press, Drag, Hover, Wait, Resize, Reload, Remember, Visible,
                 Hidden, Absent, TextMatches, TextChanges, TextSame, NumberChanges, NumberRelation, Count,
                 CanvasChanges, NoError, Value, Enabled, Disabled]
else:
    Step = Annotated[Union[tuple(Annotated[c, Tag(f"do:{k}")] for k, c in ACTIONS.items()) +
                           tuple(Annotated[c, Tag(f"expect:{k}")] for k, c in EXPECTATIONS.items())],
                     Discriminator(_kind, custom_error_type="unknown_step",
                                   custom_error_message="each step needs 'do' (one of " + ", ".join(ACTIONS) +
                                   ") or 'expect' (one of " + ", ".join(EXPECTATIONS) + ")")]


def step_kind(step: Any) -> str:
    return getattr(step, "do", None) or getattr(step, "expect")


class Check(_Model):
    """One item's executable check: actions and expectations in order, in a fresh page of the app."""

    version: Literal["1"] = CHECKS_VERSION
    steps: list[Step] = Field(min_length=1, max_length=MAX_STEPS)

    @model_validator(mode="after")
    def _sound(self) -> "Check":
        if not any(hasattr(s, "expect") for s in self.steps):
            raise ValueError("a check needs at least one 'expect' step; actions alone verify nothing")
        names: set[str] = set()
        for i, s in enumerate(self.steps):
            used = [s.since] if hasattr(s, "since") else []
            if isinstance(s, NumberRelation):
                used += [r.ref for x in (s.left, s.right) for r in expr_reads(x) if isinstance(r, Ref)]
            for u in used:
                if u not in names:
                    raise ValueError(f"step {i} ({step_kind(s)}) uses {u!r}, which no earlier remember step defines")
            if isinstance(s, Remember):
                names.add(s.name)
        return self


class ItemCheck(_Model):
    """A check with the rubric item it verifies (the ``rubric_checks`` LLM output, per item)."""

    item_id: str
    check: Check


class CheckSet(_Model):
    """The rubric_checks stage's LLM output: a check for each dynamic item and the initial-state items
    where one fits. Validation context ``{"valid_ids": set}`` makes unknown item ids an error."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    checks: list[dict[str, Any]] = Field(default_factory=list,
                                         description="[{item_id, check}]; each check is validated on its own "
                                                     "so one bad check drops only itself")
    uncheckable: list[dict[str, Any]] = Field(default_factory=list,
                                              description="[{item_id, reason}]: items no check can decide, and why")


def parse_check(data: Any) -> Check:
    """A Check from JSON text or a dict; raises ValueError naming the first problems and the fix."""
    from pydantic import ValidationError

    try:
        return Check.model_validate_json(data) if isinstance(data, (str, bytes)) else Check.model_validate(data)
    except ValidationError as e:
        msgs = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'check'}: {err['msg']}" for err in e.errors()[:4])
        raise ValueError(f"not a valid check (language v{CHECKS_VERSION}): {msgs}; see schemas/checks.py") from None
