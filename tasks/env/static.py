"""Source validity evidence (paper 3.3, stage 2) from tree-sitter: HTML, CSS and every inline script.

The page is parsed once as HTML; each inline ``<script>`` and ``<style>`` is then parsed with the
JavaScript or CSS grammar restricted to its own bytes through ``included_ranges``, so every node and
every syntax error keeps its offset in the whole page. Each ERROR or MISSING node becomes a
``SourceError`` with character offsets into the HTML application (add h for response offsets).

Which errors fail the source gate (``blocking``):
- JavaScript (classic, module, JSX in ``text/babel``): every error — such a script does not run.
- JSON islands (``importmap``, ``application/json``): every error — an invalid import map breaks imports.
- CSS: only structural errors (unbalanced braces, which swallow the rules after them). Departure from
  a literal reading of the issue: tree-sitter-css lags the CSS spec (media range syntax, ``[a=b i]``,
  ``;;`` are valid CSS yet parse as errors) and browsers drop only the bad declaration, so other CSS
  errors are recorded with ``blocking=False``.
- HTML: recorded, never blocking unless ``StaticConfig.html_errors_fail`` (browsers recover).

Run: ``check_source(html, StaticConfig())`` -> ``StaticEvidence``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

import tree_sitter as ts
import tree_sitter_css
import tree_sitter_html
import tree_sitter_javascript

from schemas.config.env import StaticConfig

JS_TYPES = {"", "text/javascript", "application/javascript", "module", "text/babel", "text/jsx",
            "application/ecmascript", "text/ecmascript", "javascript", "text/x-javascript"}
JSON_TYPES = {"importmap", "application/json", "application/ld+json", "speculationrules"}
CSS_TYPES = {"", "text/css", "text/tailwindcss"}


@lru_cache(maxsize=None)
def _language(name: str) -> ts.Language:
    mod = {"html": tree_sitter_html, "javascript": tree_sitter_javascript, "css": tree_sitter_css}[name]
    return ts.Language(mod.language())


@dataclass
class SourceError:
    language: str  # html | javascript | css | json
    start: int  # character offsets into the HTML application
    end: int
    line: int  # 1-based line and column in the HTML application (as browser stack traces give them)
    column: int
    message: str
    snippet: str
    blocking: bool


@dataclass
class Region:
    """An inline script or stylesheet: its language and character span in the page."""

    language: str
    kind: str  # the script type ("classic", "module", "babel", "importmap", ...) or "style"
    start: int
    end: int


@dataclass
class StaticEvidence:
    errors: list[SourceError] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    external_scripts: list[str] = field(default_factory=list)
    truncated: bool = False

    @property
    def source_valid(self) -> bool:
        """Our own verdict: no blocking syntax error."""
        return not any(e.blocking for e in self.errors)


class _Offsets:
    """Byte offset -> character offset / line / column, for pages that are not pure ASCII."""

    def __init__(self, text: str, data: bytes) -> None:
        self.text, self.data, self.ascii = text, data, len(text) == len(data)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def char(self, byte: int) -> int:
        return byte if self.ascii else len(self.data[:byte].decode("utf-8", "ignore"))

    def line_col(self, char: int) -> tuple[int, int]:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= char:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, char - self.line_starts[lo] + 1


def _attr(start_tag: ts.Node, name: str) -> str | None:
    for a in start_tag.children:
        if a.type != "attribute":
            continue
        n = next((c for c in a.children if c.type == "attribute_name"), None)
        if n is None or n.text is None or n.text.decode("utf-8", "replace").lower() != name:
            continue
        v = next((c for c in a.children if c.type in ("attribute_value", "quoted_attribute_value")), None)
        if v is None or v.text is None:
            return ""
        return v.text.decode("utf-8", "replace").strip("\"'").strip()
    return None


def _error_nodes(root: ts.Node, limit: int) -> list[ts.Node]:
    out: list[ts.Node] = []
    stack = [root]
    while stack and len(out) < limit:
        n = stack.pop()
        if n.is_error or n.is_missing:
            out.append(n)
            continue
        if n.has_error:
            stack.extend(reversed(n.children))
    return out


def _message(n: ts.Node, language: str) -> str:
    if n.is_missing:
        return f"{language} syntax error: missing {n.type!r}"
    leaf = n
    while leaf.children:
        leaf = leaf.children[0]
    tok = (leaf.text or b"").decode("utf-8", "replace")[:40]
    return f"{language} syntax error: unexpected {tok!r}" if tok else f"{language} syntax error"


def _mk_error(off: _Offsets, language: str, b0: int, b1: int, message: str, blocking: bool) -> SourceError:
    c0, c1 = off.char(b0), off.char(b1)
    line, col = off.line_col(c0)
    return SourceError(language, c0, c1, line, col, message, off.text[c0 : min(c1, c0 + 120)], blocking)


def _css_balanced(text: str) -> bool:
    """Braces balance once comments and strings are masked (a structural CSS error otherwise)."""
    text = re.sub(r"/\*.*?(\*/|$)", "", text, flags=re.S)
    text = re.sub(r"\"(\\.|[^\"\\\n])*\"|'(\\.|[^'\\\n])*'", "", text)
    depth = 0
    for ch in text:
        depth += ch == "{"
        depth -= ch == "}"
        if depth < 0:
            return False
    return depth == 0


def _script_kind(typ: str | None) -> tuple[str | None, str]:
    t = (typ or "").strip().lower()
    if t in JS_TYPES:
        return "javascript", {"": "classic", "module": "module", "text/babel": "babel", "text/jsx": "babel"}.get(t, "classic")
    if t in JSON_TYPES:
        return "json", t
    return None, t  # shaders, templates, data blocks: not code the page runs


def _regions(root: ts.Node, off: _Offsets, ev: StaticEvidence) -> list[tuple[str, str, ts.Node]]:
    found: list[tuple[str, str, ts.Node]] = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type in ("script_element", "style_element"):
            tag = next((c for c in n.children if c.type == "start_tag"), None)
            raw = next((c for c in n.children if c.type == "raw_text"), None)
            if tag is None:
                continue
            if n.type == "script_element":
                src = _attr(tag, "src")
                if src is not None:
                    ev.external_scripts.append(src)
                    continue  # a script with src ignores its inline body
                lang, kind = _script_kind(_attr(tag, "type"))
            else:
                typ = (_attr(tag, "type") or "").lower()
                lang, kind = ("css", "style") if typ in CSS_TYPES else (None, typ)
            if lang and raw is not None:
                found.append((lang, kind, raw))
                ev.regions.append(Region(lang, kind, off.char(raw.start_byte), off.char(raw.end_byte)))
            continue
        stack.extend(reversed(n.children))
    return found


def _check_json(off: _Offsets, raw: ts.Node, kind: str) -> SourceError | None:
    text = off.data[raw.start_byte : raw.end_byte].decode("utf-8", "replace")
    if not text.strip():
        return None
    try:
        json.loads(text)
        return None
    except json.JSONDecodeError as e:
        b = raw.start_byte + len(text[: e.pos].encode("utf-8"))
        return _mk_error(off, "json", b, min(b + 1, raw.end_byte), f"{kind} is not valid JSON: {e.msg}", True)


def check_source(html: str, cfg: StaticConfig | None = None) -> StaticEvidence:
    """Parse the page and every inline script/stylesheet; collect syntax errors with page offsets."""
    cfg = cfg or StaticConfig()
    data = html.encode("utf-8")
    off = _Offsets(html, data)
    ev = StaticEvidence()
    tree = ts.Parser(_language("html")).parse(data)
    for n in _error_nodes(tree.root_node, cfg.max_errors):
        ev.errors.append(_mk_error(off, "html", n.start_byte, n.end_byte, _message(n, "html"), cfg.html_errors_fail))
    for lang, kind, raw in _regions(tree.root_node, off, ev):
        if len(ev.errors) >= cfg.max_errors:
            ev.truncated = True
            break
        if lang == "json":
            err = _check_json(off, raw, kind)
            if err:
                ev.errors.append(err)
            continue
        parser = ts.Parser(_language(lang))
        parser.included_ranges = [raw.range]  # offsets stay page offsets
        sub = parser.parse(data)
        nodes = _error_nodes(sub.root_node, cfg.max_errors - len(ev.errors))
        blocking = lang == "javascript" or (
            lang == "css" and bool(nodes) and not _css_balanced(data[raw.start_byte : raw.end_byte].decode("utf-8", "replace")))
        for n in nodes:
            ev.errors.append(_mk_error(off, lang, n.start_byte, n.end_byte, _message(n, lang), blocking))
    return ev
