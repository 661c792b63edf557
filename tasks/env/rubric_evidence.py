"""How the offline judge decides one rubric item from evidence (pure): met, unmet (with a severity), or undecided.

Evidence, in order; the first that speaks to the item decides it:
1. the item's executable check: passed -> met; failed -> major (``tasks/env/judge_offline.py`` makes the finding);
2. an element the item names by ``#id``, or as labelled "X", whose id or label occurs nowhere in the app's
   source -> critical (the feature is missing entirely: no markup declares it and no script creates it);
3. the interaction probe on a control the item names (by ``#id`` or quoted label): an action on it threw or
   hung -> major; its click changed nothing observable -> major (dynamic items only: a display is not behaviour);
4. an item about motion the page should show by itself (it says so: "moves by itself over time",
   "continuously") against the probe's idle liveness: something moved -> met; nothing did -> major;
5. an item saying the page answers input (a key press, click or drag changes what is shown) against the
   probe's actions: one changed something -> met; every action ran and none did -> major;
6. an item saying the page draws or shows what was asked when it loads, against a blank page -> critical
   (a page that shows something has not shown it is what was asked: that stays undecided);
7. an item asking for a drawing on load (``drawing_present``) that steps 1 to 6 met, whose drawing area is on
   screen with every canvas in it blank after load and settle -> minor (``blank_drawing``: the area is there,
   the drawing is not; a WebGL canvas is never read as blank, an empty layer beside a drawn one is no finding).
What an item says it is about is read from its fields (``schemas.rubric.STRUCTURE``: ``evidence_kind``, and the
``element``, ``trigger`` and ``effect`` it names), written by the offline rules. An item without them (an LLM's, a
benchmark's checklist item, old data) is read from its requirement's words instead, here and nowhere else
(``sentence_facts``): the ``#id`` names it gives, an element "labelled X", a sentence saying the motion happens by
itself, that the page answers input, or that it draws or shows something when it loads.
Anything else is **undecided**: no evidence speaks to it, so it is neither met nor unmet in the reward
(``tasks/env/rewards.py`` leaves it out of the rubric score's weights). Steps 2 to 6 are heuristics and say
so in their explanation. There is no keyword counting: the source is read only for the ids an item names.

Run: ``item_decision(item, runtime_evidence, html)`` for an item its check left inconclusive.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tasks.rubrics.vocab import BY_ITSELF, ITEM_ANSWERS_INPUT, ITEM_MOTION, ITEM_PROMPTED

if TYPE_CHECKING:
    from schemas.rubric import JudgeItem
    from tasks.env.evidence import RuntimeEvidence
    from tasks.env.probe_records import ProbeRecord

HEURISTIC = "heuristic (offline, from browser evidence)"
Decision = tuple[str, str, str, list[str]]  # (severity or "met", description, explanation, code quotes)
MET: Decision = ("met", "", "", [])
# The sentence fallback's patterns. Motion the item says happens by itself (ITEM_MOTION and BY_ITSELF); motion in
# answer to input is what checks and the probe decide.
_SHOWN_ON_LOAD = re.compile(r"^the page (draws|shows) .+ when it loads\b", re.I)
_ID = re.compile(r"(?<![\w&#])#([A-Za-z][\w-]*)")
_LABELLED = re.compile(r"\blabell?ed\s+[\"“]([^\"”]{1,40})[\"”]")  # an element the item names by its label
_HEX = re.compile(r"^[0-9a-fA-F]{3,8}$")
# A name as a whole token: an id in the source (not part of a longer id), a label in an item (not part of a word).
_TOKEN_BEFORE, _TOKEN_AFTER = r"(?<![\w-])", r"(?![\w-])"
_WORD_BEFORE, _WORD_AFTER = r"(?<!\w)", r"(?!\w)"


@dataclass(frozen=True)
class ItemFacts:
    """What the evidence reads of an item: the kind of evidence that decides it, the elements it names by id (in
    the order it names them) and by label, and the text a probed control's label is looked for in."""

    kind: str | None
    ids: tuple[str, ...]
    labels: tuple[str, ...]
    label_text: str


def item_facts(item: JudgeItem) -> ItemFacts:
    """The item's fields, or its requirement's words when it has none (``sentence_facts``)."""
    if item.evidence_kind is None:
        return sentence_facts(item.requirement)
    named = [item.element, item.trigger, *(item.effect or [])]
    ids = tuple(dict.fromkeys(n[1:] for n in named if n and n.startswith("#")))
    label = item.element if item.evidence_kind == "labelled_present" else None
    # A probe names an element without an id by its visible label, which the fields do not carry (they name the
    # element by ``#id``): it is looked for among the item's words, as a name, not read back as structure.
    return ItemFacts(item.evidence_kind, ids, (label,) if label else (), item.requirement)


def sentence_facts(requirement: str) -> ItemFacts:
    """The fallback for an item without fields: what its requirement's words say (see the module docstring)."""
    motion = ITEM_MOTION.search(requirement) and BY_ITSELF.search(requirement) and not ITEM_PROMPTED.search(requirement)
    kind = "motion_by_itself" if motion else "answers_input" if ITEM_ANSWERS_INPUT.search(requirement) else \
        "shown_on_load" if _SHOWN_ON_LOAD.search(requirement) else None
    return ItemFacts(kind, tuple(named_ids(requirement)), tuple(_LABELLED.findall(requirement)), requirement)


def named_ids(requirement: str) -> list[str]:
    """The element ids an item names as ``#id`` (a hex colour is not an id)."""
    return [i for i in dict.fromkeys(_ID.findall(requirement)) if not _HEX.match(i)]


def in_source(name: str, html: str, case: bool = True) -> bool:
    """``name`` occurs in the source as a whole token (an id exactly; a label in any case)."""
    return re.search(_TOKEN_BEFORE + re.escape(name) + _TOKEN_AFTER, html, 0 if case else re.I) is not None


def names_control(facts: ItemFacts, label: str | None, target: str | None = None) -> bool:
    """The item names the control by its id (``#id`` in the probe's target) or by its visible label, as a whole
    word or phrase of the names it gives (fields) or of its requirement (the fallback)."""
    if target and any(target.endswith("#" + i) for i in facts.ids):
        return True
    label = (label or "").strip()
    if len(label) < 2 or len(label) > 40:
        return False
    return re.search(_WORD_BEFORE + re.escape(label.lower()) + _WORD_AFTER, facts.label_text.lower()) is not None


def evidence_decision(item: JudgeItem, inter: "ProbeRecord | None") -> Decision | None:
    """Steps 3 to 5 (the interaction probe's evidence); None when it does not speak to the item."""
    if inter is None or inter.status != "ok":
        return None
    from tasks.env.probe import interaction_failures
    from tasks.env.severity import failed_the_user

    facts = item_facts(item)
    live = inter.liveness
    if facts.kind == "motion_by_itself" and live:
        if live.animated:
            return MET
        if not live.visual_change:
            return ("major", "nothing moves on the page", f"{HEURISTIC}: no animation frame requested and no visual "
                    f"change in {live.gap_s}s while idle", [])
    if item.scope != "dynamic":  # what a control does is dynamic behaviour; its display is not
        return None
    acts = inter.actions
    for f in interaction_failures(inter):
        if f.kind == "error" and not failed_the_user(f.sync, f.action, acts):
            continue  # thrown after the control's effect showed: the effect the item asks for is there
        if names_control(facts, f.label, f.target):
            return ("major", f"using {f.label!r} fails ({f.kind}: {str(f.message or '')[:120]})",
                    f"{HEURISTIC}: the item names this control and the interaction probe saw it fail", [])
    for c in inter.dead_controls:
        if names_control(facts, c.label, c.target):
            return ("major", f"clicking {c.label!r} changes nothing observable",
                    f"{HEURISTIC}: no DOM, canvas, scroll, value or dialog change after the click"
                    + ("" if c.has_handler else "; no listener is attached to it"), [])
    if facts.kind == "answers_input":
        acts = [a for a in inter.actions if a.outcome == "ok"]
        if any(a.changed for a in acts):
            return MET
        if acts and len(acts) == inter.planned:
            return ("major", "no key press, click or drag changes what is shown",
                    f"{HEURISTIC}: the interaction probe ran {len(acts)} actions and none changed the page", [])
    return None


def blank_drawing(item: JudgeItem, inter: "ProbeRecord | None") -> Decision | None:
    """A drawing the item asks for on load, met by its check or the evidence, whose drawing area is on screen but
    empty: every visible canvas in the element it names is blank after load and settle (no script gave it a
    context, or its 2D pixels are all one colour; probe.js ``canvases``) -> minor (the area is there, the drawing
    is not). A WebGL canvas is not read, so it never counts as blank; None when this evidence does not speak."""
    if inter is None or inter.status != "ok" or item_facts(item).kind != "drawing_present":
        return None
    ids = set(item_facts(item).ids)
    inside = [c for c in inter.canvases if ids & set(c.ids)]
    if not inside or not all(c.blank is True for c in inside):
        return None
    name = "#" + sorted(ids)[0]
    return ("minor", f"the drawing area {name} is empty when the page loads",
            f"{HEURISTIC}: after load and settle, before any action, nothing is drawn on the {len(inside)} canvas(es) "
            f"in {name} (no drawing context, or every pixel one colour)", [])


def item_decision(item: JudgeItem, runtime: RuntimeEvidence | None, html: str) -> Decision | None:
    """Steps 2 to 6 on one item that no executable check decided (see the module docstring); None: undecided."""
    facts = item_facts(item)
    missing = [i for i in facts.ids if not in_source(i, html)]
    if missing:
        return ("critical", f"the app has no element #{missing[0]}",
                f"{HEURISTIC}: the item names #{missing[0]} and that id occurs nowhere in the app's source", [])
    unlabelled = [lab for lab in facts.labels if not in_source(lab, html, case=False)]
    if unlabelled:
        return ("critical", f"the app has nothing labelled {unlabelled[0]!r}",
                f"{HEURISTIC}: the item names an element labelled {unlabelled[0]!r} and that text occurs nowhere in "
                "the app's source", [])
    decided = evidence_decision(item, runtime.interaction if runtime is not None else None)
    if decided is not None:
        return decided
    if facts.kind == "shown_on_load" and runtime is not None and runtime.blank_body:
        return ("critical", "the page is blank after load", f"{HEURISTIC}: nothing visible in the page", [])
    return None
