"""The three-layer judge (paper B.2, F.2), its request: what one judge call is asked.

One judge call sees the expanded query, the compact rubric payload and the application source and
returns static_check, code_simulation and rubric_alignment layers (``schemas.llm.diagnosis.Diagnosis``).
The LLM layer validates the reply with ``{"valid_ids": ...}`` so an unknown rubric id gets its one
corrective retry there. The judge's job is split three ways: this module renders the request (with what the
browser observed, ``observed_facts``, and the executable checks' results); ``judge_offline.py`` is the rule
the offline provider answers it with (the embedded default, no API key); ``judge_diagnosis.py`` reads a
diagnosis back in code (one finding per item, the gates, the findings with their keys, the browser's own
findings added whichever judge ran).

Run: ``provider.complete(build_judge_request(task, html, key=..., evidence=Evidence.read(...)))``.
"""
from __future__ import annotations

import json
from typing import Any

from schemas.config.env import JudgeConfig
from schemas.llm.diagnosis import Diagnosis
from schemas.rubric import Task, judge_dicts, judge_payload
from tasks.env.evidence import Evidence
from tasks.env.judge_offline import offline_diagnosis
from tasks.env.records import CheckResult
from tasks.llm.base import LLMRequest


def judge_variables(task: Task, html: str) -> dict[str, Any]:
    payload = judge_dicts(task.rubric)
    return {"query": task.query, "rubric": json.dumps(payload, ensure_ascii=False, indent=1), "application": html}


def build_judge_request(task: Task, html: str, *, key: str, evidence: Evidence | None = None,
                        cfg: JudgeConfig | None = None) -> LLMRequest:
    """The judge LLMRequest. ``evidence`` (the app's ``Evidence``, HTML offsets) feeds the offline rule whole and
    the prompt as a compact block of observed facts and the executable checks' results (the app is still judged
    from its source)."""
    cfg = cfg or JudgeConfig()
    ev = evidence or Evidence()
    variables = judge_variables(task, html)
    variables["evidence"] = ev
    variables["observed"] = observed_facts(html, ev)
    variables["check_results"] = render_checks(ev.check_results)
    variables["rubric_items"] = judge_payload(task.rubric)  # the items as the offline rule reads them
    return LLMRequest(stage="judgments", key=key, prompt=cfg.prompt, variables=variables, output_model=Diagnosis,
                      offline_rule=offline_diagnosis, validation_context={"valid_ids": task.rubric.ids()},
                      max_tokens=cfg.max_tokens, temperature=cfg.temperature)


def _line_of(html: str, offset: int | None) -> str:
    return f"line {html.count(chr(10), 0, offset) + 1}" if offset is not None and 0 <= offset <= len(html) else "position unknown"


def observed_facts(html: str, ev: Evidence, limit: int = 8) -> str:
    """What the environment observed, as short lines for the judge prompt (pure; positions as HTML lines)."""
    lines = []
    syn = ev.syntax_errors
    lines.append(f"- syntax errors (tree-sitter): {len(syn)}" + "".join(
        f"\n  - {e.message} at line {e.line}" for e in syn[:limit]))
    rt = ev.runtime
    if rt is None:
        lines.append("- browser: not run")
        return "\n".join(lines)
    load = ev.load_errors
    lines.append(f"- load in headless Chromium: {rt.status}" + (f" ({'blocking' if load.blocking else 'not blocking'}: "
                                                              f"{load.why})" if load else "") + "".join(
        f"\n  - uncaught {pe.name}: {pe.message[:160]} ({_line_of(html, pe.offset)})"
        for pe in rt.page_errors[:limit]))
    inter = rt.interaction
    if not inter:
        return "\n".join(lines)
    from tasks.env.probe import interaction_failures, summarize

    sm = summarize(inter)
    lines.append(f"- interaction probe: {sm['actions_run']} of {sm['actions_planned']} actions run (clicks, inputs, "
                 f"keys, drags, one resize); status {sm['status']}")
    for f in (list(ev.failures) or interaction_failures(inter))[:limit]:  # with their severity when classified
        what = {"error": f"throws {f.name}: {str(f.message)[:160]}", "hang": "makes the page stop responding",
                "reload": "submits a form that reloads the page (state lost)"}[f.kind]
        how = "" if f.blocking is None else f"; blocking: {f.why}" if f.blocking else \
            f"; {f.why}: a defect of the item it serves, not a blocking point"
        lines.append(f"  - {f.action_kind or 'action'} on {f.control!r} {what} ({_line_of(html, f.offset)}{how})")
    if sm["dead_controls"]:
        lines.append("- controls whose click changed nothing observable: " + ", ".join(
            repr(c) for c in sm["dead_controls"][:limit]))
    lines.append(f"- liveness while idle: {sm['animation_frames']} animation frames requested, visual change "
                 f"{sm['visual_change']}")
    return "\n".join(lines)


def render_checks(results: list[CheckResult]) -> str:
    """Check results as the judge prompt shows them: one line per checked item (pure)."""
    if not results:
        return "(no executable checks were run for this application)"
    lines = []
    for r in results:
        if r.status == "passed":
            lines.append(f"- {r.item_id}: passed")
        elif r.status == "failed":
            err = "; ".join(f"{e.name}: {e.message[:150]} (line {e.line})" for e in r.errors[:2])
            lines.append(f"- {r.item_id}: FAILED at step {r.step} ({r.step_kind}): {r.reason}; observed "
                         f"{r.observed!s}, expected {r.expected!s}" + (f"; page errors: {err}" if err else ""))
        else:
            lines.append(f"- {r.item_id}: inconclusive ({r.reason[:200]}): no evidence either way")
    return "\n".join(lines)
