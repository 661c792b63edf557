"""What the environment found in an app, written for the policy that revises it (multi-turn episodes).

The input is one scored answer (``rubricrl score``'s output, as ``rubricrl.adapters.client`` returns it),
the response it scored and the task's rubric requirements; the output is the text of the next user turn:
the tier and gates, errors with the code lines they point to, the judge's findings with their severity
and the rubric item they concern, failed checks, and what the browser probe saw (controls that did
nothing, a page that never changed). ``passed`` says when an episode has nothing left to fix. Pure.
"""
from __future__ import annotations

from typing import Any

# the order findings are listed in: the policy reads the worst first
SEVERITY_ORDER = ("critical", "major", "minor")
_MAX_FINDINGS = 12  # past this the turn says how many more; the policy fixes the first ones first
_MAX_CODE_CHARS = 200  # one code line quoted back, at most
ASK = "Revise the app to fix these problems. Answer with the whole corrected single-file HTML app."


def requirements_of(rubric: Any) -> dict[str, str]:
    """Rubric item id -> its requirement text, the words a finding's item is named with (a ``CompactRubric``)."""
    return {i.id: i.requirement for i in [*rubric.initial_state, *rubric.dynamic]}


def failed_checks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in (answer.get("evidence") or {}).get("checks") or [] if c.get("status") == "failed"]


def passed(answer: dict[str, Any]) -> bool:
    """Every gate passed, no finding names a rubric item and no item check failed: nothing left to revise.
    Items the judge left undecided do not hold an episode open (nobody can say what to fix)."""
    gates = answer.get("gates") or {}
    return (answer.get("reward") is not None and answer.get("tier") == "valid"
            and all(v is not False for v in gates.values())
            and not any(f.get("item_id") for f in answer.get("findings") or []) and not failed_checks(answer))


def code_line(response: str, offset: int | None) -> str | None:
    """The line of ``response`` holding character ``offset``, stripped and shortened."""
    if offset is None or not 0 <= offset < len(response):
        return None
    start = response.rfind("\n", 0, offset) + 1
    end = response.find("\n", offset)
    line = response[start:end if end >= 0 else len(response)].strip()
    return line[:_MAX_CODE_CHARS] or None


def _gates_line(answer: dict[str, Any]) -> str:
    ev = answer.get("evidence") or {}
    parts = []
    for name, key in (("format", "format_valid"), ("source", "source_valid"), ("runtime", "runtime_valid")):
        value = answer.get(key)
        state = "ok" if value else "not checked" if value is None else "FAILED"
        if key == "runtime_valid" and value is False and ev.get("runtime_status"):
            state += f" ({ev['runtime_status']})"
        parts.append(f"{name} {state}")
    return "Gates: " + ", ".join(parts) + "."


def _error_lines(answer: dict[str, Any], response: str) -> list[str]:
    ev = answer.get("evidence") or {}
    out = []
    for e in ev.get("syntax_errors") or []:
        where = f" at line {e['line']}" if e.get("line") else ""
        code = code_line(response, e.get("start"))
        out.append(f"- {e.get('message', 'syntax error')}{where}" + (f":\n    {code}" if code else ""))
    for kind, errors in (("uncaught", ev.get("page_errors")), ("console error", ev.get("console_errors"))):
        for e in errors or []:
            name = f"{e['name']}: " if e.get("name") else ""
            where = f" at line {e['line']}" if e.get("line") else ""
            code = code_line(response, e.get("offset"))
            out.append(f"- {kind} {name}{e.get('message', '')}{where}" + (f":\n    {code}" if code else ""))
    if ev.get("blank_body"):
        out.append("- the page rendered nothing (empty body)")
    return out


def _finding_lines(answer: dict[str, Any], requirements: dict[str, str]) -> list[str]:
    findings = sorted(answer.get("findings") or [], key=lambda f: SEVERITY_ORDER.index(f["severity"])
                      if f.get("severity") in SEVERITY_ORDER else len(SEVERITY_ORDER))
    out = []
    for f in findings[:_MAX_FINDINGS]:
        item = f.get("item_id")
        about = f" {item} ({requirements[item]})" if item in requirements else f" {item}" if item else ""
        quotes = [q[:_MAX_CODE_CHARS] for q in f.get("code_quotes") or []][:2]
        code = "".join(f"\n    {q}" for q in quotes)
        out.append(f"- [{f.get('severity', '?')}]{about}: {f.get('description', '')}{code}")
    if len(findings) > _MAX_FINDINGS:
        out.append(f"- ... and {len(findings) - _MAX_FINDINGS} more")
    return out


def _check_lines(answer: dict[str, Any], requirements: dict[str, str]) -> list[str]:
    out = []
    for c in failed_checks(answer):
        item = c.get("item_id")
        about = f"{item} ({requirements[item]})" if item in requirements else str(item)
        seen = f"; expected {c['expected']}, saw {c['observed']}" if c.get("expected") is not None else ""
        out.append(f"- {about}: {c.get('reason') or 'failed'}{seen}")
    return out


def _probe_lines(answer: dict[str, Any]) -> list[str]:
    inter = (answer.get("evidence") or {}).get("interaction") or {}
    out = []
    if inter.get("dead_controls"):
        out.append("- controls that did nothing when used: " + ", ".join(map(str, inter["dead_controls"])))
    for f in inter.get("failures") or []:
        out.append(f"- {f if isinstance(f, str) else f.get('reason') or f}")
    if inter.get("status") == "ok" and inter.get("visual_change") is False:
        out.append("- the page did not change on screen while it was used")
    return out


def render_observation(answer: dict[str, Any], response: str, requirements: dict[str, str] | None = None) -> str:
    """The next user turn after ``response`` was scored as ``answer`` (``requirements``: item id -> text)."""
    requirements = requirements or {}
    reward = answer.get("reward")
    head = (f"Your app scored {reward:g} (tier {answer.get('tier')})." if reward is not None else
            f"Your app could not be scored: {answer.get('reason')}.")
    lines = [head, _gates_line(answer)]
    for title, part in (("Errors:", _error_lines(answer, response)),
                        ("Findings:", _finding_lines(answer, requirements)),
                        ("Failed checks:", _check_lines(answer, requirements)),
                        ("What the browser probe saw:", _probe_lines(answer))):
        if part:
            lines += [title, *part]
    lines.append("Every gate and every decided rubric item passed." if passed(answer) else ASK)
    return "\n".join(lines)
