"""Format gate (paper 3.3, stage 1): find the final HTML application in a response and its offset h.

Candidates are fenced code blocks tagged ``html``/``htm`` (closed by a ``` line) and bare documents
(``<!DOCTYPE html`` or ``<html`` up to the matching last ``</html>``) outside those blocks. The last
complete candidate (by end position) wins; a truncated block or document is not complete. ``h`` is
the character offset of the application's first character in the response, so an offset ``a`` in
the application is ``h + a`` in the response (paper G.3).

Run: ``extract_html(response_text)`` -> ``Extraction | None``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# The opening fence: ``` or ~~~ (3+), info string starting with html/htm; content starts on the next line.
_OPEN = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?:html?|HTML?)\b[^\n]*\n", re.M)
_TAG = re.compile(r"<[A-Za-z!/]")
# A doctype swallows the <html> tag that follows it, so that tag does not start a second document.
_DOC_START = re.compile(r"<!doctype\s+html[^>]*>(?:\s|<!--.*?-->)*(?:<html[\s>])?|<html[\s>]", re.I | re.S)
_DOC_END = re.compile(r"</html\s*>", re.I)


@dataclass(frozen=True)
class Extraction:
    html: str
    offset: int  # h: character offset of html[0] in the response
    kind: str  # "fenced" | "document"

    @property
    def end(self) -> int:
        return self.offset + len(self.html)


def _fenced_blocks(text: str) -> list[Extraction]:
    out: list[Extraction] = []
    pos = 0
    while True:
        m = _OPEN.search(text, pos)
        if not m:
            return out
        fence = m.group("fence")
        # The closing fence: same character, at least as long, alone on its line.
        close = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M).search(text, m.end())
        if not close:
            return out  # unclosed (truncated) block: not complete
        start, end = m.end(), close.start()
        body = text[start:end]
        if body.endswith("\n"):
            body = body[:-1]
        if _TAG.search(body):
            out.append(Extraction(body, start, "fenced"))
        pos = close.end()


def _bare_documents(text: str, masked: list[tuple[int, int]]) -> list[Extraction]:
    out: list[Extraction] = []
    pos = 0

    def inside(i: int) -> bool:
        return any(a <= i < b for a, b in masked)

    while True:
        m = _DOC_START.search(text, pos)
        if not m:
            return out
        if inside(m.start()):
            pos = m.end()
            continue
        # A document ends at the last </html> before the next document start (or the end of text).
        nxt = _DOC_START.search(text, m.end())
        while nxt and inside(nxt.start()):
            nxt = _DOC_START.search(text, nxt.end())
        limit = nxt.start() if nxt else len(text)
        ends = [e for e in _DOC_END.finditer(text, m.start(), limit) if not inside(e.start())]
        if ends:
            out.append(Extraction(text[m.start() : ends[-1].end()], m.start(), "document"))
        pos = limit if nxt else len(text)


def extract_html(response: str) -> Extraction | None:
    """The final complete HTML application in ``response``, or None (format invalid)."""
    if not isinstance(response, str):
        raise TypeError(f"response must be str, got {type(response).__name__}; decode the file as UTF-8 first")
    fenced = _fenced_blocks(response)
    masked = [(b.offset, b.end) for b in fenced]
    candidates = fenced + _bare_documents(response, masked)
    if not candidates:
        return None
    return max(candidates, key=lambda c: (c.end, c.kind == "fenced"))
