"""Where the sandboxed app lives and how browser stack positions map to offsets in its HTML (pure).

The runtime, the interaction probe and the rubric checks all read these; they sit apart from the runtime
so the probe and the checks need not import the browser machinery that imports them.
"""
from __future__ import annotations

import re

# Plain http, treated as a secure context by a flag: an https page would block http subresources as mixed
# content before our routes see them, and those attempts must be recorded like any other.
APP_ORIGIN = "http://app.rubricrl.test"
APP_URL = f"{APP_ORIGIN}/index.html"
_STACK_POS = re.compile(re.escape(APP_URL) + r":(\d+):(\d+)")


def html_offset(html: str, line: int, column: int) -> int | None:
    """1-based line/column (as in browser stack traces) -> character offset in ``html``."""
    lines = html.split("\n")
    if not 1 <= line <= len(lines):
        return None
    return sum(len(x) + 1 for x in lines[: line - 1]) + max(column - 1, 0)


def stack_position(stack: str) -> tuple[int, int] | None:
    """The 1-based line and column of a stack's first in-page frame (pure)."""
    m = _STACK_POS.search(stack or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def stack_offset(html: str, stack: str) -> int | None:
    """HTML offset of the first in-page frame of a stack (pure)."""
    pos = stack_position(stack)
    return html_offset(html, *pos) if pos else None


# True when the page renders nothing a user could see: no text, and no element that draws (a canvas, an image, a
# control) or is painted (a background, a border)
BLANK_JS = """() => {
  const b = document.body;
  if (!b) return true;
  if ((b.innerText || '').trim().length > 0) return false;
  const els = b.querySelectorAll('*');
  for (let i = 0; i < els.length && i < 3000; i++) {
    const e = els[i], r = e.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) continue;
    if (/^(CANVAS|SVG|IMG|VIDEO|INPUT|BUTTON|SELECT|TEXTAREA|IFRAME|PROGRESS|METER|OBJECT|EMBED)$/i.test(e.tagName)) return false;
    const s = getComputedStyle(e);
    if (s.backgroundColor !== 'rgba(0, 0, 0, 0)' || s.backgroundImage !== 'none' || s.borderStyle !== 'none') return false;
  }
  return true;
}"""
