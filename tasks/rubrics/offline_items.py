"""The offline rubric items of a query (pure): what a user can see or do, read from its spec (``prompt_spec``).

Each item names the UI element it is about the way the query does (``#id`` when the query gives an id, else
its label) with the stated default, range and options; a behaviour item names what triggers it and what
should change; a motion item says it is motion over time. ``query_evidence`` is a verbatim span of the
query (the line that declares the element or states the behaviour). Items come in this order: each control and
then what operating it does and the display showing its value; outputs with a stated initial value; the line
formats stated for displays (``prompt_formats``); drawing areas; keys; motion. At most ``max_items`` are kept: by
``cap_rank`` first (what a check compares, then a control's stated default or range, then what is only looked
for), so that every control the plan names gets its compared items before any gets a presence item. A short request gets what
is drawn, what moves by itself and what answers input, since it names nothing else. A request in sentences gets one item per sentence; a sentence the offline
rules wrote (a synthesized query's capability, closer or default) takes its structure, or the reason no check
decides it, from the spec it was written from (``capabilities``).

The stages' offline rules read these items: requirements (one per item), modules (grouped by role),
decomposition (one candidate per item, scope and level from ``ROLES``, found again by its requirement text,
``items_by_requirement``, and carrying the item's ``structure()``: what decides it, as the rubric's fields
``evidence_kind``, ``element``, ``trigger``, ``effect``). The checks and the offline judge read those fields.

Run: ``spec_items(read_spec(query), max_items=20)``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from schemas.rubric import DRAWING_EFFECT, MOTION_EFFECT, TEXT_EFFECT
from tasks.rubrics import text as T
from tasks.rubrics.capabilities import ClauseSpec, Uncheckable, clause_evidence
from tasks.rubrics.prompt_controls import Control
from tasks.rubrics.prompt_formats import LineFormat
from tasks.rubrics.prompt_spec import Behaviour, Named, Spec, read_spec

# role -> (scope, rubric_level, requirement_type, module name, module kind)
ROLES: dict[str, tuple[str, str, str, str, str]] = {
    "control": ("initial_state", "core_module", "state", "Controls and their defaults", "state_system"),
    "output": ("initial_state", "correct_rule", "calculation", "Displayed values", "output_mechanism"),
    "format": ("initial_state", "rendering_effect", "output", "Displayed values", "output_mechanism"),
    "area": ("initial_state", "rendering_effect", "output", "Drawing areas", "output_mechanism"),
    "scene": ("initial_state", "core_module", "output", "What is drawn", "output_mechanism"),
    "named": ("initial_state", "core_module", "state", "Named controls", "state_system"),
    "shown": ("initial_state", "rendering_effect", "output", "What is shown", "output_mechanism"),
    "behaviour": ("dynamic", "core_module", "interaction", "Interactions", "interaction_workflow"),
    "key": ("dynamic", "core_module", "interaction", "Interactions", "interaction_workflow"),
    "readout": ("dynamic", "core_module", "interaction", "Interactions", "interaction_workflow"),
    "input": ("dynamic", "core_module", "interaction", "Interactions", "interaction_workflow"),
    "motion": ("dynamic", "rendering_effect", "output", "Motion", "output_mechanism"),
    "request_motion": ("dynamic", "core_module", "output", "Motion", "output_mechanism"),
    "rule": ("dynamic", "correct_rule", "rule", "Behaviour the request states", "interaction_workflow"),
}
# role -> the kind of evidence that decides its items (``schemas.rubric.EVIDENCE_KINDS``), carried on each item as
# ``evidence_kind``; a sentence's rule or what it says is shown ("shown", "rule") has no structure the rules know,
# so it carries none and its readers read its words (``tasks/env/rubric_evidence.py``).
EVIDENCE_OF_ROLE: dict[str, str] = {
    "control": "control_default", "output": "output_text", "area": "drawing_present", "scene": "shown_on_load",
    "named": "labelled_present", "format": "output_format", "behaviour": "operate_control", "key": "press_key",
    "readout": "readout", "motion": "motion_by_itself", "request_motion": "motion_by_itself", "input": "answers_input"}
# The cap on items per query (``spec_items``' ``max_items``) keeps items by rank, lowest first: a check that compares
# what a user does or sees (operating a control, a readout, a stated text, format or motion) decides more between
# working apps than a stated default, and that more than finding an element there (evidence kinds that only look
# for an element, or none: ``PRESENCE_KINDS``).
CAP_RANK = {"compared": 0, "stated": 1, "present": 2}
PRESENCE_KINDS = frozenset({"control_default", "drawing_present", "labelled_present", "shown_on_load", None})
KIND_WORDS = {"range": "slider", "number": "number input", "text": "text input", "checkbox": "checkbox",
              "radio": "radio button", "select": "dropdown", "button": "button", "canvas": "canvas",
              "area": "drawing area", "output": "display"}
_TRIGGER = {"range": "Moving the slider", "number": "Entering a number in", "text": "Typing into the text input",
            "checkbox": "Toggling the checkbox", "radio": "Choosing the radio button", "select": "Choosing another option in",
            "button": "Clicking the button"}


@dataclass(frozen=True)
class SpecItem:
    role: str
    requirement: str
    verification: str
    evidence: str
    control: Control | None = None
    behaviour: Behaviour | None = None
    named: Named | None = None
    display: Control | None = None  # the display showing ``control``'s value (a readout item)
    element: str | None = None  # what the item is about: "#id", a label (``schemas.rubric.STRUCTURE``)
    trigger: str | None = None  # what the user operates: "#id" of a control, or a key
    effect: tuple[str, ...] | None = None  # what should change: "#id" of an output, "drawing", "text", "motion"
    kind: str | None = None  # what decides it, where its spec says so rather than its role (a capability's)
    uncheckable: str | None = None  # why no check decides it (``capabilities.EVIDENCE``)

    @property
    def scope(self) -> str:
        return ROLES[self.role][0]

    @property
    def level(self) -> str:
        return ROLES[self.role][1]

    def structure(self) -> dict[str, object]:
        """The item's structure as the rubric's fields (``schemas.rubric.STRUCTURE``): all None for a role the
        rules know no structure of."""
        kind = self.kind or EVIDENCE_OF_ROLE.get(self.role)
        return {"evidence_kind": kind, "element": self.element, "trigger": self.trigger,
                "effect": list(self.effect) if self.effect is not None else None}


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:g}"


def _labelled(c: Control) -> str:
    return f' ("{c.label}")' if c.label else ""


def control_item(c: Control) -> SpecItem:
    """The initial-state item of a control: it is there, with its stated default, range and options."""
    word, parts = KIND_WORDS[c.kind], []
    if c.kind == "select" and c.options:
        parts.append("offering " + ", ".join(c.options[:6]))
    if c.default is not None:
        parts.append({"checkbox": "checked at first", "radio": "selected at first", "button": "active at first"}.get(
                     c.kind, f"set to {c.default}")
                     if c.default != "unchecked" else "not selected at first")
    if c.min is not None and c.max is not None:
        parts.append(f"with a range of {_fmt(c.min)} to {_fmt(c.max)}")
    req = f"The {word} #{c.id}{_labelled(c)} is on the page" + (", " + ", ".join(parts) if parts else "") + "."
    return SpecItem("control", req, f"Load the page; find #{c.id} and read its state without operating it.",
                    c.evidence, control=c, element=f"#{c.id}")


def effects_of(b: Behaviour) -> tuple[str, ...]:
    """What operating ``b``'s control or key changes, as an item's ``effect``: outputs by ``#id``, in order."""
    named = tuple(e if e in (DRAWING_EFFECT, TEXT_EFFECT) else f"#{e}" for e in b.effects)
    return named + ((MOTION_EFFECT,) if b.motion else ())


def _effect_words(b: Behaviour) -> str:
    if b.motion:
        return "sets the drawing in motion"
    outs = [f"#{e}" for e in b.effects if e not in (DRAWING_EFFECT, TEXT_EFFECT)]
    if outs:
        return "updates " + " and ".join(outs[:3])
    return "changes the drawing" if DRAWING_EFFECT in b.effects else "changes the text shown"


def behaviour_item(b: Behaviour) -> SpecItem:
    if b.key is not None:
        return SpecItem("key", f"Pressing {b.key} {_effect_words(b) if b.effects else 'changes what is shown'}.",
                        f"Press {b.key} and compare what is shown before and after.", b.evidence, behaviour=b,
                        trigger=b.key, effect=effects_of(b))
    c = b.control
    assert c is not None
    trigger = f"{_TRIGGER[c.kind]} #{c.id}{_labelled(c)}"
    return SpecItem("behaviour", f"{trigger} {_effect_words(b)}.",
                    f"Operate #{c.id} as a user would and compare what it should change before and after.",
                    b.evidence, control=c, behaviour=b, element=f"#{c.id}", trigger=f"#{c.id}",
                    effect=effects_of(b))


def readout_item(c: Control, display: Control) -> SpecItem:
    """The display the plan pairs with a slider shows its value, on load and once the slider is moved."""
    return SpecItem("readout", f"The display #{display.id} shows the value of the {KIND_WORDS[c.kind]} #{c.id}"
                    f"{_labelled(c)}, when the page loads and after it is moved.",
                    f"Read #{display.id} and #{c.id} on load, move #{c.id}, and read both again.", display.evidence,
                    control=c, display=display, element=f"#{display.id}", trigger=f"#{c.id}",
                    effect=(f"#{display.id}",))


def output_item(c: Control) -> SpecItem:
    return SpecItem("output", f'The display #{c.id} shows "{c.default}" when the page loads.',
                    f"Load the page and read the text of #{c.id}.", c.evidence, control=c, element=f"#{c.id}")


def format_item(f: LineFormat) -> SpecItem:
    """A display's lines set its values apart in the columns the plan states (``prompt_formats``)."""
    return SpecItem("format", f'Each line of the display #{f.element} sets its values apart as the plan states: '
                    f'"{f.template}".', f"Load the page and read the lines of #{f.element}: the values on each are set "
                    "apart by whitespace, as many as the stated format has.", f.evidence, element=f"#{f.element}")


def area_item(c: Control) -> SpecItem:
    return SpecItem("area", f"The {KIND_WORDS[c.kind]} #{c.id} is visible when the page loads.",
                    f"Load the page and look for #{c.id} on screen.", c.evidence, control=c, element=f"#{c.id}")


def _plan_items(spec: Spec) -> list[SpecItem]:
    by_control = {b.control.id: b for b in spec.behaviours if b.control is not None}
    out: list[SpecItem] = []
    for c in spec.controls:
        if c.is_control:
            out.append(control_item(c))
            if c.id in by_control:
                out.append(behaviour_item(by_control[c.id]))
            if c.id in spec.readouts:
                out.append(readout_item(c, spec.readouts[c.id]))
    out += [output_item(c) for c in spec.controls if c.kind == "output" and c.default]
    out += [format_item(f) for f in spec.formats]
    out += [area_item(c) for c in spec.controls if c.kind in ("canvas", "area")]
    out += [behaviour_item(b) for b in spec.behaviours if b.key is not None]
    out += [SpecItem("motion", "The drawing moves by itself over time.", "Load the page, do nothing, and compare "
                     "the drawing a moment apart.", spec.motions[0])] if spec.motions else []
    if not out and spec.first_line:  # a plan that declares nothing by id still asks for a page
        out.append(SpecItem("scene", "The page shows what the plan describes when it loads.",
                            "Load the page and look: the page is not blank.", spec.first_line))
    return out


def _request_items(spec: Spec) -> list[SpecItem]:
    """A short request: what is drawn, what moves by itself, what answers input (nothing else is named)."""
    r = spec.request or ""
    out = [SpecItem("scene", f"The page draws the requested scene ({r}) when it loads.",
                    "Load the page and look: something of the request is drawn, the page is not blank.", r)]
    if spec.motions:
        out.append(SpecItem("request_motion", f"Something on the page moves by itself over time ({r}).",
                            "Load the page, do nothing, and compare what is shown a moment apart.", spec.motions[0]))
    if spec.answers_input:
        out.append(SpecItem("input", f"The scene answers input: a key press, click or drag changes what is shown ({r}).",
                            "Press keys, click and drag on the scene; compare what is shown before and after.",
                            spec.answers_input))
    return out + [behaviour_item(b) for b in spec.behaviours if b.key is not None]


def _decided(item: SpecItem, found: ClauseSpec | None) -> SpecItem:
    """A clause's item with what its spec says decides it: the structure of a check, or why there is none."""
    if found is None:
        return item
    ev = found.evidence
    if isinstance(ev, Uncheckable):
        return replace(item, uncheckable=ev.reason)
    return replace(item, kind=ev.kind, element=ev.element, trigger=ev.trigger, effect=ev.effect)


def _sentence_items(spec: Spec) -> list[SpecItem]:
    """A request in sentences: the elements they name, then each sentence a user can check."""
    out = [SpecItem("named", f'The page has a {KIND_WORDS.get(n.kind, n.kind)} labelled "{n.label}".',
                    f'Load the page and look for a {KIND_WORDS.get(n.kind, n.kind)} named "{n.label}".', n.evidence,
                    named=n, element=n.label) for n in spec.named]
    for c, found in zip(spec.clauses, clause_evidence(spec.clauses)):
        role, rtype = T.classify(c.text)
        if role == "app":
            name = T.app_title(c.evidence) or c.text
            out.insert(0, SpecItem("scene", f"The page shows the {name} when it loads.",
                                   "Load the page and look: the requested app is there, the page is not blank.",
                                   c.evidence))
            continue
        if role == "constraint":
            continue
        scoped = "shown" if rtype == "output" and not T.is_conditional(c.text) else "rule"
        out.append(_decided(SpecItem(scoped, T.sentence(c.text), f"Check on the page: {T.lower_first(c.text)}.",
                                     c.evidence), found))
    out += [SpecItem("motion", "The drawing moves by itself over time.", "Load the page, do nothing, and compare "
                     "what is shown a moment apart.", spec.motions[0])] if spec.motions else []
    return out + [behaviour_item(b) for b in spec.behaviours if b.key is not None]


def cap_rank(item: SpecItem) -> int:
    """Which items the cap keeps first (``CAP_RANK``): 0, a check compares what a user does or sees with what the
    query states; 1, a control's stated default or range (``Control.states_value``); 2, only looked for."""
    kind = item.structure()["evidence_kind"]
    if kind not in PRESENCE_KINDS:
        return CAP_RANK["compared"]
    stated = kind == "control_default" and item.control is not None and item.control.states_value
    return CAP_RANK["stated" if stated else "present"]


def spec_items(spec: Spec, max_items: int | None = None) -> list[SpecItem]:
    """The query's items, duplicates (same requirement) dropped, at most ``max_items``: the first by ``cap_rank``,
    then the query's order; those kept stay in the query's order (see the docstring)."""
    items = _plan_items(spec) if spec.structured else _request_items(spec) if spec.request is not None else \
        _sentence_items(spec)
    firsts: dict[str, SpecItem] = {}
    for i in items:
        firsts.setdefault(T.normalise(i.requirement), i)
    out = list(firsts.values())
    if max_items is None or len(out) <= max_items:
        return out
    kept = sorted(sorted(range(len(out)), key=lambda n: (cap_rank(out[n]), n))[:max_items])
    return [out[n] for n in kept]


def items_by_requirement(spec: Spec | str) -> dict[str, SpecItem]:
    """normalised requirement -> its spec item (of a spec, or of an expanded query's), for the later stages'
    rules to find an item's spec again by its requirement text."""
    spec = read_spec(spec) if isinstance(spec, str) else spec
    return {T.normalise(i.requirement): i for i in spec_items(spec)}
