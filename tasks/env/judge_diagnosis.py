"""Reading a judge's diagnosis in code (paper B.2): whichever judge answered, programs decide the numbers.

Code keeps one rubric finding per item id (highest severity wins), drops ids still unknown (a hand-written
DIAGNOSIS.json), fixes each finding's scope from the reference, and decides the gates (critical/major fail a
layer, minor does not). ``with_observed_findings`` adds each failure an interaction caused (an uncaught error,
a hang, a submit that reloads the app), quoting the source at its position: a blocking one
(``tasks/env/severity.py``) as a code_simulation major finding, one confined to a control's handler as a minor one
plus a major finding on the rubric item that control serves. ``findings_list`` gives the findings with their keys
(``Diagnosis.keyed_findings``, the keys attribution uses).

Run: ``normalize_diagnosis(diag, task.rubric.compact())``, ``findings_list(diag)``.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from schemas.llm.diagnosis import LAYERS, SEVERITIES, SEVERITY_RANK, Diagnosis, Finding, Layer
from schemas.rubric import CompactRubric, JudgeItem
from tasks.env.records import DroppedFinding, Failure, Record
from tasks.env.rubric_evidence import item_facts, names_control

OBSERVED_TAG = "[browser]"  # a finding the environment observed, not a judge's opinion


def line_quote(html: str, offset: int | None) -> list[str]:
    """The exact source line at an offset, stripped (an exact quotation, as the judge must give)."""
    if offset is None or not 0 <= offset < len(html):
        return []
    a = html.rfind("\n", 0, offset) + 1
    b = html.find("\n", offset)
    line = html[a : b if b != -1 else len(html)].strip()
    return [line[:200]] if line else []


def unique_quote(html: str, offset: int | None) -> list[str]:
    """An exact quotation at an offset that occurs once in the source: the offset's line, widened by the
    lines above it until unique, so attribution anchors it at that position and nowhere else."""
    if offset is None or not 0 <= offset < len(html):
        return []
    a = html.rfind("\n", 0, offset) + 1
    b = html.find("\n", offset)
    b = len(html) if b == -1 else b
    while html[a:b].strip() and html.count(html[a:b].strip()) > 1 and a > 0:
        a = html.rfind("\n", 0, a - 1) + 1
    quote = html[a:b].strip()
    return [quote] if quote and html.count(quote) == 1 else line_quote(html, offset)


def _observed_description(f: Failure) -> str:
    who = f"{f.action_kind or 'action'} on {f.control!r}"
    return {"error": f"{who} throws an uncaught {f.name}: {str(f.message)[:200]}",
            "hang": f"{who} makes the page stop responding (an endless loop or blocking work in the handler)",
            "reload": f"{who} submits a form that reloads the page; the app's state is lost (no preventDefault)"}[f.kind]


_STOP = set("""that this with from have will when then than them they their there these those into onto over
under after before while where which what about each every other such only also must should would could
shall user users page shows show display displays displayed using used allow allows include includes
including within without between based first last next some more most very make makes made like into
upon your value values current""".split())


def _words(text: str) -> set[str]:
    """Content words of a label, an element description or a requirement (camelCase and ids split; pure)."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text or "")
    return {w for w in re.findall(r"[a-z]{3,}", spaced.lower()) if w not in _STOP}


def item_for_control(items: list[JudgeItem], failure: Failure) -> JudgeItem | None:
    """The dynamic rubric item a failing control serves: the one naming its label, else the one whose named
    elements share the most words with its label and element (none shared: None) (pure)."""
    dynamic = [i for i in items if i.scope == "dynamic"]
    named = [i for i in dynamic if names_control(item_facts(i), failure.label, failure.target)]
    if named:
        return named[0]
    words = _words(f"{failure.label or ''} {re.sub(r'[#._-]', ' ', failure.target or '')}")
    best = max(dynamic, key=lambda i: len(words & _named_words(i)), default=None)
    return best if best is not None and words & _named_words(best) else None


def _named_words(item: JudgeItem) -> set[str]:
    """The words of the elements an item names: the ids of its fields; its requirement's words only for an item
    without fields (the sentence fallback, as ``rubric_evidence.item_facts``) (pure)."""
    if item.evidence_kind is None:
        return _words(item.requirement)
    return _words(" ".join(item_facts(item).ids))


def with_observed_findings(diag: Diagnosis, html: str, failures: list[Failure],
                           items: list[JudgeItem] | None = None) -> Diagnosis:
    """The diagnosis plus what the browser saw interactions do (pure). A blocking failure (``tasks.env.severity``;
    unmarked ones block) is a code_simulation major finding; one confined to a control's handler is a minor one
    plus a major finding on the rubric item that control serves (``items``: the judge payload), unless the
    judge already found that item critical or major."""
    if not failures:
        return diag
    cs, ra = diag.code_simulation, diag.rubric_alignment
    major, minor, rubric_major = list(cs.major), list(cs.minor), list(ra.major)
    severe = {f.item_id for f in [*ra.critical, *ra.major] if f.item_id}
    for f in failures:
        blocking = f.blocking is not False  # unjudged: it blocks
        quotes = unique_quote(html, f.offset)
        why = f.why or "an interaction error fails the runtime gate"
        (major if blocking else minor).append(Finding(
            description=f"{OBSERVED_TAG} {_observed_description(f)}", code_quotes=quotes,
            explanation=f"observed in headless Chromium by the interaction probe; {'blocking' if blocking else 'not blocking'}: {why}"))
        # the control worked for its user when its effect showed before the error: the item is not failed by it
        item = None if blocking or f.effect_shown else item_for_control(items or [], f)
        if item is not None and item.id not in severe:
            severe.add(item.id)
            rubric_major.append(Finding(item_id=item.id, scope=item.scope, code_quotes=quotes,
                                        description=f"{OBSERVED_TAG} the control this item needs fails: {_observed_description(f)}",
                                        explanation="observed in headless Chromium by the interaction probe: the error is "
                                                    "confined to the handler of the control this item is about"))
    drop = {f.item_id for f in ra.minor} & severe  # one finding per item: the major one replaces a minor
    ra = ra.model_copy(update={"major": rubric_major, "minor": [f for f in ra.minor if f.item_id not in drop]})
    return diag.model_copy(update={"code_simulation": cs.model_copy(update={"major": major, "minor": minor}),
                                   "rubric_alignment": ra})


def normalize_diagnosis(diag: Diagnosis, rubric: CompactRubric) -> tuple[Diagnosis, list[DroppedFinding]]:
    """One rubric finding per item id (highest severity wins, first kept on ties), unknown ids dropped,
    scope taken from the reference. Returns the cleaned diagnosis and what was dropped (for the record)."""
    scope_of = rubric.scope_of()
    best: dict[str, tuple[str, Finding]] = {}
    dropped: list[DroppedFinding] = []
    for sev, f in diag.rubric_alignment.findings():  # critical first, so the first kept is the highest
        if f.item_id not in scope_of:
            dropped.append(DroppedFinding("unknown rubric id", sev, f.item_id))
            continue
        if f.item_id in best:
            if SEVERITY_RANK[sev] <= SEVERITY_RANK[best[f.item_id][0]]:
                dropped.append(DroppedFinding("duplicate item id (lower or equal severity)", sev, f.item_id))
                continue
        best[f.item_id] = (sev, f.model_copy(update={"scope": scope_of[f.item_id]}))
    rubric_layer = Layer(name="rubric_alignment", **{s: [f for (sv, f) in best.values() if sv == s] for s in SEVERITIES})
    undecided = [i for i in dict.fromkeys(diag.undecided) if i in scope_of and i not in best]
    return diag.model_copy(update={"rubric_alignment": rubric_layer, "undecided": undecided}), dropped


def parse_diagnosis(data: Any, rubric: CompactRubric) -> tuple[Diagnosis, list[DroppedFinding]]:
    """A judge output given by hand (DIAGNOSIS.json): validated, then normalized. Raises ValueError."""
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise ValueError("a diagnosis must be a JSON object with static_check, code_simulation, rubric_alignment")
    data = {k: ({"name": k, **v} if isinstance(v, dict) and k in LAYERS and "name" not in v else v)
            for k, v in data.items()}
    try:
        diag = Diagnosis.model_validate(data)
    except ValidationError as e:
        msgs = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()[:5])
        raise ValueError(f"not a judge diagnosis ({msgs}); give the three layers, each with critical/major/minor "
                         "lists of findings") from e
    return normalize_diagnosis(diag, rubric)


def layer_gates(diag: Diagnosis) -> dict[str, bool]:
    """Critical or major fails a layer's gate; minor alone does not (paper B.2)."""
    return {layer.name: layer.gate_passed for layer in diag.layers()}


def rubric_severities(diag: Diagnosis) -> dict[str, str]:
    """item id -> severity of its (single) rubric finding."""
    return {f.item_id: sev for sev, f in diag.rubric_alignment.findings() if f.item_id}


def _lists(v: Any) -> Any:
    return [_lists(x) for x in v] if isinstance(v, tuple) else v


@dataclass(frozen=True)
class ScoredFinding(Record):
    """One finding of the scored diagnosis (``rubricrl score``'s ``findings``, the judgments row's): ``key`` is
    ``Diagnosis.keyed_findings``'s, the key attribution uses, and the spans are attribution's, in response offsets."""

    key: str
    layer: str
    severity: str
    item_id: str | None
    scope: str | None
    description: str
    code_quotes: tuple[str, ...] = ()
    related_symbols: tuple[str, ...] = ()
    state_variables: tuple[str, ...] = ()
    context_hints: tuple[str, ...] = ()
    explanation: str = ""
    direct_spans: tuple[tuple[int, int], ...] = ()  # (start, end)
    context_spans: tuple[tuple[int, int, str], ...] = ()  # (start, end, reason)

    def to_dict(self) -> dict[str, Any]:
        return {k: _lists(v) for k, v in asdict(self).items()}  # the contract's arrays


def findings_list(diag: Diagnosis | None, spans: dict[str, dict[str, Any]] | None = None) -> list[ScoredFinding]:
    """The diagnosis' findings as records (built here only); ``spans`` (from attribution) gives each finding's
    ``direct_spans`` / ``context_spans`` in response offsets."""
    if diag is None:
        return []
    out = []
    for key, layer, sev, f in diag.keyed_findings():
        at = (spans or {}).get(key, {})
        out.append(ScoredFinding(key, layer, sev, f.item_id, f.scope, f.description, tuple(f.code_quotes),
                                 tuple(f.related_symbols), tuple(f.state_variables), tuple(f.context_hints),
                                 f.explanation, tuple((a, b) for a, b in at.get("direct_spans", [])),
                                 tuple((a, b, why) for a, b, why in at.get("context_spans", []))))
    return out
