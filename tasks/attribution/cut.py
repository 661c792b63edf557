"""Text-level scanning for the scoped analyzer (``tasks.attribution.scope``): where top-level
statements may start, which lines lie inside multi-line template literals or block comments, word
occurrences, and where ``<script>`` bodies are in the markup. Pure functions on ``str``/``bytes``;
whatever they cannot decide cheaply they leave to tree-sitter (a cut that is wrong leaves a statement
that does not parse; markup that is not strictly well-formed is parsed).

Run: ``python -c "from tasks.attribution.cut import top_level_starts; print(top_level_starts(js))"``.
"""
from __future__ import annotations

import bisect
import re
from typing import Iterable

ON_ATTRIBUTE = re.compile(rb"[oO][nN][a-zA-Z]+\s*=\s*[\"']")
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


def may_declare(text: str, start: int) -> bool:
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


def member_root(text: str, start: int) -> str | None:
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


def not_definition(text: str, start: int, end: int) -> bool:
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
