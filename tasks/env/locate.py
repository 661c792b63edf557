"""Where a check's locator points in a page (``schemas/checks.py``): every element it finds, by role and
accessible name, visible text, label, placeholder, CSS, the drawing (each canvas and svg) or the canvas."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

from schemas.checks import Locator

if TYPE_CHECKING:
    from playwright.async_api import Locator as PwLocator, Page


def matches(page: Page, loc: Locator, visible: bool = True) -> PwLocator:
    """Every element ``loc`` finds (visible ones only unless ``visible`` is False); patterns ignore case."""
    p, flags = page, re.I
    if loc.role is not None:  # one of ROLES (schemas/checks.py), all of them Playwright's role names
        b = p.get_by_role(cast(Any, loc.role), name=re.compile(loc.name, flags) if loc.name else None)
    elif loc.text is not None:
        b = p.get_by_text(re.compile(loc.text, flags))
    elif loc.label is not None:
        b = p.get_by_label(re.compile(loc.label, flags))
    elif loc.placeholder is not None:
        b = p.get_by_placeholder(re.compile(loc.placeholder, flags))
    elif loc.css is not None:
        b = p.locator(loc.css)
    elif loc.drawing:
        b = p.locator("canvas, svg")
    else:
        b = p.locator("canvas")
    return b.filter(visible=True) if visible else b
