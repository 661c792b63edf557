"""The three-layer judge (paper B.2, F.2): the request, the offline rule, and post-processing in code.

One judge call sees the expanded query, the compact rubric payload and the application source and
returns static_check, code_simulation and rubric_alignment layers (``schemas.llm.diagnosis.Diagnosis``).
The LLM layer validates the reply with ``{"valid_ids": ...}`` so an unknown rubric id gets its one
corrective retry there; afterwards, code keeps one finding per item id (highest severity wins),
drops ids still unknown (a hand-written DIAGNOSIS.json), fixes each finding's scope from the
reference, and decides the gates (critical/major fail a layer, minor does not).

Offline rule (the embedded default, no API key): a deterministic diagnosis built from our own
tree-sitter and browser evidence. Every description starts with ``[offline]`` and the result row says
provider=offline: it is a stand-in so the pipeline runs end to end, not a model's judgement. A rubric
item is decided by its executable check, else by the other evidence that speaks to it
(``tasks/env/rubric_evidence.py``: an element it names missing from the source, the probe on a control it
names, motion, input, a blank page), those findings saying ``heuristic``; an item nothing speaks to is
listed as ``undecided`` (neither met nor unmet in the reward). The LLM judge keeps the paper's rule: an
item without a finding is met.

Observed facts: both judges see what the browser saw. The LLM judge's prompt gets a compact
block of them (``observed_facts``), and ``with_observed_findings`` adds each failure an interaction
caused (an uncaught error, a hang, a submit that reloads the app), quoting the source at its position,
whichever judge ran: a blocking one (``tasks/env/severity.py``) as a code_simulation major finding, one
confined to a control's handler as a minor one plus a major finding on the rubric item that control serves.

Run: ``provider.complete(build_judge_request(task, html, key=..., local_evidence=...))``.
"""
from __future__ import annotations

import json
import re
from typing import Any

from schemas.config.env import JudgeConfig
from schemas.llm.diagnosis import LAYERS, SEVERITIES, SEVERITY_RANK, Diagnosis, Finding, Layer
from schemas.rubric import CompactRubric, Task, judge_payload
from tasks.env.rubric_evidence import item_decision, names_control
from tasks.llm.base import LLMRequest

OFFLINE_TAG = "[offline]"
OBSERVED_TAG = "[browser]"  # a finding the environment observed, not a judge's opinion
def judge_variables(task: Task, html: str) -> dict[str, Any]:
    payload = [i.model_dump() for i in judge_payload(task.rubric)]
    return {"query": task.query, "rubric": json.dumps(payload, ensure_ascii=False, indent=1), "application": html}


def build_judge_request(task: Task, html: str, *, key: str, local_evidence: dict[str, Any] | None = None,
                        cfg: JudgeConfig | None = None) -> LLMRequest:
    """The judge LLMRequest. ``local_evidence`` (our static/runtime evidence, HTML offsets) feeds the offline
    rule whole and the prompt as a compact block of observed facts and the executable checks' results (the app
    is still judged from its source)."""
    cfg = cfg or JudgeConfig()
    variables = judge_variables(task, html)
    variables["local_evidence"] = local_evidence or {}
    variables["observed"] = observed_facts(html, local_evidence or {})
    variables["check_results"] = render_checks(check_results_of(local_evidence))
    variables["rubric_items"] = [i.model_dump() for i in judge_payload(task.rubric)]
    return LLMRequest(stage="judgments", key=key, prompt=cfg.prompt, variables=variables, output_model=Diagnosis,
                      offline_rule=offline_diagnosis, validation_context={"valid_ids": task.rubric.ids()},
                      max_tokens=cfg.max_tokens, temperature=cfg.temperature)


def _line_of(html: str, offset: int | None) -> str:
    return f"line {html.count(chr(10), 0, offset) + 1}" if offset is not None and 0 <= offset <= len(html) else "position unknown"


def observed_facts(html: str, ev: dict[str, Any], limit: int = 8) -> str:
    """What the environment observed, as short lines for the judge prompt (pure; positions as HTML lines)."""
    lines = []
    syn = ev.get("syntax_errors") or []
    lines.append(f"- syntax errors (tree-sitter): {len(syn)}" + "".join(
        f"\n  - {e['message']} at line {e['line']}" for e in syn[:limit]))
    rt = ev.get("runtime")
    if not rt:
        lines.append("- browser: not run")
        return "\n".join(lines)
    load = ev.get("load_errors")
    lines.append(f"- load in headless Chromium: {rt.get('status')}" + (f" ({'blocking' if load['blocking'] else 'not blocking'}: "
                                                                     f"{load['why']})" if load else "") + "".join(
        f"\n  - uncaught {pe.get('name')}: {str(pe.get('message'))[:160]} ({_line_of(html, pe.get('offset'))})"
        for pe in (rt.get("page_errors") or [])[:limit]))
    inter = rt.get("interaction")
    if not inter:
        return "\n".join(lines)
    from tasks.env.probe import summarize

    sm = summarize(inter)
    lines.append(f"- interaction probe: {sm['actions_run']} of {sm['actions_planned']} actions run (clicks, inputs, "
                 f"keys, drags, one resize); status {sm['status']}")
    for f in (ev.get("interaction_failures") or sm["failures"])[:limit]:  # with their severity when classified
        what = {"error": f"throws {f.get('name')}: {str(f.get('message'))[:160]}", "hang": "makes the page stop responding",
                "reload": "submits a form that reloads the page (state lost)"}[f["kind"]]
        how = "" if "blocking" not in f else f"; blocking: {f['why']}" if f["blocking"] else \
            "; confined to this control's handler: a defect of the item it serves, not a blocking point"
        lines.append(f"  - {f.get('action_kind') or 'action'} on {f.get('label') or f.get('target') or 'the page'!r} "
                     f"{what} ({_line_of(html, f.get('offset'))}{how})")
    if sm["dead_controls"]:
        lines.append("- controls whose click changed nothing observable: " + ", ".join(
            repr(c) for c in sm["dead_controls"][:limit]))
    lines.append(f"- liveness while idle: {sm['animation_frames']} animation frames requested, visual change "
                 f"{sm['visual_change']}")
    return "\n".join(lines)


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
    return [quote] if quote and html.count(quote) == 1 else _line_quote(html, offset)


def _observed_description(f: dict[str, Any]) -> str:
    who = f"{f.get('action_kind') or 'action'} on {f.get('label') or f.get('target') or 'the page'!r}"
    return {"error": f"{who} throws an uncaught {f.get('name')}: {str(f.get('message'))[:200]}",
            "hang": f"{who} makes the page stop responding (an endless loop or blocking work in the handler)",
            "reload": f"{who} submits a form that reloads the page; the app's state is lost (no preventDefault)"}[f["kind"]]


_STOP = set("""that this with from have will when then than them they their there these those into onto over
under after before while where which what about each every other such only also must should would could
shall user users page shows show display displays displayed using used allow allows include includes
including within without between based first last next some more most very make makes made like into
upon your value values current""".split())


def _words(text: str) -> set[str]:
    """Content words of a label, an element description or a requirement (camelCase and ids split; pure)."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text or "")
    return {w for w in re.findall(r"[a-z]{3,}", spaced.lower()) if w not in _STOP}


def item_for_control(items: list[dict[str, Any]], failure: dict[str, Any]) -> dict[str, Any] | None:
    """The dynamic rubric item a failing control serves: the one naming its label, else the one sharing the most
    words with its label and element (none shared: None) (pure)."""
    dynamic = [i for i in items if i.get("scope") == "dynamic"]
    named = [i for i in dynamic if names_control(i["requirement"], failure.get("label"), failure.get("target"))]
    if named:
        return named[0]
    words = _words(f"{failure.get('label') or ''} {re.sub(r'[#._-]', ' ', failure.get('target') or '')}")
    best = max(dynamic, key=lambda i: len(words & _words(i["requirement"])), default=None)
    return best if best is not None and words & _words(best["requirement"]) else None


def with_observed_findings(diag: Diagnosis, html: str, failures: list[dict[str, Any]],
                           items: list[dict[str, Any]] | None = None) -> Diagnosis:
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
        blocking = f.get("blocking", True)
        quotes = unique_quote(html, f.get("offset"))
        why = f.get("why") or "an interaction error fails the runtime gate"
        (major if blocking else minor).append(Finding(
            description=f"{OBSERVED_TAG} {_observed_description(f)}", code_quotes=quotes,
            explanation=f"observed in headless Chromium by the interaction probe; {'blocking' if blocking else 'not blocking'}: {why}"))
        item = None if blocking else item_for_control(items or [], f)
        if item is not None and item["id"] not in severe:
            severe.add(item["id"])
            rubric_major.append(Finding(item_id=item["id"], scope=item["scope"], code_quotes=quotes,
                                        description=f"{OBSERVED_TAG} the control this item needs fails: {_observed_description(f)}",
                                        explanation="observed in headless Chromium by the interaction probe: the error is "
                                                    "confined to the handler of the control this item is about"))
    drop = {f.item_id for f in ra.minor} & severe  # one finding per item: the major one replaces a minor
    ra = ra.model_copy(update={"major": rubric_major, "minor": [f for f in ra.minor if f.item_id not in drop]})
    return diag.model_copy(update={"code_simulation": cs.model_copy(update={"major": major, "minor": minor}),
                                   "rubric_alignment": ra})


# -- offline rule ---------------------------------------------------------------------------------
def _line_quote(html: str, offset: int | None) -> list[str]:
    """The exact source line at an offset, stripped (an exact quotation, as the judge must give)."""
    if offset is None or not 0 <= offset < len(html):
        return []
    a = html.rfind("\n", 0, offset) + 1
    b = html.find("\n", offset)
    line = html[a : b if b != -1 else len(html)].strip()
    return [line[:200]] if line else []


def _finding(description: str, quotes: list[str] | None = None, explanation: str = "", **kw: Any) -> dict[str, Any]:
    return {"item_id": kw.get("item_id"), "scope": kw.get("scope"), "description": f"{OFFLINE_TAG} {description}",
            "code_quotes": quotes or [], "related_symbols": kw.get("related_symbols", []), "state_variables": [],
            "context_hints": kw.get("context_hints", []), "explanation": explanation}


def _static_layer(html: str, errors: list[dict[str, Any]]) -> dict[str, list]:
    layer: dict[str, list] = {s: [] for s in SEVERITIES}
    for e in errors:
        sev = "critical" if e.get("blocking") else ("minor" if e.get("language") == "html" else "major")
        quote = html[e["start"] : e["end"]].strip()
        quotes = [quote[:200]] if quote and quote[:200] in html else _line_quote(html, e["start"])
        layer[sev].append(_finding(e["message"], quotes, f"tree-sitter {e['language']} parse error at line "
                                   f"{e['line']}, column {e['column']}"))
    return layer


def _simulation_layer(html: str, rt: dict[str, Any] | None, load: dict[str, Any] | None = None) -> dict[str, list]:
    """``load``: whether the errors at load block (``RuntimeEvidence.load_errors``); unmarked ones do."""
    layer: dict[str, list] = {s: [] for s in SEVERITIES}
    if not rt:
        return layer
    blocking = (load or {}).get("blocking", True)
    for pe in rt.get("page_errors", []):
        layer["critical" if blocking else "minor"].append(_finding(
            f"uncaught {pe.get('name', 'Error')} during load: {pe.get('message', '')}", _line_quote(html, pe.get("offset")),
            "headless Chromium page error" + ("" if blocking else f"; not blocking: {load['why']}")))
    status = rt.get("status")
    if status == "load_timeout":
        layer["critical"].append(_finding("the page never finished loading (likely an infinite loop at load)", [],
                                          "headless Chromium load timeout"))
    elif status in ("unresponsive", "crashed"):
        layer["critical"].append(_finding(f"the page became {status} after load", [], "headless Chromium"))
    elif status == "reload_loop":
        layer["critical"].append(_finding("the page keeps reloading itself with no user action: a user never sees "
                                          "it settle", [], "headless Chromium: repeated self-navigation after load"))
    if rt.get("refused_popups"):
        layer["minor"].append(_finding(f"the page opens {rt['refused_popups']} popup(s) with no user gesture; a "
                                       "browser refuses them", [], "headless Chromium popup guard"))
    if rt.get("blank_body"):
        layer["major"].append(_finding("the page renders nothing visible after load", [], "headless Chromium"))
    for ce in rt.get("console_errors", [])[:5]:
        layer["minor"].append(_finding(f"console error during load: {ce.get('text', '')[:200]}",
                                       _line_quote(html, ce.get("offset")), "headless Chromium console"))
    for br in [b for b in rt.get("blocked_requests", []) if b.get("kind") != "popup"][:5]:
        layer["minor"].append(_finding(f"the app requests {br.get('url')} ({br.get('resource_type')}), which is not "
                                       f"served: {br.get('reason') or 'network access is not available to the app'}",
                                       [], f"sandbox outcome: {br.get('outcome') or 'refused'}"))
    return layer


def check_results_of(local_evidence: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The executable checks' results (HTML offsets) inside our local evidence."""
    return list(((local_evidence or {}).get("runtime") or {}).get("check_results") or [])


def render_checks(results: list[dict[str, Any]]) -> str:
    """Check results as the judge prompt shows them: one line per checked item (pure)."""
    if not results:
        return "(no executable checks were run for this application)"
    lines = []
    for r in results:
        if r["status"] == "passed":
            lines.append(f"- {r['item_id']}: passed")
        elif r["status"] == "failed":
            err = "; ".join(f"{e.get('name')}: {e.get('message', '')[:150]} (line {e.get('line')})"
                            for e in r.get("errors", [])[:2])
            lines.append(f"- {r['item_id']}: FAILED at step {r['step']} ({r['step_kind']}): {r['reason']}; observed "
                         f"{r.get('observed')!s}, expected {r.get('expected')!s}" + (f"; page errors: {err}" if err else ""))
        else:
            lines.append(f"- {r['item_id']}: inconclusive ({r['reason'][:200]}): no evidence either way")
    return "\n".join(lines)


def _check_finding(html: str, it: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
    """A failed executable check as a major rubric finding; a page error's source line is its direct anchor."""
    quotes = [q for e in r.get("errors", []) for q in _line_quote(html, e.get("offset"))][:3]
    return _finding(f"executable check failed for: {it['requirement']}", list(dict.fromkeys(quotes)),
                    f"step {r['step']} ({r['step_kind']}) in headless Chromium: {r['reason']}; observed "
                    f"{r.get('observed')}, expected {r.get('expected')}", item_id=it["id"], scope=it["scope"])


def _rubric_layer(html: str, items: list[dict[str, Any]], runtime: dict[str, Any] | None = None,
                  checks: list[dict[str, Any]] | None = None) -> tuple[dict[str, list], list[str]]:
    """(layer, undecided item ids): an executable check decides first (failed: a major finding; passed: met),
    then the other evidence (``tasks/env/rubric_evidence.py``); an item nothing speaks to is undecided."""
    layer: dict[str, list] = {s: [] for s in SEVERITIES}
    undecided: list[str] = []
    verdict = {r["item_id"]: r for r in checks or [] if r["status"] in ("passed", "failed")}
    for it in items:
        r = verdict.get(it["id"])
        if r is not None:
            if r["status"] == "failed":
                layer["major"].append(_check_finding(html, it, r))
            continue
        decided = item_decision(it, runtime, html)
        if decided is None:
            undecided.append(it["id"])
        elif decided[0] != "met":
            sev, desc, why, quotes = decided
            layer[sev].append(_finding(desc, quotes, why, item_id=it["id"], scope=it["scope"]))
    return layer, undecided


def offline_diagnosis(variables: dict[str, Any]) -> dict[str, Any]:
    """The offline provider's rule: a deterministic Diagnosis from our own evidence (says it is offline)."""
    html = variables["application"]
    ev = variables.get("local_evidence") or {}
    rubric, undecided = _rubric_layer(html, variables.get("rubric_items", []), ev.get("runtime"), check_results_of(ev))
    layers = {
        "static_check": _static_layer(html, ev.get("syntax_errors", [])),
        "code_simulation": _simulation_layer(html, ev.get("runtime"), ev.get("load_errors")),
        "rubric_alignment": rubric,
    }
    return {**{name: {"name": name, **layers[name]} for name in LAYERS}, "undecided": undecided}


# -- post-processing --------------------------------------------------------------------------------
def normalize_diagnosis(diag: Diagnosis, rubric: CompactRubric) -> tuple[Diagnosis, list[dict[str, Any]]]:
    """One rubric finding per item id (highest severity wins, first kept on ties), unknown ids dropped,
    scope taken from the reference. Returns the cleaned diagnosis and what was dropped (for the record)."""
    scope_of = rubric.scope_of()
    best: dict[str, tuple[str, Finding]] = {}
    dropped: list[dict[str, Any]] = []
    for sev, f in diag.rubric_alignment.findings():  # critical first, so the first kept is the highest
        if f.item_id not in scope_of:
            dropped.append({"reason": "unknown rubric id", "severity": sev, "item_id": f.item_id})
            continue
        if f.item_id in best:
            if SEVERITY_RANK[sev] <= SEVERITY_RANK[best[f.item_id][0]]:
                dropped.append({"reason": "duplicate item id (lower or equal severity)", "severity": sev,
                                "item_id": f.item_id})
                continue
        best[f.item_id] = (sev, f.model_copy(update={"scope": scope_of[f.item_id]}))
    rubric_layer = Layer(name="rubric_alignment", **{s: [f for (sv, f) in best.values() if sv == s] for s in SEVERITIES})
    undecided = [i for i in dict.fromkeys(diag.undecided) if i in scope_of and i not in best]
    return diag.model_copy(update={"rubric_alignment": rubric_layer, "undecided": undecided}), dropped


def parse_diagnosis(data: Any, rubric: CompactRubric) -> tuple[Diagnosis, list[dict[str, Any]]]:
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


def findings_list(diag: Diagnosis | None, spans: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Findings as dicts for the score output and the judgments stage (built here only). ``key`` is
    ``Diagnosis.keyed_findings``'s, the key attribution uses; ``spans`` (from attribution) adds each
    finding's ``direct_spans`` / ``context_spans`` in response offsets."""
    if diag is None:
        return []
    return [{"key": key, "layer": layer, "severity": sev, "item_id": f.item_id, "scope": f.scope,
             "description": f.description, "code_quotes": list(f.code_quotes), "related_symbols": list(f.related_symbols),
             "state_variables": list(f.state_variables), "context_hints": list(f.context_hints),
             "explanation": f.explanation, **(spans or {}).get(key, {"direct_spans": [], "context_spans": []})}
            for key, layer, sev, f in diag.keyed_findings()]
