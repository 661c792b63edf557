"""Offline rule of the rubric_checks stage: template checks in the words of each requirement.

``item_label(requirement)`` names an item by its first content words; the template checks look for
that name (visible text for an initial-state item; a button of that name whose click changes the
app's status region for a dynamic item). The offline teacher (``tasks/sft/teacher.py``) builds its apps
from the same labels, so its answers pass their own checks, and a policy that learned the teacher's
apps by SFT can pass them too. Rows made by this rule say provider=offline like every offline row.
"""
from __future__ import annotations

import json
import re
from typing import Any

_WORD = re.compile(r"[A-Za-z][A-Za-z]{3,}")
_STOP = set("""that this with from have will when then than them they their there these those into onto over
under after before while where which what about each every other such only also must should would could
shall page loads load shows show display displays displayed using used allow allows user users when
clicking click clicked pressing press the value values current visible""".split())
LABEL_WORDS = 3
STATUS = {"role": "status"}


def item_label(requirement: str) -> str:
    """The item's name: its first ``LABEL_WORDS`` content words, lower-case (pure; the teacher uses it too)."""
    words = [w.lower() for w in _WORD.findall(requirement) if w.lower() not in _STOP]
    return " ".join(words[:LABEL_WORDS]) or "item"


def template_check(item: dict[str, Any]) -> dict[str, Any]:
    """The template check of one item (``id``, ``scope``, ``requirement``)."""
    name = re.escape(item_label(item["requirement"]))
    if item["scope"] == "initial_state":
        return {"steps": [{"expect": "visible", "target": {"text": name}}]}
    return {"steps": [{"do": "remember", "target": STATUS, "name": "before"},
                      {"do": "click", "target": {"role": "button", "name": name}},
                      {"expect": "text_changes", "target": STATUS, "since": "before"}]}


def offline_checks(v: dict[str, Any]) -> dict[str, Any]:
    items = json.loads(v["items"])
    return {"checks": [{"item_id": i["id"], "check": template_check(i)} for i in items]}
