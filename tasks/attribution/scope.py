"""Scoped source analysis: parse and query only the top-level statements the relations need.

``analyze`` (``tasks.attribution.analyzer``) parses every inline script of the page and runs every
query over all of it; for a 30 KB page that is most of the attribution cost. Here the page's scripts
are cut into top-level statements (``top_level_starts``) and only the statements that relations from
the direct anchors can reach are parsed (each on its own, with ``included_ranges`` so offsets stay
page offsets) and queried, only where needed (``QueryCursor.set_byte_range``). What is selected mirrors
``tasks.attribution.expand.relations_for_anchor`` and the disambiguation scorer in ``api``:

- the statements holding the anchors (the enclosing functions lie inside them), queried over the
  anchor's ``window`` (paper B.3's analysis window: callees are read there), and for the
  disambiguation scorer the statements holding each candidate match;
- every statement mentioning, as a word, an implicated state variable, a related symbol or a hint
  (writers, readers and the definitions named by the evidence);
- statements that may declare a state root at top level (``let``/``const``/``var`` before the name),
  including roots ``X`` of ``X.total`` when ``total`` is implicated, so ``state.total`` is state;
- then, to a fixed point: statements mentioning the enclosing functions' names (callers and event
  bindings of named handlers), the callees called inside the window, and every name whose calls
  reach the anchor's function within ``call_depth`` hops (bindings whose handler reaches it).

Mentions are found by word regexes on the raw text, so strings and comments can only ADD
statements (more parsing), never hide one. The result is a subset of the full model holding every
item those relations look at, so the trace equals the full analysis (``tests/test_attr_scope.py``
checks this on the G.2 fixture, the bench pages and random pages).

Cutting: a top-level statement starts on a line at the scripts' top indentation (the least indent of
a ``function``/``const``/``let``/``var``/``class``/``async`` line) that begins with an identifier
other than a continuation keyword (``else``, ``catch``, ``finally``, ``in``, ``instanceof``). A wrong
cut (inside a template literal, a comment, an expression spread over lines) leaves a run that does
not parse cleanly: any statement with a syntax error makes the whole page fall back to ``analyze``.

Departure: on a page whose scripts have a syntax error somewhere NOT selected, the full parse's
error recovery may mangle later code while the scoped parse does not; the scoped result is then the
better one, and the two may differ.

Run: ``python -c "from tasks.attribution.scope import ScopedAnalyzer; s = ScopedAnalyzer(page)"``.
"""
from __future__ import annotations

import bisect
import re
from typing import Iterable

import numpy as np
import tree_sitter as ts

from tasks.attribution.analyzer import (
    EventBinding, SourceModel, _is_js, _is_js_tag, _attribute_bindings, _Offsets, _script_nodes, analyze, html_language, js_language, load_query, matches,
    model_from_roots,
)

_IDENT = re.compile(r"[A-Za-z_$][\w$]*")


_ON_ATTRIBUTE = re.compile(rb"[oO][nN][a-zA-Z]+\s*=\s*[\"']")
_DECL_INDENT = re.compile(r"\n([ \t]*)(?:function|const|let|var|class|async)(?![\w$])")
_CONTINUATION = r"(?=[A-Za-z_$])(?!(?:else|catch|finally|in|instanceof)(?![\w$]))"


def top_level_starts(script: str) -> list[int]:
    """Offsets in ``script`` where a top-level statement may start (always begins with 0)."""
    text = "\n" + script  # so the first line is found like the others; positions shift by one
    indents = _DECL_INDENT.findall(text)
    if not indents:
        return [0]
    top = min(indents, key=len)
    # a line at the top indent starting a word that does not continue the previous statement
    # (``} else {``, ``} catch``, ``x\nin y``); m.start() in ``text`` is the line start in ``script``
    line = re.compile("\n" + re.escape(top) + _CONTINUATION)
    starts = [m.start() for m in line.finditer(text) if m.start() > 0]
    inside = multiline_spans(script)
    if inside:  # never cut inside a template literal or a block comment spanning lines
        ends = [e for _, e in inside]
        starts = [p for p in starts if not _within(inside, ends, p)]
    return [0] + starts


def _within(spans: list[tuple[int, int]], ends: list[int], pos: int) -> bool:
    k = bisect.bisect_right(ends, pos)
    return k < len(spans) and spans[k][0] < pos


# Strings, templates (one level of ${}) and comments that close on their line, and any other code
# (possessive: a failure is immediate, never a backtracking blow-up). ``_CLOSED_SCRIPT`` matching a
# whole script means no construct spans lines; ``_CLOSED_LINE`` checks one line whose end is in code.
_CLOSED = (r"'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'|\"[^\"\\\n]*+(?:\\.[^\"\\\n]*+)*+\""
           r"|`[^`\\$\n]*+(?:(?:\\.|\$(?!\{)|\$\{[^{}`'\"\n]*+\})[^`\\$\n]*+)*+`"
           r"|/\*[^*\n]*+(?:\*(?!/)[^*\n]*+)*+\*/|//[^\n]*+")
_CLOSED_SCRIPT = re.compile(r"(?:[^`/*'\"]++|" + _CLOSED + r"|/(?![*/])|\*(?!/))*+")
_CLOSED_LINE = re.compile(r"(?:[^`/*'\"\n]++|" + _CLOSED + r"|/(?![*/])|\*(?!/))*+")
_MULTILINE_TOKEN = re.compile(r"`|/\*|\*/")
_REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^") | {""}
_REGEX_WORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "yield", "await"}


def multiline_spans(script: str) -> list[tuple[int, int]]:
    """Character spans ``(a, b)`` of ``script`` lying inside a template literal or block comment that
    spans lines, in order. Usually one regex shows there is none. Otherwise, only lines holding a
    backtick, ``/*`` or ``*/`` can change that state: those closed on themselves are cleared by a
    regex, the others go through ``_lex_line``. A regex literal holding a quote or backtick makes the
    regexes fail (then the lexer decides); strings continued with a backslash are not followed (a cut
    there leaves a statement that does not parse, and the page falls back)."""
    if _MULTILINE_TOKEN.search(script) is None or _CLOSED_SCRIPT.fullmatch(script):
        return []
    out: list[tuple[int, int]] = []
    state: list = ["code"]  # a stack: "code", "template", "comment", or ("expr", brace depth)
    opened = 0
    last = -1
    for m in _MULTILINE_TOKEN.finditer(script):
        start = script.rfind("\n", 0, m.start()) + 1
        if start <= last:
            continue  # a line with several tokens is lexed once
        end = script.find("\n", m.end())
        end = last = len(script) if end < 0 else end
        if state == ["code"] and _CLOSED_LINE.fullmatch(script, start, end):
            continue
        was_code = state == ["code"]
        state = _lex_line(script, start, end, state)
        if was_code and state != ["code"]:
            opened = end  # the construct runs on from the end of this line
        elif not was_code and state == ["code"]:
            out.append((opened, start + 1))  # the closing line starts inside too
    if state != ["code"]:
        out.append((opened, len(script)))
    return out


def _lex_line(s: str, i: int, end: int, state: list) -> list:
    """The lexical state after ``s[i:end]`` (one line), from ``state`` before it. Strings, regexes
    and line comments end with the line; templates (with ``${}`` nesting) and block comments may not."""
    state = list(state)
    prev = ""  # the last significant character in code, to tell a regex from a division
    while i < end:
        top, ch = state[-1], s[i]
        if top == "comment":
            j = s.find("*/", i, end)
            if j < 0:
                return state
            state.pop()
            i = j + 2
        elif top == "template":
            if ch == "\\":
                i += 2
            elif ch == "`":
                state.pop()
                prev, i = "`", i + 1
            elif s.startswith("${", i):
                state.append(("expr", 0))
                prev, i = "{", i + 2
            else:
                i += 1
        elif ch in "'\"":
            j = i + 1
            while j < end and s[j] != ch:
                j += 2 if s[j] == "\\" else 1
            prev, i = ch, j + 1
        elif ch == "`":
            state.append("template")
            i += 1
        elif s.startswith("//", i):
            return state
        elif s.startswith("/*", i):
            state.append("comment")
            i += 2
        elif ch == "/":
            word = re.search(r"[\w$]+$", s[max(i - 12, 0):i].rstrip())
            if prev in _REGEX_BEFORE or (word is not None and word.group(0) in _REGEX_WORDS and prev.isalpha()):
                j, cls = i + 1, False  # a regex literal: up to its closing slash
                while j < end and (s[j] != "/" or cls):
                    cls = (cls or s[j] == "[") and s[j] != "]"
                    j += 2 if s[j] == "\\" else 1
                prev, i = "/", j + 1
            else:
                prev, i = "/", i + 1
        else:
            if isinstance(top, tuple):  # inside ${...}: braces nest, the last one closes it
                if ch == "{":
                    state[-1] = ("expr", top[1] + 1)
                elif ch == "}":
                    if top[1] == 0:
                        state.pop()
                    else:
                        state[-1] = ("expr", top[1] - 1)
            if not ch.isspace():
                prev = ch
            i += 1
    return state


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_" or ch == "$"


def find_words(text: str, names: Iterable[str], start: int, end: int) -> list[tuple[int, int]]:
    """Every occurrence of one of ``names`` as a whole word in ``text[start:end]`` (``str.find`` per
    name: much faster than one alternation regex with look-arounds on a 30 KB page)."""
    out = []
    n = len(text)
    for name in {n for n in names if n}:
        i = text.find(name, start, end)
        while i >= 0:
            j = i + len(name)
            if (i == 0 or not _is_word_char(text[i - 1])) and (j >= n or not _is_word_char(text[j])):
                out.append((i, j))
            i = text.find(name, j, end)  # occurrences of one name never overlap as words
    return out


def _may_declare(text: str, start: int) -> bool:
    """A superset of the places a top-level ``let``/``const``/``var`` can declare the word at ``start``:
    right after ``let``/``const``/``var`` and whitespace, or after a comma (``let a = 1, b``)."""
    before = text[max(start - 64, 0):start]
    stripped = before.rstrip()
    if stripped.endswith(","):
        return True
    if len(stripped) == len(before):  # the keyword needs whitespace before the name
        return False
    for word in ("let", "const", "var"):
        if stripped.endswith(word):
            k = len(stripped) - len(word)
            return k == 0 or not _is_word_char(stripped[k - 1])
    return False


def _member_root(text: str, start: int) -> str | None:
    """``X`` when the word at ``start`` is the property in ``X.word`` / ``X?.word``, else None."""
    before = text[max(start - 80, 0):start].rstrip()
    if not before.endswith("."):
        return None
    before = before[:-1]
    if before.endswith("?"):
        before = before[:-1]
    before = before.rstrip()
    k = len(before)
    while k and _is_word_char(before[k - 1]):
        k -= 1
    word = before[k:]
    return word if word and (word[0].isalpha() or word[0] in "_$") else None


def _not_definition(text: str, start: int, end: int) -> bool:
    """True when the word at [start, end) is certainly called, not defined: ``x.name(`` (a property
    call), or ``name(...)`` whose closing parenthesis is not followed by ``{`` (a method definition
    ``name(a, b) {`` is). Anything unclear (strings, comments or regexes inside the parentheses, or
    no closing parenthesis nearby) counts as a possible definition."""
    if text.startswith("(", end):
        stripped = after = text[end:end + 400]
    else:
        after = text[end:end + 400]
        stripped = after.lstrip()
        if not stripped.startswith("("):
            return False
    if start and (text[start - 1] == "." or text[max(start - 64, 0):start].rstrip().endswith(".")):
        return True
    depth, i = 0, len(after) - len(stripped)
    for i in range(i, len(after)):
        ch = after[i]
        if ch in "'\"`/":
            return False
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                rest = after[i + 1:].lstrip()
                return bool(rest) and rest[0] not in "{/"
    return False


def components(var: str) -> set[str]:
    """``state.total`` -> {state, total}: the words a statement touching that state must mention."""
    parts = [p for p in var.split(".") if p]
    return {parts[0], parts[-1]} if parts else set()


def predict_scripts(data: bytes) -> list[tuple[int, int]] | None:
    """Byte ranges of the raw text of every ``<script ...>`` (first ``>`` ends the tag; the text ends
    at the first case-insensitive ``</script``), or None when that may not be how tree-sitter-html
    reads the page: an unclosed script, or a partial ``</script`` in progress where the real one
    starts (tree-sitter then reads on). The prediction is checked against the markup's parse."""
    low = data.lower()
    out, i = [], 0
    while (j := low.find(b"<script", i)) >= 0:
        k = data.find(b">", j)
        if k < 0:
            return None
        e = low.find(b"</script", k + 1)
        if e < 0 or b"<" in data[max(e - 7, k + 1):e]:
            return None
        out.append((k + 1, e))
        i = e + 8
    return out


_ATTRS = rb"""(?:\s++[^\s"'>/=<]++(?:\s*+=\s*+(?:"[^"]*+"|'[^']*+'|[^\s"'=<>`]++))?)*+\s*+"""
# Strictly well-formed markup up to and including a <script> start tag: text without "<", comments,
# a doctype, end tags, <style> blocks and other start tags with quoted or plain attribute values.
_SEGMENT = re.compile(
    rb"(?:[^<]++|<!--(?:[^-]|-(?!->))*+-->|<!doctype[^<>]*+>|</(?!script)[a-z][\w:-]*+\s*+>"
    rb"|<style(?=[\s/>])" + _ATTRS + rb">(?:[^<]|<(?!/style))*+</style\s*+>"
    rb"|<(?!script[\s/>]|style[\s/>])[a-z][\w:-]*+" + _ATTRS + rb"/?>)*+"
    rb"(<script(?=[\s/>])" + _ATTRS + rb">)", re.I)


def strict_scripts(data: bytes) -> list[tuple[int, int, int]] | None:
    """``(tag start, body start, body end)`` byte offsets of every ``<script>`` when the markup
    before each is strictly well-formed (``_SEGMENT``) and after the last holds no ``<script``; None
    otherwise (the markup is then parsed). Bodies end as in ``predict_scripts``."""
    low = data.lower()
    out, pos = [], 0
    while low.find(b"<script", pos) >= 0:
        m = _SEGMENT.match(data, pos)
        if m is None:
            return None
        body = m.end()
        end = low.find(b"</script", body)
        if end < 0 or b"<" in data[max(end - 7, body):end]:
            return None
        out.append((m.start(1), body, end))
        close = low.find(b">", end)
        if close < 0:
            return None
        pos = close + 1
    return out


class ScopedAnalyzer:
    """One page, cut into top-level statements; ``model()`` analyses the selected ones."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"ScopedAnalyzer takes the page as str, got {type(text).__name__}; decode bytes as UTF-8 first")
        self.text = text
        self.data = text.encode("utf-8")
        self.off = _Offsets(text, self.data)
        self._newlines = np.flatnonzero(np.frombuffer(self.data, dtype=np.uint8) == 10).tolist()
        self.html_fast = False
        self.script_ranges, self.html_bindings = self._html()
        # chunk k spans [starts[k], ends[k]) in page characters; chunks never cross scripts
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.script_of: list[int] = []
        for si, (s, e) in enumerate(self.script_ranges):
            cuts = [s + c for c in top_level_starts(text[s:e])]
            self.starts += cuts
            self.ends += cuts[1:] + [e]
            self.script_of += [si] * len(cuts)
        self.selected: set[int] = set()
        self.want: list[tuple[int, int]] = []  # character ranges to query (inside selected statements)
        self.want_state: list[tuple[int, int]] = []  # where state accesses are read (a subset of want)
        self.mentioned_state: set[str] = set()
        self.mentioned: set[str] = set()
        self.defined: set[str] = set()
        self.declared: set[str] = set()
        self.fallback = False
        self.parsed_chars = 0  # characters parsed so far (the bench reports it)
        self._trees: dict[int, ts.Node] = {}  # one parse per selected statement
        self._model: SourceModel | None = None
        self._model_key: frozenset[int] | None = None
        self._parser = ts.Parser(js_language())
        self._queries: dict = {}  # query matches per (statement, range): rounds re-use them
        self._spans: tuple[dict[int, int], dict[int, int], dict[int, int], dict[int, int]] = ({}, {}, {}, {})
        self._folded = [0, 0]
        self._sites: dict[str, list[tuple[int, int]]] = {}

    def _has_on_attribute(self, scripts: list[tuple[int, int, int]]) -> bool:
        """Whether the markup outside the script bodies may hold an ``on*`` attribute."""
        pos = 0
        for _, body, end in scripts:
            if _ON_ATTRIBUTE.search(self.data, pos, body):
                return True
            pos = end
        return _ON_ATTRIBUTE.search(self.data, pos) is not None

    def _html(self) -> tuple[list[tuple[int, int]], list[EventBinding]]:
        """Script ranges (page characters) and HTML ``on*`` bindings. The markup is parsed without
        the predicted script bodies (``predict_scripts``), which are most of the page; the prediction
        must agree with every ``script_element`` of that parse, else the whole page is parsed."""
        data, parser = self.data, ts.Parser(html_language())
        strict = strict_scripts(data)
        if strict is not None and not self._has_on_attribute(strict):  # no markup parse needed
            self.html_fast = True
            return [(self.off(b), self.off(e)) for t, b, e in strict if _is_js_tag(data[t:b])], []
        predicted = predict_scripts(data)
        if predicted:
            keep, pos = [], 0
            for a, b in predicted:
                if a > pos:
                    keep.append(self._byte_range(pos, a))
                pos = b
            if pos < len(data):
                keep.append(self._byte_range(pos, len(data)))
            parser.included_ranges = keep
            root = parser.parse(data).root_node
            tags = [(m["script.start"][0], m["script.end"][0])
                    for m in matches(load_query("html_scripts", html=True), root) if "script.end" in m]
            if [(a.end_byte, b.start_byte) for a, b in tags] == predicted:
                self.html_fast = True
                # an on* attribute with a quoted value needs ``on<letters> = "`` in the markup
                markup = b"".join(data[r.start_byte:r.end_byte] for r in keep)
                bindings = (_attribute_bindings(root, data, self.off) if _ON_ATTRIBUTE.search(markup) else [])
                scripts = [(a, b) for (a, b), (tag, _) in zip(predicted, tags) if _is_js(data, tag)]
                return [(self.off(a), self.off(b)) for a, b in scripts], bindings
            parser = ts.Parser(html_language())
        root = parser.parse(data).root_node
        html_matches = matches(load_query("html", html=True), root)  # one pass for both
        scripts = _script_nodes(root, data, html_matches)
        return ([(self.off(n.start_byte), self.off(n.end_byte)) for n in scripts],
                _attribute_bindings(root, data, self.off, html_matches))

    # -- selection: statements to parse, and character ranges to query in them ---------------------
    def select_regions(self, regions: Iterable[tuple[int, int]], *, query: tuple[int, int] | None = None,
                       whole: bool = False) -> None:
        """Parse every statement overlapping the regions ``[a, b)``; query the structure over ``query``
        (default: the regions) inside them, or the whole statements with ``whole``; query state
        (declarations, writes, reads) over the regions themselves."""
        for a, b in regions:
            k = max(bisect.bisect_right(self.starts, a) - 1, 0)
            while k < len(self.starts) and self.starts[k] < max(b, a + 1):
                if self.ends[k] > a:
                    self.selected.add(k)
                    if whole:
                        self.want.append((self.starts[k], self.ends[k]))
                k += 1
            if not whole:
                self.want.append(query or (a, b))
            self.want_state.append((a, b))

    def _select_sites(self, sites: Iterable[tuple[int, int]], state: bool = False) -> None:
        for a, b in sites:
            self.selected.add(bisect.bisect_right(self.starts, a) - 1)
            self.want.append((a, b))
            if state:
                self.want_state.append((a, b))

    def _find(self, names: set[str]) -> list[tuple[int, int]]:
        """Word occurrences of ``names`` in the scripts (each name is searched once per page)."""
        out: list[tuple[int, int]] = []
        for name in names:
            if name not in self._sites:
                self._sites[name] = [w for s, e in self.script_ranges for w in find_words(self.text, (name,), s, e)]
            out += self._sites[name]
        return out

    def select_mentions(self, names: Iterable[str], state: bool = False) -> None:
        """Every place one of ``names`` occurs as a word (code, string or comment); with ``state``,
        state accesses are read there too (else calls, functions and bindings only)."""
        new = {n for n in names if n} - (self.mentioned_state if state else self.mentioned)
        self.mentioned |= new
        if state:
            self.mentioned_state |= new
        self._select_sites(self._find(new), state)

    def select_definitions(self, names: Iterable[str]) -> None:
        """Every place that may define one of ``names`` (a superset: every mention but certain calls)."""
        new = {n for n in names if n} - self.mentioned - self.defined
        self.defined |= new
        text = self.text
        # a name that only ever occurs as ``.name(`` (DOM calls: getElementById) defines nothing here
        new = {n for n in new if text.count(n) != text.count(f".{n}(")}
        self._select_sites(w for w in self._find(new) if not _not_definition(text, *w))

    def select_declarations(self, names: Iterable[str]) -> None:
        """Every place that may declare one of ``names`` at top level."""
        new = {n for n in names if n} - self.declared
        self.declared |= new
        self._select_sites((w for w in self._find(new) if _may_declare(self.text, w[0])), state=True)

    def select_state(self, variables: Iterable[str]) -> None:
        """What relations over implicated state read: accesses to it and the declarations of its roots."""
        variables = [v for v in variables if v]
        words: set[str] = set()
        for var in variables:
            words |= components(var)
        if not words - self.mentioned_state:
            return
        self.select_mentions(words, state=True)
        roots = set(words)
        # X in ``X.total`` / ``X?.total``: is X top-level state? (the word before the dot)
        for a, _ in self._find({var.split(".")[-1] for var in variables}):
            if (root := _member_root(self.text, a)) is not None:
                roots.add(root)
        self.select_declarations(roots)

    # -- analysis --------------------------------------------------------------------------------
    def _byte(self, char: int) -> int:
        return self.off.byte(char)

    def _range(self, a: int, b: int) -> ts.Range:
        return self._byte_range(self._byte(a), self._byte(b))

    def _byte_range(self, ba: int, bb: int) -> ts.Range:
        def point(byte: int) -> ts.Point:
            row = bisect.bisect_left(self._newlines, byte)  # newlines before this byte
            return ts.Point(row, byte - (self._newlines[row - 1] + 1 if row else 0))

        return ts.Range(point(ba), point(bb), ba, bb)

    def _chunk_root(self, k: int) -> ts.Node:
        if k not in self._trees:
            self._parser.included_ranges = [self._range(self.starts[k], self.ends[k])]
            self._trees[k] = self._parser.parse(self.data).root_node
            self.parsed_chars += self.ends[k] - self.starts[k]
        return self._trees[k]

    def _fold(self, want: list[tuple[int, int]], which: int, lo: dict[int, int], hi: dict[int, int]) -> None:
        """Fold the wanted ranges added since the last call into per-statement spans ``lo``/``hi``."""
        starts, ends, n = self.starts, self.ends, len(self.starts)
        for a, b in want[self._folded[which]:]:
            if b <= a:
                b = a + 1
            k = bisect.bisect_right(starts, a) - 1
            if k < 0:
                k = 0
            while k < n and starts[k] < b:
                if ends[k] > a:
                    ca = a if a > starts[k] else starts[k]
                    cb = b if b < ends[k] else ends[k]
                    if k not in lo:
                        lo[k], hi[k] = ca, cb
                    else:
                        if ca < lo[k]:
                            lo[k] = ca
                        if cb > hi[k]:
                            hi[k] = cb
                k += 1
        self._folded[which] = len(want)

    def _state_sites(self) -> dict[int, list[tuple[int, int]]]:
        """Statement -> the merged ranges where state is wanted in it (clipped to the statement)."""
        starts, ends, n = self.starts, self.ends, len(self.starts)
        per: dict[int, list[tuple[int, int]]] = {}
        for a, b in self.want_state:
            if b <= a:
                b = a + 1
            k = max(bisect.bisect_right(starts, a) - 1, 0)
            while k < n and starts[k] < b:
                if ends[k] > a:
                    per.setdefault(k, []).append((max(a, starts[k]), min(b, ends[k])))
                k += 1
        out = {}
        for k, spans in per.items():
            merged: list[tuple[int, int]] = []
            for a, b in sorted(set(spans)):
                if merged and a <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
                else:
                    merged.append((a, b))
            out[k] = merged
        return out

    def model(self) -> SourceModel:
        """The model of the selected statements (the full ``analyze`` model after a fallback)."""
        key = (frozenset(self.selected), len(self.want), len(self.want_state))
        if self._model is not None and (self.fallback or key == self._model_key):
            return self._model
        chunks = sorted(self.selected)
        roots = [self._chunk_root(k) for k in chunks]
        if any(r.has_error for r in roots):
            self.fallback = True
            self.parsed_chars += sum(e - s for s, e in self.script_ranges)
            self._model = analyze(self.text)
            return self._model
        # per statement, each query group covers the span of the ranges wanted inside it (one cursor
        # per statement and group); wanted ranges only grow, so only the new ones are folded in
        lo, hi, _, _ = self._spans
        self._fold(self.want, 0, lo, hi)
        scoped = [(root, (self._byte(lo[k]), self._byte(hi[k]))) for k, root in zip(chunks, roots) if k in lo]
        # state is read at each site (a cursor per site): a span over far-apart sites of one long
        # statement would match every identifier and assignment between them
        sites = self._state_sites()
        state = [(root, tuple((self._byte(a), self._byte(b)) for a, b in sites[k]))
                 for k, root in zip(chunks, roots) if k in sites]
        self._model = model_from_roots(self.text, self.data, self.off, self.script_ranges, scoped, self.html_bindings,
                                       self._queries, state)
        self._model_key = key
        return self._model


def anchor_needs(model: SourceModel, a: int, b: int, window: int, call_depth: int) -> set[str]:
    """Names whose statements the relations from anchor ``[a, b)`` look at (see ``relations_for_anchor``):
    the enclosing functions (callers, named handlers containing the anchor) and every name reaching
    the innermost enclosing function within ``call_depth`` calls (bindings naming or calling it)."""
    from tasks.attribution.expand import reachers

    fi = model.enclosing(a, b)
    if fi is None:
        return set()
    names: set[str] = set()
    i: int | None = fi
    # each name is needed at every mention: its callers and the bindings naming it
    while i is not None:  # the enclosing chain: innermost and every function around it
        if model.functions[i].name:
            names.add(model.functions[i].name)
        i = model._parent[i]
    f = model.functions[fi]
    names |= reachers(model, fi, call_depth)
    return names


def anchor_callees(model: SourceModel, a: int, b: int, window: int) -> set[str]:
    """Names called inside the enclosing function within the window (their definitions are context)."""
    from tasks.attribution.expand import _callees

    fi = model.enclosing(a, b)
    if fi is None:
        return set()
    f = model.functions[fi]
    return _callees(model, max(f.start, a - window), min(f.end, b + window))
