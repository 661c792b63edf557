"""What a plan's markdown table of controls states about each one (pure): kind, default, bounds, step.

Some InteractScience plans list their controls in a table ("### 3. Component IDs and State": ``| ID | Type |
Default Value | Min | Max | Step | Label |``), one row per element id, and say their defaults and ranges nowhere
else. A table is read when its header has an id column (``ID``, ``Element ID``); the other columns are found by
their header's first word (``COLUMNS``); a cell that states nothing ("-", "N/A", empty) is left unstated. Tables
of data (a header without an id column: "| Body | Semi-major Axis |") are not read. The cells are found by a
CommonMark parser with GFM tables (markdown-it-py), inside list items too.

``prompt_controls`` reads a row as what the plan states about that element alone, after the HTML's own attributes
and before the words around it (which may give a number of something else: "black (at value 0)").

Run: ``table_rows(query)["slider-rmsd"]``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

from tasks.rubrics.vocab import is_number

_MARKDOWN = MarkdownIt("commonmark").enable("table")
_ID_HEADER = re.compile(r"^(?:element\s+|component\s+)?id$", re.I)
# column -> the first word of the headers that name it ("Default Value", "Initial Value", "Min", "Maximum")
COLUMNS: dict[str, re.Pattern[str]] = {"kind": re.compile(r"^(?:type|kind)\b", re.I),
                                       "default": re.compile(r"^(?:default|initial)\b", re.I),
                                       "min": re.compile(r"^min(?:imum)?\b", re.I),
                                       "max": re.compile(r"^max(?:imum)?\b", re.I),
                                       "step": re.compile(r"^step\b", re.I)}
_UNSTATED = {"", "-", "--", "\u2013", "\u2014", "n/a", "na", "none", "null"}
_CELL_MARKUP = re.compile(r"[`*\"']")
_TABLE_ID = re.compile(r"^#?([A-Za-z][\w\-:.]{0,60})$")
# A table's word for a state -> the ``Control.default`` it means ("checked" for a button: the one already chosen)
STATE_WORDS = {"checked": "checked", "true": "checked", "on": "checked", "yes": "checked", "selected": "checked",
               "active": "checked", "unchecked": "unchecked", "false": "unchecked", "off": "unchecked",
               "no": "unchecked", "unselected": "unchecked", "inactive": "unchecked"}


@dataclass(frozen=True)
class TableRow:
    """What one row states about its element: each field as written (markup removed), None where unstated."""

    id: str
    kind: str | None = None
    default: str | None = None
    min: float | None = None
    max: float | None = None
    step: float | None = None


def _cell(text: str) -> str | None:
    plain = " ".join(_CELL_MARKUP.sub("", text).split())
    return None if plain.lower() in _UNSTATED else plain


def _tables(query: str) -> list[list[list[str]]]:
    """Every table in the query: its rows (the header first), each a list of its cells' raw text."""
    out: list[list[list[str]]] = []
    row: list[str] | None = None
    for tok in _MARKDOWN.parse(query):
        if tok.type == "table_open":
            out.append([])
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "inline" and row is not None:
            row.append(tok.content)
        elif tok.type == "tr_close" and row is not None:
            out[-1].append(row)
            row = None
    return out


def _number(text: str | None) -> float | None:
    return float(text) if text is not None and is_number(text) else None


def _row(cells: list[str | None], cols: dict[str, int], id_col: int) -> TableRow | None:
    m = _TABLE_ID.match(cells[id_col] or "") if id_col < len(cells) else None
    if m is None:
        return None
    said = {k: cells[i] if i < len(cells) else None for k, i in cols.items()}
    return TableRow(m.group(1), (said.get("kind") or "").lower() or None, said.get("default"),
                    _number(said.get("min")), _number(said.get("max")), _number(said.get("step")))


def table_rows(query: str) -> dict[str, TableRow]:
    """element id -> what the plan's tables of controls state about it (the first row naming it holds)."""
    out: dict[str, TableRow] = {}
    for rows in _tables(query):
        header = [_cell(h) or "" for h in rows[0]] if rows else []
        id_col = next((i for i, h in enumerate(header) if _ID_HEADER.match(h)), None)
        if id_col is None:
            continue
        cols = {k: next(i for i, h in enumerate(header) if pat.match(h)) for k, pat in COLUMNS.items()
                if any(pat.match(h) for h in header)}
        for cells in rows[1:]:
            got = _row([_cell(c) for c in cells], cols, id_col)
            if got is not None and got.id not in out:
                out[got.id] = got
    return out


def stated_default(kind: str, row: TableRow | None) -> str | None:
    """The ``Control.default`` a row states for an element of ``kind``: a number for a slider or number input, a
    state for a checkbox, radio or button, an option or a text as written; None where it states none."""
    raw = row.default if row is not None else None
    if raw is None:
        return None
    if kind in ("range", "number"):
        return raw if is_number(raw) else None
    if kind in ("checkbox", "radio"):
        return STATE_WORDS.get(raw.lower())
    if kind == "button":  # only the one already chosen is a state a button has ("inactive" is every other's)
        return "checked" if STATE_WORDS.get(raw.lower()) == "checked" else None
    return raw
