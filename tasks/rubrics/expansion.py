"""Stage 1, controlled expansion (paper B.1, Table 5): the expanded query plus its trace.

The model names the task's core objects, actions, states, outputs and hard constraints, and the
underspecified choices that would change the interpretation; high-risk ones are resolved with
minimal, testable defaults written *into the expanded query*. The trace (alternatives, frozen
decisions, causal links action -> state change -> computation -> visible result) is kept for
inspection but is never a specification: later stages read only the expanded query.

Offline rule (no model): the query is read by its structure (``tasks/rubrics/prompt_spec.py``). A plan
(headings, lists) and a short request are expanded to themselves, as written: the plan already states
its defaults, and a short request has nothing a default could make testable; the trace lists the
elements, behaviours and format constraints read from it. A request in several sentences has its
clauses classified by keyword tables (``tasks/rubrics/text.py``), and a few high-risk gaps (a score
with no points rule, a timer with no length, an accuracy with no definition, saving with no place) get
the defaults in ``DEFAULTS``. Qualitative words ("random", "common", "rare") are recorded as low-risk
and preserved as written.
"""
from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from schemas.contracts.rubrics import EXPANSIONS_SCHEMA
from schemas.llm.rubric_construction import Expansion
from tasks.rubrics import text as T
from tasks.rubrics.offline_items import spec_items
from tasks.rubrics.pipeline import QueryContext, StageDef
from tasks.rubrics.prompt_spec import SHORT_FRAME, Spec, read_spec
from tasks.rubrics.vocab import ACCURACY_DEFAULT, SAVED_DEFAULT, SCORE_DEFAULT, TIMER_DEFAULT

# (trigger, already-specified, choice, alternatives, minimal testable default)
DEFAULTS: tuple[tuple[re.Pattern[str], re.Pattern[str], str, list[str], str], ...] = tuple(
    (re.compile(a, re.I), re.compile(b, re.I), c, d, e) for a, b, c, d, e in [
        (r"\bscores?\b", r"\b(points?|adds?|award\w*|increas\w*|correct answers? divided)\b", "how the score grows",
         ["one point per correct answer", "points weighted by difficulty or speed"],
         SCORE_DEFAULT),
        (r"\b(timer|countdown)\b", r"\d+\s*(s|secs?|seconds?|mins?|minutes?)\b", "timer length",
         ["a fixed length", "a user-chosen length"], TIMER_DEFAULT),
        (r"\baccuracy\b", r"\b(divided|out of|ratio|of all)\b", "what accuracy counts",
         ["correct answers out of all answers", "correct answers out of answered rounds only"],
         ACCURACY_DEFAULT),
        (r"\b(save|saves|saved|persist\w*)\b", r"\b(localstorage|local storage|download\w*|export\w*)\b",
         "where data is saved", ["the browser's localStorage", "a downloaded file"],
         SAVED_DEFAULT),
    ])
_DIGIT = re.compile(r"\d")  # a clause stating a number constrains the app
QUALITATIVE = re.compile(r"\b(random|common|rare|ambiguous|mixed|various|appropriate|simple|realistic|"
                         r"interesting|nice|clean|modern)\b", re.I)


def _uniq(items: list[str]) -> list[str]:
    seen: set[str] = set()
    return [x for x in items if x and not (x.lower() in seen or seen.add(x.lower()))]


# A request shorter than the expansion's minimum ("Pong") is framed, never given new requirements.
_MIN_CHARS = next(m.min_length for m in Expansion.model_fields["expanded_query"].metadata if hasattr(m, "min_length"))


def _as_written(query: str, spec: Spec) -> dict[str, Any]:
    """A plan or a short request: the expanded query is the query; the trace is what was read from it."""
    items = spec_items(spec)
    dynamic = [i for i in items if i.scope == "dynamic"]
    links = [{"action": i.requirement, "state_change": "the state the item names changes", "computation": "",
              "visible_result": i.requirement} for i in dynamic if i.behaviour is not None]
    objects = [f"#{c.id}" for c in spec.controls if c.kind != "container"] or ([spec.request] if spec.request else [])
    return {"core_objects": objects, "actions": [i.requirement for i in dynamic],
            "states": [i.requirement for i in items if i.role == "control"],
            "outputs": [i.requirement for i in items if i.role in ("output", "area", "scene")],
            "hard_constraints": _uniq(spec.constraints), "underspecified": [], "causal_links": links,
            "expanded_query": query if len(query) >= _MIN_CHARS else query + SHORT_FRAME}


def offline_expansion(v: dict[str, Any]) -> dict[str, Any]:
    """Deterministic expansion of ``v['query']`` by rules (see module docstring)."""
    spec = read_spec(v["query"].strip())
    if spec.structured or spec.request is not None:
        return _as_written(v["query"].strip(), spec)
    query = " ".join(v["query"].split())
    clauses = T.clauses_of(query)
    roles = [(c, *T.classify(c.text)) for c in clauses]
    objects, actions, states, outputs, constraints = [], [], [], [], []
    name = T.app_name(query)
    if name:
        objects.append(name)
    for c, role, rtype in roles:
        _verb, obj = T.verb_and_object(c.text)
        if role == "app":
            continue
        if rtype == "interaction":
            actions.append(c.text)
            objects.append(obj)
        elif rtype in ("state", "calculation") or role == "timing":
            states.append(obj)
        elif rtype == "output":
            outputs.append(c.text)
            objects.append(obj)
        if rtype in ("constraint", "rule") or _DIGIT.search(c.text):
            constraints.append(c.text)
    underspecified, defaults = [], []
    for trigger, specified, choice, alts, default in DEFAULTS:
        if trigger.search(query) and not specified.search(query):
            underspecified.append({"choice": choice, "alternatives": alts, "high_risk": True,
                                   "frozen_decision": default})
            defaults.append(default)
    for word in _uniq([m.group(0).lower() for m in QUALITATIVE.finditer(query)]):
        underspecified.append({"choice": f"what '{word}' means", "alternatives": [], "high_risk": False,
                               "frozen_decision": None})
    links = [{"action": a, "state_change": f"{states[0]} changes" if states else "the application state changes",
              "computation": states[1] if len(states) > 1 else "",
              "visible_result": outputs[0] if outputs else "the display shows the new state"} for a in actions]
    expanded = query + ("" if not defaults else " " + " ".join(defaults))
    return {"core_objects": _uniq(objects), "actions": _uniq(actions), "states": _uniq(states),
            "outputs": _uniq(outputs), "hard_constraints": _uniq(constraints), "underspecified": underspecified,
            "causal_links": links, "expanded_query": expanded}


def _variables(ctx: QueryContext) -> dict[str, Any]:
    return {"query": ctx.query}


def _rows(ctx: QueryContext, out: BaseModel) -> list[dict[str, Any]]:
    assert isinstance(out, Expansion)
    d = out.model_dump()
    return [{k: d[k] for k in ("expanded_query", "core_objects", "actions", "states", "outputs", "hard_constraints",
                              "underspecified", "causal_links")}]


STAGE = StageDef(name="expansions", section="expansion", prompt="rubric_expansion", schema=EXPANSIONS_SCHEMA,
                 output_model=Expansion, offline_rule=offline_expansion, variables=_variables, rows=_rows)
