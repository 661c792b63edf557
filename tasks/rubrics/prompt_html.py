"""The HTML a query shows, parsed with tree-sitter-html (pure): its tags with their attributes, and the text of
its labels, elements and options, read with ``queries/prompt_html.scm`` (the grammar and query loading are
``tasks.attribution.grammar``'s).

A query is markdown that shows HTML in code blocks, code spans and sentences, so it is not parsed as one document
(a ``<script>`` named in a sentence would take in the rest of the query as its code, ``i<n`` would open a tag over
the lines after it). It is parsed in fragments (``fragments``): a run of lines that each begin with a tag or hold
none (an HTML sample; one snippet per list item, as a ``<select>`` whose options are listed under it), and each
other line that holds a tag; a fragment where a ``<script>`` or ``<style>`` is left open is cut after its line.
``prompt_controls.html_facts`` reads ids from it.

Run: ``read_html(query)``.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import tree_sitter as ts

from tasks.attribution.grammar import html_language, load_query, matches

_QUERIES = Path(__file__).with_name("queries")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")  # a character of more than one byte (tree-sitter counts bytes)
# A line that begins with a tag, in a list item or a code span or not ("- `<option>A</option>`").
_TAG_FIRST = re.compile(r"^[ \t]*(?:(?:[-*+]|\d+[.)])[ \t]+)?`*<[A-Za-z/]")
TEXT_MAX = {"label": 80, "inner": 80, "option": 60}  # the longest text read as a label, inner text, option


@dataclass(frozen=True)
class Tag:
    """A tag that opens an element (``<input type="range" id="x">``), at character offsets of the text."""

    start: int
    end: int
    name: str  # lower case
    attrs: dict[str, str]  # attribute name (lower case) -> value (unquoted; "" when it has none)


@dataclass(frozen=True)
class Text:
    """What an element shows as text (``<label for="x">Mass</label>``): ``kind`` label (of the control ``id``),
    inner (of the element ``id``) or option (of the select ``id``, "" outside one). ``text`` is None where the
    element holds a tag, nothing, or more than ``TEXT_MAX[kind]`` characters."""

    kind: str
    id: str
    text: str | None
    selected: bool = False  # an option marked selected


@dataclass
class Html:
    """A text parsed as HTML (``queries/prompt_html.scm``): its tags and element texts, in page order."""

    tags: list[Tag]
    texts: list[Text]
    raw_open: int | None = None  # where a <script> or <style> left open starts: it takes in all after it


def _char_offsets(text: str) -> Callable[[int], int]:
    """Byte offset in ``text.encode()`` -> character offset in ``text``."""
    at, extra = [], [0]
    for m in _NON_ASCII.finditer(text):
        at.append(m.start() + extra[-1])
        extra.append(extra[-1] + len(m.group(0).encode()) - 1)
    return lambda b: b - extra[bisect_left(at, b)]


def _select_of(option: ts.Node) -> ts.Node | None:
    """The closed ``<select>`` element around an option element, if any."""
    a = option.parent
    while a is not None:
        if a.type == "element" and a.children[0].type == "start_tag" and \
                a.children[0].named_children[0].text.lower() == b"select":
            return a if a.children[-1].type == "end_tag" else None
        a = a.parent
    return None


def parse(text: str, offset: int = 0, parser: ts.Parser | None = None) -> Html:
    """``text`` parsed as one HTML fragment with tree-sitter-html and read with ``queries/prompt_html.scm``; its
    offsets counted from ``offset``."""
    to_char = _char_offsets(text)
    at = lambda b: offset + to_char(b)  # noqa: E731
    root = (parser or ts.Parser(html_language())).parse(text.encode()).root_node
    found = matches(load_query("prompt_html", html=True, folder=_QUERIES), root)
    tags = {m["tag"][0].id: Tag(at(m["tag"][0].start_byte), at(m["tag"][0].end_byte),
                                 m["tag.name"][0].text.decode().lower(), {}) for m in found if "tag" in m}
    for m in found:
        if "attr.name" in m and (tag := tags.get(m["attr.name"][0].parent.parent.id)) is not None:
            value = m["attr.value"][0].text.decode() if "attr.value" in m else ""
            tag.attrs[m["attr.name"][0].text.decode().lower()] = value.strip("\"'")
    texts = []
    for m in found:
        kind = next((k for k in TEXT_MAX if f"{k}.open" in m), None)
        if kind is None:
            continue
        opened = m[f"{kind}.open"][0]
        inner = text[to_char(opened.end_byte):to_char(m[f"{kind}.close"][0].start_byte)]
        shown = inner if "<" not in inner and 0 < len(inner) <= TEXT_MAX[kind] else None
        if kind == "option":
            select = _select_of(opened.parent)
            cid = tags[select.children[0].id].attrs.get("id", "") if select is not None else ""
            texts.append(Text(kind, cid, shown, "selected" in tags[opened.id].attrs))
        else:
            texts.append(Text(kind, m["label.target" if kind == "label" else "inner.id"][0].text.decode(), shown))
    raw = [at(n.start_byte) for m in found if "raw" in m and ((n := m["raw"][0]).next_sibling is None or
                                                              n.next_sibling.type != "end_tag")]
    return Html(sorted(tags.values(), key=lambda t: t.start), texts, min(raw, default=None))


def line_starts(text: str) -> list[int]:
    """The offset of each line of ``text`` (as ``str.splitlines`` cuts it)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts[:-1] or [0]


def _joins(line: str) -> bool:
    """A line that can sit in a fragment of several lines: it begins with a tag, or holds none."""
    return "<" not in line or _TAG_FIRST.match(line) is not None


def fragments(text: str, starts: list[int]) -> list[tuple[int, int]]:
    """The HTML fragments of a query, (start, end): each run of lines that begin with a tag or hold none (an HTML
    sample, one snippet per list item, the text between them) whole; each other line holding a tag alone. A query
    is markdown: a ``<`` in a sentence ("a `<script>` tag for p5", "`i<n`") must not open an element over the
    lines after it."""
    lines = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        j = i + 1
        while _joins(lines[i]) and j < len(lines) and _joins(lines[j]):
            j += 1
        if any("<" in line for line in lines[i:j]):
            out.append((starts[i], starts[j - 1] + len(lines[j - 1])))
        i = j
    return out


def _parse_cut(text: str, start: int, end: int, parser: ts.Parser) -> list[Html]:
    """A fragment parsed, or, where a <script> or <style> is left open in it, cut after the line that opens it and
    both parts parsed."""
    html = parse(text[start:end], start, parser)
    cut = text.find("\n", html.raw_open) + 1 if html.raw_open is not None else 0
    if 0 < cut < end:
        return _parse_cut(text, start, cut, parser) + _parse_cut(text, cut, end, parser)
    return [html]


def read_html(text: str, starts: list[int] | None = None) -> Html:
    """The HTML of a query: each of its fragments parsed, at offsets of ``text``."""
    parser = ts.Parser(html_language())
    parts = [h for start, end in fragments(text, starts if starts is not None else line_starts(text))
             for h in _parse_cut(text, start, end, parser)]
    return Html([t for h in parts for t in h.tags], [t for h in parts for t in h.texts])
