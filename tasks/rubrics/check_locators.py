"""What the offline checks find and watch on a page (pure): the locators and the presence step that the checks of a
plan's items (``checks_offline``) and of a synthesized query's capabilities (``checks_capability``) share, so each
builds on them without importing the other's rules."""
from __future__ import annotations

import re
from typing import Any

CANVAS = {"canvas": True}
DRAWING = {"drawing": True}  # every canvas and svg: what a plan naming a canvas or drawing area watches
PAGE_TEXT = {"css": "body"}  # the page's text, where a change the query does not place shows
WORD_EDGE = r"\b"  # a name matched as whole words: "Add" is not "Address"
# A button that starts what the query asks for (a quiz, a round, a run): a page showing one has not begun it yet
_STARTS = re.compile(WORD_EDGE + "(start|begin|play)" + WORD_EDGE, re.I)
START_BUTTON = {"role": "button", "name": _STARTS.pattern}
_CSS_SPECIAL = re.compile(r"([^\w-])")  # what an id needs escaped in a CSS selector


def by_id(cid: str, suffix: str = "") -> dict[str, str]:
    return {"css": "#" + _CSS_SPECIAL.sub(r"\\\1", cid) + suffix}


def present(loc: dict[str, Any]) -> dict[str, Any]:
    return {"expect": "count", "target": loc, "at_least": 1}


def once_begun(name: str, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``steps`` that use the button named ``name``, on a page that shows no Start button: where one shows, what
    another button changes before it is the app's choice (a quiz's Skip may wait for it), so the check does not
    apply there (``absent``: inconclusive)."""
    if _STARTS.search(name):
        return steps
    return [{"expect": "absent", "target": START_BUTTON}, *steps]
