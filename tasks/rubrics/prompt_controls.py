"""The UI elements a query names, with what it states about them (pure): id, kind, label, default, range.

Read from the query as written (``prompt_outline``, and its HTML parsed by ``prompt_html``): an element is declared
by ``id="..."`` (in inline code, a code block or plain text). Its kind comes from the HTML tag that declares it
(``<input type="range">``, or the one prose gives it: ``_prose_tag``), else from the id's own wording
(``slider-``, ``btn-``), else from the words around it ("slider", "dropdown"); its label from ``<label for=...>``,
the button's text or a ``label: "..."`` line; its default, bounds and options from the lines that speak of it
alone (the list item naming it and what is nested under it, and the item above when that names no other element).
A plan's table of controls (``prompt_tables``: ``| ID | Type | Default Value | Min | Max | Step |``) states them for
the element alone: its row is read after the HTML's own attributes and before those lines.

Kinds: range, number, text, checkbox, radio, select, button, canvas, output (text the app displays),
area (a drawing or plot container), container (layout only: never an item).

Run: ``controls(outline(query), query)``.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field, replace

from tasks.rubrics.prompt_html import Html, Tag, line_starts, read_html
from tasks.rubrics.prompt_outline import Node, Outline, plain, span
from tasks.rubrics.prompt_tables import TableRow, stated_default, table_rows
from tasks.rubrics.vocab import HOLDS_DRAWING, ID_KIND_AFFIXES, NUMBER, is_number

ID_DECL = re.compile(r"""\bid\s*=\s*\\?["']([A-Za-z][\w\-:.]{0,60})\\?["']""")
# Prose fallback (see _prose_tag): a tag named without brackets just before an id ("`span id="x"`").
_BARE_TAG = re.compile(r"\b(input|button|select|canvas|span|div|p|output|label|textarea|svg|td|tbody|table)`?\s+"
                       r"(?:[\w-]+=\S+\s+)*(?=id\s*=)")
# Its attributes: every word up to _BARE_ATTRS_AFTER characters past the id, with its value if it has one ("`input`
# id="a" min="0" ..."). Not an HTML parse: what follows a bare tag is a sentence, which a parser reads as an error.
_BARE_ATTR = re.compile(r"""([A-Za-z_:][\w:.-]*)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]+))?""")
_BARE_ATTRS_AFTER = 80
_NUM = "(" + NUMBER + ")"
_TYPE_KIND = {"range": "range", "number": "number", "text": "text", "search": "text", "email": "text", "": "text",
              "checkbox": "checkbox", "radio": "radio", "button": "button", "submit": "button"}
_TAG_KIND = {"button": "button", "select": "select", "textarea": "text", "canvas": "canvas", "svg": "area",
             "span": "output", "output": "output", "p": "output", "td": "output", "strong": "output", "b": "output",
             "h1": "output", "h2": "output", "h3": "output", "h4": "output", "label": "output", "meter": "output",
             "progress": "output", "div": "container", "section": "container", "tbody": "container",
             "table": "container", "ul": "container", "ol": "container", "main": "container", "header": "container",
             "footer": "container", "aside": "container", "nav": "container", "img": "area"}
# An id's kind from its own wording ("slider-length", "btn-reset"), first match wins (vocab.ID_KIND_AFFIXES).
_PREFIX_KIND = [(kind, re.compile("|".join(filter(None, ("^(" + "|".join(start) + ")[-_]" if start else "",
                                                            "[-_](" + "|".join(end) + ")$" if end else "",
                                                            "|".join(anywhere)))), re.I))
                for kind, start, end, anywhere in ID_KIND_AFFIXES]
# An element's kind from the words around it ("a slider", "a drop-down"), first match wins.
_WORD_KIND = [(kind, re.compile(pat, re.I)) for kind, pat in [
              ("range", r"\bslider|\brange input"), ("checkbox", r"\bcheck ?box|\btoggle switch"),
              ("radio", r"\bradio\b"), ("select", r"\bdrop-?down|\bselect (menu|box|element)|\bcombo ?box"),
              ("button", r"\bbuttons?\b"), ("canvas", r"\bcanvas\b"),
              ("number", r"\bnumber (input|field)|\bnumeric (input|field)"),
              ("text", r"\btext ?(input|field|box|area)|\binput field"),
              ("output", r"\b(displays?|readout|shows|value label|text content)\b"),
              ("area", r"\b(plot|chart|graph|visuali[sz]ation|scene|diagram)\b")]]
# The whole-token bounds of an element's id in a text (with or without "#"): "#speed" and "speed," name it,
# "speed-value" does not.
_MENTION_BEFORE, _MENTION_AFTER = r"(?<![\w-])#?", r"(?![\w-])"
# What a plan states about an element, by kind (its context's plain text).
_BUTTON_ON = re.compile(r"\b(selected|active|highlighted|pressed)\b[^.\n]{0,20}\bby default|\bdefault\s*:?\s*"
                        r"(active|selected)|\b(is|are) (selected|active) (by default|initially|on load)", re.I)
_CHECKED_SAID = re.compile(r"\b(?:default(?:\s+state)?|initial(?:ly)?(?:\s+state)?)\s*(?:is|:|=)?\s*\(?(un)?(checked|"
                           r"selected|on|off)\b(?:\s*[:=]\s*(true|false))?|\b(checked|selected) by default\s*:?\s*"
                           r"(yes|no|true|false)?|\b(not )?(checked|selected) by default", re.I)
_OPTION_SAID = re.compile(r"\b(?:default(?:\s+(?:value|option|selection))?|initial(?:ly)?(?:\s+value)?)\s*(?:is|:|=)\s*"
                          r"[\"“']?([^\"”'\n,;()]{1,40}?)[\"”']?(?:[,;.()]|$)", re.I | re.M)
_NUMBER_SAID = re.compile(r"\b(?:initial(?:\s+value)?|default(?:\s+value)?|starts? at|value)\s*(?:is|of|:|=|to)?\s*"
                          r"(?:its default value of\s*)?[\"“'(]?\s*" + _NUM + r"\b", re.I)
_TEXT_SAID = re.compile(r"\b(?:initial(?:\s+value)?|default(?:\s+value)?|default text|pre-?filled with)\s*"
                        r"(?:is|of|:|=)?\s*[\"“']([^\"”'\n]{1,60})[\"”']", re.I)
_OUTPUT_LEAD = r"\b(?:initial|default)(?:\s+text)?(?:\s+content)?(?:\s+value)?\s*(?:is|:|=)\s*"
_OUTPUT_TEXT_SAID = re.compile(_OUTPUT_LEAD + r"[\"“']([^\"”'\n]{1,40})[\"”']", re.I)
_OUTPUT_NUMBER_SAID = re.compile(_OUTPUT_LEAD + _NUM + r"\b", re.I)
_LABEL_SAID = re.compile(r"\blabel(?:led|ed)?(?:\s+text)?\s*(?:is|:|=|as)?\s*[\"“]([^\"”\n]{1,60})[\"”]", re.I)
_BOUND_SAID = {"min": re.compile(r"\bmin(?:imum)?(?:\s+value)?\s*[:=]\s*[\"'(]?" + _NUM, re.I),
               "max": re.compile(r"\bmax(?:imum)?(?:\s+value)?\s*[:=]\s*[\"'(]?" + _NUM, re.I),
               "step": re.compile(r"\bstep(?:\s+size)?\s*[:=]\s*[\"'(]?" + _NUM, re.I)}
_RANGE_SAID = re.compile(r"\brange\s*(?:is|of|:)?\s*(?:from\s*)?\[?\(?" + _NUM + r"\s*(?:to|-|–|,|\.\.)\s*" + _NUM,
                         re.I)
_OPTIONS_SAID = re.compile(r"\boptions?\s*(?:are|:)\s*(.+)", re.I)
_QUOTED_OPTION = re.compile(r"[\"“']([^\"”'\n]{1,40})[\"”']")
_OPTION_SEP = re.compile(r",|\bor\b|\band\b")
CONTROL_KINDS = ("range", "number", "text", "checkbox", "radio", "select", "button")
# A table's Type cell -> the kind (an input's type, a tag, or a word: "slider", "dropdown")
_TABLE_KIND = {**{t: k for t, k in _TYPE_KIND.items() if t}, **{t: k for t, k in _TAG_KIND.items() if k != "container"},
               "slider": "range", "dropdown": "select"}


@dataclass(frozen=True)
class Control:
    """One element the query names and what it states about it (see the module docstring)."""

    id: str
    kind: str
    evidence: str  # the verbatim span of the query that declares it
    label: str | None = None
    default: str | None = None  # a value, an option, "checked"/"unchecked", or an output's initial text
    min: float | None = None
    max: float | None = None
    step: float | None = None
    options: tuple[str, ...] = ()
    tag: str | None = None

    @property
    def is_control(self) -> bool:
        return self.kind in CONTROL_KINDS

    @property
    def states_value(self) -> bool:
        """The query states a value of it that its control check compares (``checks_offline.control_check``): a
        slider's or number input's default or bounds, whether a checkbox or radio is checked, a text input's text
        (a dropdown's options are not visible to a check, a button's state is not read)."""
        if self.kind in ("range", "number"):
            return self.default is not None or (self.min is not None and self.max is not None)
        if self.kind in ("checkbox", "radio"):
            return self.default in ("checked", "unchecked")
        return self.kind == "text" and bool(self.default)


@dataclass
class _Facts:
    tag: str | None = None
    attrs: dict[str, str] = field(default_factory=dict)
    label: str | None = None
    inner: str | None = None
    options: list[str] = field(default_factory=list)
    selected: str | None = None


def _prose_tag(text: str, html: Html, starts: list[int], lines: list[int], m: re.Match[str]) -> Tag | None:
    """Fallback for an id written in prose, which no HTML parse ties to a tag, but queries write so (kept from the
    rules before tree-sitter): the last tag before it on its line ("A `<canvas>` element with `id="c"`"), else a
    tag named without brackets just before it ("`span id="x"`", read with its brackets put back)."""
    n = bisect_right(lines, m.start()) - 1
    line_start, line_end = lines[n], lines[n + 1] if n + 1 < len(lines) else len(text)
    on_line = html.tags[bisect_left(starts, line_start):bisect_right(starts, m.start())]
    before = [t for t in on_line if t.end <= m.start()]
    if before:
        return before[-1]
    line = text[line_start:line_end]
    bare = next((b for b in _BARE_TAG.finditer(line) if line_start + b.end() == m.start()), None)
    if bare is None:
        return None
    words = _BARE_ATTR.finditer(line[bare.start():m.end() - line_start + _BARE_ATTRS_AFTER])
    return Tag(m.start(), m.end(), bare.group(1).lower(), {a.group(1).lower(): (a.group(2) or "").strip("\"'")
                                                           for a in words})


def html_facts(text: str) -> dict[str, _Facts]:
    """id -> what the HTML in ``text`` declares about it: tag, attributes, label, inner text, options. An id's tag is
    the parsed tag it is written in, else the one prose gives it (``_prose_tag``); the first one found holds."""
    lines = line_starts(text)
    html = read_html(text, lines)
    starts = [t.start for t in html.tags]
    out: dict[str, _Facts] = {}
    for m in ID_DECL.finditer(text):
        f = out.setdefault(m.group(1), _Facts())
        i = bisect_right(starts, m.start()) - 1
        tag = html.tags[i] if i >= 0 and html.tags[i].end > m.start() else _prose_tag(text, html, starts, lines, m)
        if tag is not None and f.tag is None:
            f.tag, f.attrs = tag.name, tag.attrs
    for t in html.texts:  # a control's label: the last <label for> naming it
        if t.kind == "label" and t.text is not None:
            out.setdefault(t.id, _Facts()).label = " ".join(t.text.split())
    for t in html.texts:  # an element's own text: the first one it shows
        if t.kind == "inner" and t.text is not None:
            f = out.setdefault(t.id, _Facts())
            f.inner = f.inner or " ".join(t.text.split()) or None
    for t in html.texts:  # a select's options, and the one marked selected
        if t.kind == "option" and t.id and t.text is not None:
            f = out.setdefault(t.id, _Facts())
            f.options.append(" ".join(t.text.split()))
            f.selected = f.options[-1] if t.selected else f.selected
    return out


def _kind(cid: str, facts: _Facts, near_text: str, far_text: str, row: TableRow | None = None) -> str:
    if facts.tag == "input":
        return _TYPE_KIND.get(facts.attrs.get("type", "").lower(), "text")
    if facts.tag in _TAG_KIND:  # a layout tag holds what it is for; _area tells drawing areas apart
        return _TAG_KIND[facts.tag]
    if facts.tag is not None:
        return "container"
    if row is not None and row.kind in _TABLE_KIND:
        return _TABLE_KIND[row.kind]
    for kind, pat in _PREFIX_KIND:
        if pat.search(cid):
            return kind
    for text in (near_text, far_text):
        for kind, pat in _WORD_KIND:
            if pat.search(text):
                return kind
    return "container"


def mentions(text: str, cid: str) -> bool:
    """``text`` names the element ``cid`` (as a whole token, with or without ``#``)."""
    return re.search(_MENTION_BEFORE + re.escape(cid) + _MENTION_AFTER, text) is not None


def _context(node: Node, cid: str, ids: set[str]) -> str:
    """What the query says about ``cid`` alone: the highest node around its mention naming no other element."""
    others = ids - {cid}
    alone = lambda n: not any(mentions(n.subtree_text(), o) for o in others)  # noqa: E731
    if not alone(node):  # its own line, and the lines under it that name nothing else
        return "\n".join([node.text] + [c.subtree_text() for c in node.children if alone(c)])
    top = node
    for a in node.ancestors():
        if a.kind == "heading" or not alone(a):
            break
        top = a
    return top.subtree_text()


def _number(pattern: re.Pattern[str], text: str) -> float | None:
    m = pattern.search(text)
    return float(m.group(1)) if m else None


def _default(kind: str, ctx: str, f: _Facts, said: str | None = None) -> str | None:
    """The stated default of an element of ``kind`` in its HTML facts, its table row (``said``), its context text
    (plain), in that order."""
    if kind == "button":
        on = said or _BUTTON_ON.search(ctx)
        return "checked" if on else None
    if kind in ("checkbox", "radio"):
        if "checked" in f.attrs:
            return "checked"
        if said is not None:
            return said
        m = _CHECKED_SAID.search(ctx)
        if not m:
            return None
        neg = bool(m.group(1)) or (m.group(2) or "").lower() == "off" or (m.group(3) or "").lower() == "false" or \
            (m.group(5) or "").lower() in ("no", "false") or bool(m.group(6))
        return "unchecked" if neg else "checked"
    if kind == "select":
        m = _OPTION_SAID.search(ctx)
        return f.selected or said or (m.group(1).strip() if m else None)
    if kind in ("range", "number"):
        if f.attrs.get("value") and is_number(f.attrs["value"]):
            return f.attrs["value"]
        m = _NUMBER_SAID.search(ctx)
        return said or (m.group(1) if m else None)
    if kind == "text":
        m = _TEXT_SAID.search(ctx)
        return f.attrs.get("value") or said or (m.group(1) if m else None)
    if kind == "output":
        m = _OUTPUT_TEXT_SAID.search(ctx) or _OUTPUT_NUMBER_SAID.search(ctx)
        return said or (m.group(1) if m else None)
    return None


def _label(ctx: str, f: _Facts) -> str | None:
    if f.label:
        return f.label
    m = _LABEL_SAID.search(ctx)
    if m:
        return m.group(1).strip()
    if f.tag == "button" and f.inner:
        return f.inner
    return None


def _bounds(ctx: str, f: _Facts, row: TableRow | None = None) -> tuple[float | None, float | None, float | None]:
    """min, max and step: the HTML's attributes, else the table row's, else the context text's."""
    def said(k: str) -> float | None:
        attr = float(f.attrs[k]) if is_number(f.attrs.get(k, "")) else None
        tabled = getattr(row, k) if row is not None else None
        return attr if attr is not None else tabled if tabled is not None else _number(_BOUND_SAID[k], ctx)

    lo, hi, step = said("min"), said("max"), said("step")
    if lo is None or hi is None:
        m = _RANGE_SAID.search(ctx)
        if m:
            lo, hi = float(m.group(1)), float(m.group(2))
    if lo is not None and hi is not None and lo >= hi:
        return None, None, step
    return lo, hi, step


def _options(ctx: str, f: _Facts) -> tuple[str, ...]:
    listed = f.options or [" ".join(t.text.split()) for t in read_html(ctx).texts if t.kind == "option" and
                           t.text is not None]
    if listed:
        return tuple(dict.fromkeys(listed))
    m = _OPTIONS_SAID.search(ctx)
    if not m:
        return ()
    quoted = _QUOTED_OPTION.findall(m.group(1))
    parts = quoted or [p.strip(" .`*") for p in _OPTION_SEP.split(m.group(1).split("\n")[0])]
    return tuple(dict.fromkeys(p for p in parts if 0 < len(p) <= 40))


def controls(ol: Outline, query: str) -> list[Control]:
    """Every element the query declares by id, in the order first declared, with what it states about it."""
    facts, rows = html_facts(query), table_rows(query)
    order: list[str] = []
    for m in ID_DECL.finditer(query):
        if m.group(1) not in order:
            order.append(m.group(1))
    ids = set(order)
    out = []
    for cid in order:
        f = facts.get(cid, _Facts())
        hits = [n for n in ol.nodes if mentions(n.text, cid)]
        decl = next((n for n in hits if ID_DECL.search(n.text) and cid in n.text), hits[0] if hits else None)
        near = plain(decl.text) if decl else ""
        far = " ".join(plain(a.text) for a in decl.ancestors() if a.kind == "item") if decl else ""
        row = rows.get(cid)
        kind = _kind(cid, f, near, far, row)
        ctx = "\n".join(plain(line) for n in hits for line in _context(n, cid, ids).splitlines())
        lo, hi, step = _bounds(ctx, f, row) if kind in ("range", "number") else (None, None, None)
        evidence = decl.text if decl else next(m.group(0) for m in ID_DECL.finditer(query) if m.group(1) == cid)
        label = _label(ctx, f) if kind in CONTROL_KINDS else None
        out.append(Control(cid, kind, span(evidence), label, _default(kind, ctx, f, stated_default(kind, row)),
                           lo, hi, step, _options(ctx, f) if kind == "select" else (), f.tag))
    return [_area(c) for c in out]


_DRAWN_ID = re.compile(r"canvas|plot|chart|graph|visuali[sz]|scene|sketch|diagram|drawing", re.I)
_LAYOUT_ID = re.compile(r"(main|app|page|demo|control)s?-")  # "app-canvas-wrap" is the page's layout


def _area(c: Control) -> Control:
    """A container named for a drawing, or said to hold one, is a drawing area (an item); others are layout."""
    said = HOLDS_DRAWING.search(c.evidence.split(":", 1)[-1]) is not None
    if c.kind == "container" and (_DRAWN_ID.search(c.id) or said) and not _LAYOUT_ID.match(c.id):
        return replace(c, kind="area")
    return c
