"""What a query asks a user to see and do, read from its structure (pure): the offline rubric rules' reading.

Two shapes, both from the query as written:
- a **plan** (headings, lists: InteractScience's implementation plans): the elements it declares by id
  (``prompt_controls``), the behaviours its lines give them (a line naming a control with what then changes:
  an output it names, the drawing, a text), keys it names, motion it says happens by itself, and the line
  formats it states for a display's text (``prompt_formats``);
- a **request** in a sentence or a few (``"a bouncing DVD logo"``): what is drawn, what moves by itself,
  what answers input, and the UI elements its clauses name ("a Start button", "a seed field").

Format constraints ("a single HTML file", "use HTML/CSS/JS", "p5.js from a CDN") and code samples are read
too, but only to be left out: they are the format gate's business, never rubric items.

Run: ``read_spec(query)``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from schemas.rubric import DRAWING_EFFECT, TEXT_EFFECT
from tasks.rubrics import text as T
from tasks.rubrics.prompt_controls import Control, controls, mentions
from tasks.rubrics.prompt_formats import LineFormat, stated_formats
from tasks.rubrics.prompt_outline import Node, Outline, outline, plain, span
from tasks.rubrics.vocab import (MOTION, NO_EFFECT, PLAN_MOTION, PLAN_PROMPTED, PLAN_TRIGGER, QUERY_BY_ITSELF,
                                 REQUEST_ANSWERS_INPUT, SHOWS_VALUE_WORDS, id_shape, id_stem, id_words, says_start,
                                 start_name)

FORMAT = re.compile(r"\b(single[- ](?:self-contained\s+)?(?:html\s+)?file|self-contained|one\s+(?:html\s+)?file|"
                    r"html\s*(?:/|,|and)\s*css|css\s*(?:/|and)\s*(?:js|javascript)|vanilla\s+(?:js|javascript)|"
                    r"no\s+external|without\s+(?:any\s+)?(?:external|frameworks?|libraries|build)|from\s+a\s+cdn|"
                    r"via\s+(?:a\s+)?cdn|cdn\b|<script|<!doctype|inline\s+(?:css|js|script)|code\s+block|markdown)",
                    re.I)
_INTERACTION_SECTION = re.compile(r"interact|logic|behaviou?r|event|user action|controls? (?:logic|behaviou?r)", re.I)
# The plan says the drawing changes right away: a redraw, or a drawn thing that is updated, moved or recomputed
# (a "trail" that shows only once something moves is not a change a user sees on a page at rest).
_DRAWN = r"(?:canvas|plot|chart|graph|scene|visuali[sz]ation|drawing|diagram|sketch|geometry|curve|line|marker|point|" \
         r"shape|polygon|bars?|pendulum|piston|arrow|vector|circle|triangle|grid|image)"
_DRAWING = re.compile(r"\b(re-?draw\w*|re-?render\w*|re-?plot\w*|" + _DRAWN + r"s?\b[^.\n]{0,40}\b(?:is|are|gets?)\s+"
                      r"(?:updated|redrawn|re-rendered|refreshed|recomputed|recalculated|moved|changed)|"
                      r"(?:updat\w*|chang\w*|mov\w*|recomput\w*|recalculat\w*|refresh\w*)\s+(?:the\s+)?(?:\w+\s+){0,2}"
                      + _DRAWN + r"|draw(?:s|ing)?\b[^.\n]{0,60}?\b(?:on|onto|into)\s+(?:the\s+)?(?:[\"'\w-]+\s+){0,2}"
                      + _DRAWN + r")\b", re.I)
# A text the plan says is shown anew (without naming its element): the page's text is then what changes.
_TEXT = re.compile(r"\b(text\s*content|readout|<span>|`span`|(?:value|number|text|label)s?\s+(?:is|are)\s+(?:displayed|"
                   r"shown|updated)|displays?\s+(?:the|its)\s+(?:current|new|updated)?\s*value)\b", re.I)
# "all controls", "any slider", and "any change in the control panel's inputs", "any change to a slider's value"
_GLOBAL = re.compile(r"\b(?:(?:any|all|every|each)\s+(?:of\s+the\s+)?|any\s+change\s+(?:in|to|of)\s+(?:any\s+"
                     r"(?:of\s+the\s+)?|the\s+|an?\s+|these\s+)?(?:[\w-]+\s+)??(?:[\w-]+'s\s+)?)(?P<what>controls?|"
                     r"inputs?|sliders?|parameters?|control values?)\b", re.I)
_KEY = re.compile(r"\b(?:press(?:es|ing)?|hit(?:s|ting)?|tap(?:s|ping)?|using|use|with)\s+(?:the\s+)?(?:[\"'`]?"
                  r"(?P<name>arrow\s+keys?|(?:left|right|up|down)\s+arrow(?:\s+keys?)?|space\s*(?:bar|key)?|spacebar|"
                  r"enter\s+key|return\s+key|escape|esc\s+key|wasd)[\"'`]?|[\"'`](?P<char>[A-Za-z0-9])[\"'`]\s+key)\b", re.I)
_KEY_NAMES = {"arrow keys": "ArrowRight", "arrow key": "ArrowRight", "left arrow": "ArrowLeft", "right arrow": "ArrowRight",
              "up arrow": "ArrowUp", "down arrow": "ArrowDown", "space": "Space", "spacebar": "Space",
              "space bar": "Space", "space key": "Space", "enter": "Enter", "return": "Enter", "escape": "Escape",
              "esc": "Escape", "wasd": "d"}
_KEYS_SUFFIX = re.compile(r"\s+keys?$")  # "arrow keys" -> "arrow"
_NAMED_UI = re.compile(r"\b(?:an?|the)\s+(?P<label>(?:[\w'-]+\s+){0,3}?)(?P<kind>button|slider|field|input|dropdown|"
                       r"checkbox|toggle|search box|text box|textarea|timer|counter)s?\b", re.I)
_LABELLED_BUTTONS = re.compile(r"\b(?P<labels>[A-Z][\w-]*(?:(?:,\s*|\s+(?:and|or)\s+)[A-Z][\w-]*)*)\s+buttons?\b")
_LABEL_LIST_SEP = re.compile(r",\s*|\s+(?:and|or)\s+")  # "Start, Stop and Reset"
_QUOTED = re.compile(r"[\"“']([A-Z][\w .'-]{0,24})[\"”']")
_UI_KIND = {"button": "button", "slider": "range", "field": "text", "input": "text", "dropdown": "select",
            "checkbox": "checkbox", "toggle": "checkbox", "search box": "text", "text box": "text",
            "textarea": "text", "timer": "output", "counter": "output"}
_SHOWS_VALUE = re.compile(r"\b(values?|shows?|showing|displays?|displaying|reflects?|readouts?|current)\b", re.I)
# What joins a request to the format constraint it ends with: "a Pong game in a single HTML file".
_FORMAT_LEAD_IN = re.compile(r"(?:[\s,;:(-]|\b(?:in|as|using|with|on|into|via|inside|an?|the|one)\b)*$")
SHORT_REQUEST_CHARS = 300
SHORT_FRAME = " (as one web page)"  # how the offline expansion frames a request under its minimum length


@dataclass(frozen=True)
class Behaviour:
    """Operating ``control`` (or pressing ``key``) changes ``effects``: output ids, "drawing" or "text"."""

    evidence: str
    control: Control | None = None
    key: str | None = None
    effects: tuple[str, ...] = ()
    motion: bool = False  # the line says operating it starts motion (play, start)


@dataclass(frozen=True)
class Named:
    """A UI element a sentence names without an id: "a Start button", "the seed field"."""

    kind: str
    label: str
    evidence: str


@dataclass
class Spec:
    structured: bool
    request: str | None  # the request itself, when it is a short one
    controls: list[Control] = field(default_factory=list)  # controls, outputs, drawing areas (by id)
    behaviours: list[Behaviour] = field(default_factory=list)
    motions: list[str] = field(default_factory=list)  # evidence of motion that happens by itself
    named: list[Named] = field(default_factory=list)
    clauses: list[T.Clause] = field(default_factory=list)  # a request's other sentences, format ones left out
    answers_input: str | None = None  # evidence that a short request is something to play or operate
    constraints: list[str] = field(default_factory=list)  # format constraints seen (never items)
    first_line: str | None = None  # a plan's first line that is not a heading (what it is about)
    readouts: dict[str, Control] = field(default_factory=dict)  # slider id -> the display showing its value
    formats: list[LineFormat] = field(default_factory=list)  # the line formats the plan states for its displays


def readouts(ctrls: list[Control], query: str) -> dict[str, Control]:
    """slider (or number input) id -> the one display that shows its value: an output whose id is about the
    same thing (``slider-length`` / ``length-value``) and that the query says shows a value: its id or a line
    naming it says so, or it is named like a display that does ("displays like ``label-radius``"). A slider
    with two such displays, or a display two sliders could own, gets none."""
    sliders = [c for c in ctrls if c.kind in ("range", "number") and id_stem(c.id)]
    outputs = [c for c in ctrls if c.kind == "output" and id_stem(c.id)]
    pairs: dict[str, Control] = {}
    for s in sliders:
        own = [o for o in outputs if id_stem(o.id) == id_stem(s.id)]
        if len(own) == 1 and sum(id_stem(t.id) == id_stem(s.id) for t in sliders) == 1:
            pairs[s.id] = own[0]
    lines = query.splitlines()
    said = {o.id for o in pairs.values() if id_words(o.id.lower()) & SHOWS_VALUE_WORDS
            or any(_SHOWS_VALUE.search(line.replace(o.id, " ")) for line in lines if mentions(line, o.id))}
    shapes = {id_shape(o.id) for o in pairs.values() if o.id in said}
    return {s: o for s, o in pairs.items() if o.id in said or id_shape(o.id) in shapes}


def _effects(text: str, trigger: Control, spec_controls: list[Control],
             shown: dict[str, Control] | None = None) -> tuple[str, ...]:
    """What a behaviour's lines say changes: the outputs they name, the drawing, a text (in that order). The
    display of another slider's value (``shown``: slider id -> display) is not what operating this one changes."""
    others = {o.id for s, o in (shown or {}).items() if s != trigger.id}
    named = [c.id for c in spec_controls if c.kind == "output" and c.id != trigger.id and c.id not in others
             and mentions(text, c.id)]
    drawn = any(c.kind in ("canvas", "area") and mentions(text, c.id) for c in spec_controls) or \
        bool(_DRAWING.search(text))
    return tuple(named + ([DRAWING_EFFECT] if drawn else []) + ([TEXT_EFFECT] if _TEXT.search(text) and not named else []))


def _behaviour_nodes(ol: Outline, ctrls: list[Control]) -> list[tuple[Node, list[Control]]]:
    """Lines that name a control as what the user operates, with the controls they name (at most three)."""
    out = []
    for n in ol.nodes:
        named = [c for c in ctrls if c.is_control and mentions(n.text, c.id)]
        if not named or len(named) > 3:
            continue
        in_logic = _INTERACTION_SECTION.search(n.section) is not None
        if in_logic or (PLAN_TRIGGER.search(plain(n.text)) and n.children):
            out.append((n, named))
    return out


_CALL = re.compile(r"`?\b([A-Za-z_]\w{2,40})\(\)`?")
_LEADING_CALL = re.compile(r"\W*(\w+)\(")  # a line that starts with a call: "`updatePlot()`: ..."


def _called(ol: Outline, text: str) -> str:
    """What the plan says of the functions ``text`` calls (``updatePlot()``): the lines under a line naming the
    function as what it describes (the function's own heading or list item), one call deep."""
    names = set(_CALL.findall(text))
    said = [n for n in ol.nodes if n.children and (m := _LEADING_CALL.match(plain(n.text))) and m.group(1) in names]
    return "\n".join(n.subtree_text() for n in said if n.subtree_text() not in text)


def behaviours(ol: Outline, ctrls: list[Control], shown: dict[str, Control] | None = None) -> list[Behaviour]:
    """One behaviour per control the plan says what operating does (the first line saying so is its evidence);
    what the plan says of all controls at once holds for each of them too."""
    by_control: dict[str, tuple[Node, str]] = {}
    for n, named in _behaviour_nodes(ol, ctrls):
        for c in named:
            if c.id not in by_control:
                by_control[c.id] = (n, n.subtree_text())
            else:
                first, text = by_control[c.id]
                by_control[c.id] = (first, text + "\n" + n.subtree_text())
    said_of_all = [(n, m) for n in ol.nodes if (m := _GLOBAL.search(plain(n.text))) and
                   _INTERACTION_SECTION.search(n.section)]
    out = []
    for c in ctrls:
        # operating these changes nothing on a page just loaded: a reset, a pause, the option already chosen (a
        # checkbox checked at first is not: a click unchecks it)
        chosen = c.default == "checked" and c.kind != "checkbox"
        if not c.is_control or chosen or NO_EFFECT.search(f"{c.id} {c.label or ''}"):
            continue
        # what is said of "any slider" holds for the sliders, of "all controls" for every control
        global_nodes = [n for n, m in said_of_all if c.kind == "range" or not m.group("what").lower().startswith("slider")]
        every = "\n".join(g.subtree_text() for g in global_nodes)
        if c.id in by_control:
            node, text = by_control[c.id]
            text += "\n" + every
        elif global_nodes:
            node, text = global_nodes[0], every
        else:
            continue
        effects = _effects(text + "\n" + _called(ol, text), c, ctrls, shown)
        starts = says_start((c.label or "") + " " + c.id + " " + plain(node.text))
        if effects or starts:
            out.append(Behaviour(span(node.text), c, effects=effects, motion=starts and c.kind == "button"))
    return out


def keys(ol: Outline, drawn: bool = False) -> list[Behaviour]:
    """Keys the query says to press, each with the line that says so (one behaviour per key); ``drawn``: what
    they change is the drawing (a request names nothing else)."""
    out, seen = [], set()
    for n in ol.nodes:
        for m in _KEY.finditer(plain(n.text)):
            name = " ".join((m.group("name") or "").lower().split())
            key = m.group("char").lower() if m.group("char") else \
                _KEY_NAMES.get(name) or _KEY_NAMES.get(_KEYS_SUFFIX.sub("", name))
            if key and key not in seen and not FORMAT.search(n.text):
                seen.add(key)
                out.append(Behaviour(span(n.text), key=key,
                                     effects=(DRAWING_EFFECT,) if drawn or _DRAWING.search(n.text) else ()))
    return out


def motions(ol: Outline, request: str | None, ctrls: list[Control] = ()) -> list[str]:
    """Lines saying something moves by itself (a short request: its motion words are enough). A plan with a
    play or start button has its motion behind that button, not by itself."""
    if request is not None:
        return [request] if MOTION.search(request) else []
    if any(c.kind == "button" and start_name(f"{c.id} {c.label or ''}") for c in ctrls):
        return []
    out = []
    for n in ol.nodes:
        p = plain(n.text)
        around = " ".join([p] + [plain(a.text) for a in n.ancestors() if a.kind != "heading"])
        if PLAN_MOTION.search(p) and QUERY_BY_ITSELF.search(p) and not PLAN_PROMPTED.search(around):
            out.append(span(n.text))
    return out[:2]


def named_ui(sentences: list[T.Clause]) -> list[Named]:
    """UI elements the sentences name without an id: quoted labels of buttons, "a seed field", "the Start button"."""
    out: list[Named] = []
    add = lambda n: out.append(n) if not any((x.label.lower(), x.kind) == (n.label.lower(), n.kind) for x in out) \
        else None  # noqa: E731
    for c in sentences:
        for m in _LABELLED_BUTTONS.finditer(c.evidence):
            for lab in _LABEL_LIST_SEP.split(m.group("labels")):
                add(Named("button", lab, c.evidence))
        for m in _NAMED_UI.finditer(c.evidence):
            kind = _UI_KIND[m.group("kind").lower()]
            label = " ".join(w for w in m.group("label").split() if w.lower() not in ("new", "single", "short"))
            quoted = _QUOTED.findall(c.evidence) if kind == "button" else []
            for lab in quoted or ([label] if label else []):
                add(Named(kind, lab.strip(), c.evidence))
    return out


def without_format(sentence: str) -> str:
    """A request without the format constraint it ends with: "a Pong game in a single HTML file" -> "a Pong game"."""
    m = FORMAT.search(sentence)
    if not m:
        return sentence
    head = _FORMAT_LEAD_IN.sub("", sentence[:m.start()])
    return head if len(head) >= 3 else sentence


def read_spec(query: str) -> Spec:
    """The query's spec (see the module docstring)."""
    ol = outline(query)
    text = " ".join(query.split())
    constraints = [n.text for n in ol.nodes if FORMAT.search(n.text)]
    if ol.structured:
        ctrls = controls(ol, query)
        shown = readouts(ctrls, query)
        first = next((span(n.text) for n in ol.nodes if n.kind != "heading" and not FORMAT.search(n.text)), None)
        displays = {c.id for c in ctrls if not c.is_control and c.kind != "canvas"}
        return Spec(True, None, ctrls, behaviours(ol, ctrls, shown) + keys(ol), motions(ol, None, ctrls),
                    constraints=constraints, first_line=first, readouts=shown, formats=stated_formats(query, displays))
    clauses = T.clauses_of(text)
    sentences = [c for c in clauses if not FORMAT.search(c.evidence)]
    named = named_ui(sentences)
    short = len(text) <= SHORT_REQUEST_CHARS and len(sentences) <= 2 and not named  # it names nothing to operate
    first = sentences[0].evidence if sentences else without_format(clauses[0].evidence if clauses else text)
    request = first.removesuffix(SHORT_FRAME.strip()).strip() if short else None
    answers = next((c.evidence for c in sentences if REQUEST_ANSWERS_INPUT.search(c.evidence)), None) if short else None
    return Spec(False, request, [], keys(ol, drawn=short), motions(ol, request) if short else
                [c.evidence for c in sentences if MOTION.search(c.evidence) and QUERY_BY_ITSELF.search(c.evidence)][:1],
                named, sentences, answers, constraints)
