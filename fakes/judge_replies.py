"""Judge replies for the fake APIs: a valid three-layer diagnosis for whatever app and rubric the judge
prompt carries, decided by the app's text alone (the same app, the same diagnosis, in any order or load).

``diagnosis_reply(body)``: no finding, or one major finding on a dynamic item, or one minor on an
initial-state item (chosen by a hash of the application source), quoting a line of the app's script
when it has one, so gates, rewards and attribution all have work. ``failing_on(marker)``: the same, but a
reply that is no JSON for an app containing ``marker`` (the judge fails: a missing reward). Usage::

    with FakeAnthropic(reply=diagnosis_reply) as api: ...
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Callable

from fakes.llm_fixtures import last_user_text

LAYERS = ("static_check", "code_simulation", "rubric_alignment")


def diagnosis_reply(body: dict[str, Any]) -> str:
    text = last_user_text(body)
    head, _, app = text.partition("Application source:")
    ids = re.findall(r'"id":\s*"([A-Z]\d+)"', head)
    layers = {k: {"name": k, "critical": [], "major": [], "minor": []} for k in LAYERS}
    pick = int(hashlib.sha256(app.encode()).hexdigest(), 16)
    script = app.split("<script>", 1)[-1].split("</script>", 1)[0] if "<script>" in app else ""
    lines = [ln.strip() for ln in script.splitlines() if len(ln.strip()) >= 12 and ln.strip().endswith(";")]
    dyn, init = [i for i in ids if i.startswith("D")], [i for i in ids if i.startswith("I")]
    if pick % 3 and dyn and init:
        severity, item = ("major", dyn[pick % len(dyn)]) if pick % 3 == 1 else ("minor", init[pick % len(init)])
        layers["rubric_alignment"][severity].append({
            "item_id": item, "scope": "dynamic" if item.startswith("D") else "initial_state",
            "description": "the shown state does not follow the rule", "code_quotes": [lines[pick % len(lines)]] if lines else [],
            "related_symbols": [], "state_variables": [], "context_hints": [], "explanation": "fake judge"})
    return json.dumps(layers)


def failing_on(marker: str) -> Callable[[dict[str, Any]], str]:
    def reply(body: dict[str, Any]) -> str:
        return "no JSON here" if marker in last_user_text(body) else diagnosis_reply(body)

    return reply
