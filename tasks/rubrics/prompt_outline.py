"""The structure of a query as written (pure): markdown headings, list items nested by indentation, code
blocks, paragraphs. The offline rubric rules read a query through this outline, never as one string.

A ``Node`` is a heading, a list item or a paragraph; its ``text`` is the line as written without the list
marker (a verbatim span of the query, so it can be an item's ``query_evidence``), and a list item's
continuation lines are kept with it. Fenced code blocks are kept apart (``Outline.code``): they are code
samples, never rubric items, though the elements they declare still name the app's controls.

Fenced code is found by a CommonMark parser (markdown-it-py: a fence closes only on its own character and
length). Headings and list items are this module's rules: plans number sub-steps ``a.`` and bullet with
``•``, and nest by columns, which CommonMark reads otherwise (19 of the 158 InteractScience and short-request
queries would change their items).

Run: ``outline(query).nodes``; ``node.subtree_text()`` is a node with everything nested under it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

_MARKDOWN = MarkdownIt("commonmark")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BOLD_HEADING = re.compile(r"^\s{0,3}\*\*([^*]{2,80})\*\*:?\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+\u2022]|\d{1,3}[.)]|[a-z][.)])\s+(.*)$")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
_MARKUP = re.compile(r"\*\*|__|`")


@dataclass
class Node:
    """One heading, list item or paragraph of the query, with what is nested under it."""

    kind: str  # heading | item | paragraph
    text: str  # as written, without the list marker
    level: int  # heading level (1-6) or list indentation in columns
    section: str  # the nearest heading above it ("" before any heading)
    parent: "Node | None" = None
    children: list["Node"] = field(default_factory=list)

    def subtree_text(self) -> str:
        return "\n".join([self.text] + [c.subtree_text() for c in self.children])

    def ancestors(self) -> list["Node"]:
        out, p = [], self.parent
        while p is not None:
            out.append(p)
            p = p.parent
        return out

    def plain(self) -> str:
        return plain(self.text)


@dataclass
class Outline:
    nodes: list[Node]  # every node, in the order written
    code: list[str]  # fenced code blocks, verbatim
    structured: bool  # headings or list items: a plan, not a request in a sentence or two


EVIDENCE_CHARS = 300  # an item's query_evidence, at most


def span(text: str, limit: int = EVIDENCE_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, so it still matches the query word for word."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut[:cut.rfind(" ")].rstrip() if " " in cut else cut


def plain(text: str) -> str:
    """Text without emphasis and code marks (``**`` ``__`` backticks), whitespace collapsed."""
    return " ".join(_MARKUP.sub("", text).split())


def _attach(stack: list[Node], node: Node, roots: list[Node]) -> None:
    """Nest ``node`` under the last open node that encloses it (headings by level, items by indentation)."""
    def encloses(open_: Node) -> bool:
        if open_.kind == "heading":
            return node.kind != "heading" or node.level > open_.level
        return node.kind == "item" and open_.kind == "item" and node.level > open_.level

    while stack and not encloses(stack[-1]):
        stack.pop()
    if stack:
        node.parent = stack[-1]
        stack[-1].children.append(node)
    else:
        roots.append(node)
    stack.append(node)


def fences(lines: list[str]) -> dict[int, tuple[int, bool]]:
    """Fenced code blocks of ``lines``: first line -> (the line after the block, whether a fence closes it)."""
    out = {}
    for t in _MARKDOWN.parse("\n".join(lines)):
        if t.type == "fence" and t.map:
            start, end = t.map
            last = lines[end - 1].strip()
            out[start] = (end, end - 1 > start and len(last) >= len(t.markup) and not last.strip(t.markup[0]))
    return out


def outline(query: str) -> Outline:
    """The query's headings, list items, paragraphs and code blocks (see the module docstring)."""
    nodes: list[Node] = []
    code: list[str] = []
    roots: list[Node] = []
    stack: list[Node] = []
    section = ""
    last: Node | None = None
    lines = query.splitlines()
    fenced = fences(lines)
    i = 0
    while i < len(lines):
        line = lines[i]
        if i in fenced:  # a code sample, kept apart; the text around it goes on as if it were not there
            end, closed = fenced[i]
            body = lines[i + 1:end - 1 if closed else end]
            if closed or body:
                code.append("\n".join(body))
            i = end
            continue
        i += 1
        if not line.strip() or _RULE.match(line):
            if last is not None and last.kind == "paragraph":
                last = None
            continue
        h = _HEADING.match(line) or (_BOLD_HEADING.match(line) if not _BULLET.match(line) else None)
        b = _BULLET.match(line)
        if h:
            level = len(h.group(1)) if h.re is _HEADING else 6
            text = (h.group(2) if h.re is _HEADING else h.group(1)).strip()
            node = Node("heading", text, level, section)
            section = plain(text)
            node.section = section
        elif b:
            node = Node("item", b.group(2).strip(), len(b.group(1).expandtabs(4)), section)
        elif last is not None and last.kind in ("item", "paragraph"):
            last.text += " " + line.strip()  # a wrapped line belongs to the item or paragraph above
            continue
        else:
            node = Node("paragraph", line.strip(), 0, section)
        _attach(stack, node, roots)
        nodes.append(node)
        last = node
    structured = sum(n.kind in ("heading", "item") for n in nodes) >= 3
    return Outline(nodes, code, structured)
