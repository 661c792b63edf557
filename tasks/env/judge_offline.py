"""The offline judge rule (the embedded default, no API key): a deterministic diagnosis built from our own
tree-sitter and browser evidence, answering the request ``judge.py`` renders.

Every description starts with ``[offline]`` and the result row says provider=offline: it is a stand-in so the
pipeline runs end to end, not a model's judgement. A rubric item is decided by its executable check, else by
the other evidence that speaks to it (``tasks/env/rubric_evidence.py``: an element it names missing from the
source, the probe on a control it names, motion, input, a blank page), those findings saying ``heuristic``; an
item nothing speaks to is listed as ``undecided`` (neither met nor unmet in the reward). The LLM judge keeps the
paper's rule: an item without a finding is met.

Run: ``offline_diagnosis(request.variables)`` (the offline provider calls it as the request's ``offline_rule``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from schemas.llm.diagnosis import SEVERITIES, Diagnosis, Finding, Layer
from schemas.rubric import JudgeItem
from tasks.env.evidence import Evidence, RuntimeEvidence
from tasks.env.judge_diagnosis import line_quote
from tasks.env.records import CheckResult, LoadErrorsVerdict
from tasks.env.rubric_evidence import MET, blank_drawing, item_decision

if TYPE_CHECKING:
    from tasks.env.static import SourceError

OFFLINE_TAG = "[offline]"


def _finding(description: str, quotes: list[str] | None = None, explanation: str = "", item: JudgeItem | None = None
             ) -> Finding:
    return Finding(item_id=item.id if item else None, scope=item.scope if item else None,
                   description=f"{OFFLINE_TAG} {description}", code_quotes=quotes or [], explanation=explanation)


def _static_layer(html: str, errors: list[SourceError]) -> Layer:
    layer: dict[str, list[Finding]] = {s: [] for s in SEVERITIES}
    for e in errors:
        sev = "critical" if e.blocking else ("minor" if e.language == "html" else "major")
        quote = html[e.start : e.end].strip()
        quotes = [quote[:200]] if quote and quote[:200] in html else line_quote(html, e.start)
        layer[sev].append(_finding(e.message, quotes, f"tree-sitter {e.language} parse error at line "
                                   f"{e.line}, column {e.column}"))
    return Layer(name="static_check", **layer)


def _simulation_layer(html: str, rt: RuntimeEvidence | None, load: LoadErrorsVerdict | None = None) -> Layer:
    """``load``: whether the errors at load block (``RuntimeEvidence.load_errors``); unmarked ones do."""
    layer: dict[str, list[Finding]] = {s: [] for s in SEVERITIES}
    if rt is None:
        return Layer(name="code_simulation", **layer)
    blocking = load is None or load.blocking
    for pe in rt.page_errors:
        layer["critical" if blocking else "minor"].append(_finding(
            f"uncaught {pe.name} during load: {pe.message}", line_quote(html, pe.offset),
            "headless Chromium page error" + ("" if load is None or blocking else f"; not blocking: {load.why}")))
    status = rt.status
    if status == "load_timeout":
        layer["critical"].append(_finding("the page never finished loading (likely an infinite loop at load)", [],
                                          "headless Chromium load timeout"))
    elif status in ("unresponsive", "crashed"):
        layer["critical"].append(_finding(f"the page became {status} after load", [], "headless Chromium"))
    elif status == "reload_loop":
        layer["critical"].append(_finding("the page keeps reloading itself with no user action: a user never sees "
                                          "it settle", [], "headless Chromium: repeated self-navigation after load"))
    if rt.refused_popups:
        layer["minor"].append(_finding(f"the page opens {rt.refused_popups} popup(s) with no user gesture; a "
                                       "browser refuses them", [], "headless Chromium popup guard"))
    if rt.blank_body:
        layer["major"].append(_finding("the page renders nothing visible after load", [], "headless Chromium"))
    for ce in rt.console_errors[:5]:
        layer["minor"].append(_finding(f"console error during load: {ce.text[:200]}",
                                       line_quote(html, ce.offset), "headless Chromium console"))
    for br in [b for b in rt.blocked_requests if b.kind != "popup"][:5]:
        layer["minor"].append(_finding(f"the app requests {br.url} ({br.resource_type}), which is not "
                                       f"served: {br.reason or 'network access is not available to the app'}",
                                       [], f"sandbox outcome: {br.outcome or 'refused'}"))
    return Layer(name="code_simulation", **layer)


def _check_finding(html: str, it: JudgeItem, r: CheckResult) -> Finding:
    """A failed executable check as a major rubric finding; a page error's source line is its direct anchor."""
    quotes = [q for e in r.errors for q in line_quote(html, e.offset)][:3]
    return _finding(f"executable check failed for: {it.requirement}", list(dict.fromkeys(quotes)),
                    f"step {r.step} ({r.step_kind}) in headless Chromium: {r.reason}; observed "
                    f"{r.observed}, expected {r.expected}", it)


def _rubric_layer(html: str, items: list[JudgeItem], runtime: RuntimeEvidence | None = None,
                  checks: list[CheckResult] | None = None) -> tuple[Layer, list[str]]:
    """(layer, undecided item ids): an executable check decides first (failed: a major finding; passed: met),
    then the other evidence (``tasks/env/rubric_evidence.py``); an item nothing speaks to is undecided."""
    layer: dict[str, list[Finding]] = {s: [] for s in SEVERITIES}
    undecided: list[str] = []
    verdict = {r.item_id: r for r in checks or [] if r.status in ("passed", "failed")}
    for it in items:
        r = verdict.get(it.id)
        if r is not None and r.status == "failed":
            layer["major"].append(_check_finding(html, it, r))
            continue
        decided = MET if r is not None else item_decision(it, runtime, html)
        if decided is not None and decided[0] == "met":  # met, unless what it asks to see is not drawn
            decided = blank_drawing(it, runtime.interaction if runtime is not None else None) or MET
        if decided is None:
            undecided.append(it.id)
        elif decided[0] != "met":
            sev, desc, why, quotes = decided
            layer[sev].append(_finding(desc, quotes, why, it))
    return Layer(name="rubric_alignment", **layer), undecided


def offline_diagnosis(variables: dict[str, Any]) -> dict[str, Any]:
    """The offline provider's rule: a deterministic Diagnosis from our own evidence (says it is offline), as the
    JSON object a judge replies with."""
    html = variables["application"]
    ev: Evidence = variables.get("evidence") or Evidence()
    rubric, undecided = _rubric_layer(html, variables.get("rubric_items", []), ev.runtime, ev.check_results)
    return Diagnosis(static_check=_static_layer(html, ev.syntax_errors),
                     code_simulation=_simulation_layer(html, ev.runtime, ev.load_errors),
                     rubric_alignment=rubric, undecided=undecided).model_dump()
