"""The line formats a plan states for a display's text (pure): "a new line is appended to the `#log` element,
formatted as: `s      current_step_ciphertext`".

A user reads such a display by its columns: the plan fixes which values stand on a line and that whitespace sets
them apart. A display whose lines run the values together ("20A5F51E8D3F58998" where the plan gives step 2 and
its ciphertext) shows what the plan asked for but not in a form a user can read. Read here:

- only a line of the plan that names exactly one of its displays (an element that is not a control) and gives
  the format in backticks after "formatted as" or "in the format";
- only a format of two or more words set apart by whitespace (a single value fixes no columns).

``line_pattern`` is what a check matches the display's text against: every line has at least as many parts set
apart by whitespace as the format has words. Blank lines between lines are allowed, and so is a first line of any
form (a header the app writes above the columns). What each part says is not read: a value may be written with
its unit or a label beside it, so a line with more parts than the format is no finding; one with fewer is.
The pattern decomposes a text one way only (each part is a maximal run of non-space characters), so it costs
time linear in the text even when it fails.

Run: ``stated_formats(query, displays)`` -> [LineFormat]; ``line_pattern(fmt.template)``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_STATED = re.compile(r"\b(?:formatted\s+as|in\s+the\s+(?:format|form))\s*(?:of\s*)?:?\s*`([^`\n]{3,80})`", re.I)
_NAMED = re.compile(r"`#?([A-Za-z][\w-]*)`|#([A-Za-z][\w-]*)")
_GAP, _EDGE = "[ \\t]+", "[ \\t]*"


@dataclass(frozen=True)
class LineFormat:
    element: str  # the display's id
    template: str  # the format as the plan writes it
    evidence: str  # the plan's line that states it


def line_pattern(template: str) -> str:
    """Every line of a text (stripped), but a first one of any form, has at least as many parts set apart by
    whitespace as ``template`` has words."""
    line = f"{_EDGE}\\S+(?:{_GAP}\\S+){{{len(template.split()) - 1},}}"
    return f"^(?:[^\\n]*\\n)?{line}(?:(?:{_EDGE}\\r?\\n)+{line})*{_EDGE}$"


def stated_formats(query: str, displays: set[str]) -> list[LineFormat]:
    """The line formats the plan states for its displays (ids in ``displays``), in the plan's order, one per
    display (the first the plan states)."""
    out: dict[str, LineFormat] = {}
    for line in query.splitlines():
        stated = _STATED.search(line)
        if stated is None or len(stated.group(1).split()) < 2:
            continue
        named = {a or b for a, b in _NAMED.findall(line[:stated.start()] + line[stated.end():])} & displays
        if len(named) == 1 and (element := named.pop()) not in out:
            out[element] = LineFormat(element, stated.group(1).strip(), line.strip().lstrip("*- ").strip())
    return list(out.values())
