"""The tree-sitter side of the source analyzer: the JavaScript and HTML grammars, the ``.scm`` queries in
``queries/`` compiled once per process, and the query groups matched in one traversal each (``QUERY_GROUPS``:
structure and state) over parsed program roots limited to byte ranges."""
from __future__ import annotations

from functools import cache
from pathlib import Path

import tree_sitter as ts
import tree_sitter_html as tsh
import tree_sitter_javascript as tsj

QUERY_DIR = Path(__file__).with_name("queries")


@cache
def js_language() -> ts.Language:
    return ts.Language(tsj.language())


@cache
def html_language() -> ts.Language:
    return ts.Language(tsh.language())


@cache
def load_query(name: str, html: bool = False, folder: Path = QUERY_DIR) -> ts.Query:
    """Compile ``<folder>/<name>.scm`` (by default ``queries/`` here) once per process."""
    text = (folder / f"{name}.scm").read_text()
    return ts.Query(html_language() if html else js_language(), text)


def captures(query: ts.Query, node: ts.Node) -> dict[str, list[ts.Node]]:
    return ts.QueryCursor(query).captures(node)


def matches(query: ts.Query, node: ts.Node) -> list[dict[str, list[ts.Node]]]:
    return [m for _, m in ts.QueryCursor(query).matches(node)]


# A parsed program root, and the byte range its queries are limited to (None: the whole tree), or
# a tuple of such ranges (one cursor each).
Root = tuple[ts.Node, "tuple[int, int] | tuple[tuple[int, int], ...] | None"]


def cursor(query: ts.Query, rng: tuple[int, int] | None) -> ts.QueryCursor:
    cursor = ts.QueryCursor(query)
    if rng is not None:  # matches intersecting the range (captures may lie outside it)
        cursor.set_byte_range(*rng)
    return cursor


# Query files matched together in one pass, by what they serve: structure (functions, calls, event
# bindings) and state (declarations, writes, reads). The scoped analyzer limits each group to its
# own byte ranges; ``analyze`` runs both over every script.
QUERY_GROUPS = {"structure": ("functions", "calls", "events"), "state": ("state", "reads")}
GROUP_OF = {name: group for group, names in QUERY_GROUPS.items() for name in names}
JS_QUERIES = tuple(GROUP_OF)


@cache
def combined_query(group: str) -> tuple[ts.Query, tuple[str, ...]]:
    """The group's ``.scm`` files as one query (one tree traversal instead of several), and for
    every pattern index the file it came from."""
    texts, owner = [], []
    for name in QUERY_GROUPS[group]:
        texts.append((QUERY_DIR / f"{name}.scm").read_text())
        owner += [name] * load_query(name).pattern_count
    query = ts.Query(js_language(), "\n".join(texts))
    if query.pattern_count != len(owner):
        raise RuntimeError("combined attribution query lost patterns; check queries/*.scm for syntax errors")
    return query, tuple(owner)


def ranged_matches(query: ts.Query, root: ts.Node, rng) -> list:
    """Matches over one range, or over several (a tuple of ranges: a match they share is kept once)."""
    if rng is None or not isinstance(rng[0], tuple):
        return cursor(query, rng).matches(root)
    seen, out = set(), []
    for r in rng:
        for pattern, m in cursor(query, r).matches(root):
            key = (pattern, *((k, n.start_byte, n.end_byte) for k, v in m.items() for n in v))
            if key not in seen:
                seen.add(key)
                out.append((pattern, m))
    return out


def all_matches(name: str, roots: list[Root], cache: dict) -> list[dict[str, list[ts.Node]]]:
    """Matches of ``queries/<name>.scm`` over every root, in page order (roots are disjoint, sorted).
    The files of a group are matched in one pass per root; ``cache`` (keyed by group, root position
    and range) keeps the other files' matches, and lets a caller re-query unchanged roots for free."""
    group = GROUP_OF[name]
    query, owner = combined_query(group)
    out = []
    for root, rng in roots:
        key = (group, root.start_byte, root.end_byte, rng)
        got = cache.get(key)
        if got is None:
            got = {n: [] for n in QUERY_GROUPS[group]}
            for pattern, m in ranged_matches(query, root, rng):
                got[owner[pattern]].append(m)
            cache[key] = got
        out.extend(got[name])
    return out
