"""Pure text rules shared by the five rubric-construction stages (paper B.1).

- ``normalise`` / ``evidence_in``: the *normalised match* that decides whether an item's
  query_evidence occurs in the expanded query (case, Unicode forms, quotes, dashes, punctuation and
  whitespace are ignored; ``...`` in a quotation means "these fragments, in this order").
- ``clauses_of`` and ``classify`` (on the keyword table ``vocab.ROLE_RULES``): how the offline provider reads
  a request written in sentences (a query without headings or lists) into its clauses and their roles; the
  structure of a plan is read by ``prompt_outline`` / ``prompt_controls`` / ``prompt_spec``. They are
  deterministic rules, not a model; the paper uses an LLM for this, and every row they produce says provider=offline.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from tasks.rubrics.vocab import ROLE_RULES

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-",
                         "\u00a0": " "})
_NON_WORD = re.compile(r"[^\w%+#<>=]+")
_ELLIPSIS = re.compile(r"\.\.\.|\u2026")


@lru_cache(maxsize=65536)
def normalise(text: str) -> str:
    """Casefolded words (plus %, +, #, <, >, =) joined by single spaces."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return _NON_WORD.sub(" ", text.replace("_", " ")).strip()


def evidence_in(evidence: str | None, text: str, min_chars: int = 3) -> bool:
    """True when every ``...``-separated fragment of ``evidence`` occurs, in order, in ``text``.

    Matching is on word boundaries of the normalised forms, so "score" does not match "scoreboard".
    """
    if not evidence:
        return False
    hay = " " + normalise(text) + " "
    frags = [normalise(f) for f in _ELLIPSIS.split(evidence)]
    frags = [f for f in frags if f]
    if not frags or sum(len(f) for f in frags) < min_chars:
        return False
    pos = 0
    for frag in frags:
        found = hay.find(" " + frag + " ", pos)
        if found < 0:
            return False
        pos = found + len(frag) + 1
    return True


# -- reading a query into clauses (offline rules) ------------------------------------------------
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")
_LEAD_INS = re.compile(
    r"^(?:and\s+|also\s+|then\s+)?(?:it\s+(?:must|should|needs to|has to)|the\s+app(?:lication)?\s+(?:must|should)|"
    r"requirements:\s*it\s+should|please\s+make\s+sure\s+it\s+can|make\s+sure\s+(?:that\s+)?|it\s+can|please)?\s*",
    re.I)
_APP_SENTENCE = re.compile(
    r"^(?:Build|Create|Make|Design|Develop|Write|Implement)\s+(?:an?|the|me\s+an?)\s+(?P<name>.+?)\s+"
    r"(?P<kind>miniapp|mini-app|app|application|tool|game|page|simulator|dashboard|visuali[sz]er|tracker|quiz)\b",
    re.I)


@dataclass(frozen=True)
class Clause:
    """One checkable statement of the query: the verbatim span (evidence) and its core text."""

    evidence: str  # verbatim substring of the query
    text: str  # evidence without lead-ins such as "It must" / "and"


def _split_top_level(sentence: str, sep: str) -> list[str]:
    """Split on ``sep`` outside parentheses."""
    out, depth, cur = [], 0, []
    for ch in sentence:
        depth += (ch == "(") - (ch == ")")
        if ch == sep and depth <= 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def clauses_of(query: str) -> list[Clause]:
    """Sentences split at top-level semicolons; an app-naming sentence keeps only "Build a X app"."""
    out: list[Clause] = []
    for sentence in _SENTENCE.split(query.strip()):
        sentence = sentence.strip()
        m = _APP_SENTENCE.match(sentence)
        if m:
            out.append(Clause(evidence=m.group(0), text=m.group(0)))
            continue
        for part in _split_top_level(sentence, ";"):
            ev = part.strip().rstrip(".!?").strip()
            core = _LEAD_INS.sub("", ev, count=1).strip()
            if len(core) >= 8:
                out.append(Clause(evidence=ev, text=core[0].upper() + core[1:]))
    return out


def app_name(query: str) -> str | None:
    m = _APP_SENTENCE.match(query.strip())
    return m.group("name").strip() if m else None


def app_title(query: str) -> str | None:
    """What the app-naming sentence asks for: "Build a Poker Hand Evaluator miniapp" -> "Poker Hand Evaluator miniapp"."""
    m = _APP_SENTENCE.match(query.strip())
    return f"{m.group('name').strip()} {m.group('kind')}" if m else None


_CONDITIONAL = re.compile(r"\b(when|whenever|if|after|while|once|upon)\b", re.I)


def classify(text: str) -> tuple[str, str]:
    """(functional role, requirement type) of a clause by the first matching rule."""
    for role, rtype, pat in ROLE_RULES:
        if pat.search(text):
            return role, rtype
    return "behaviour", "interaction"


def is_conditional(text: str) -> bool:
    return bool(_CONDITIONAL.search(text))


_VERB_OBJECT = re.compile(r"^(?P<verb>[A-Za-z-]+)\s+(?:the\s+user\s+)?(?P<rest>.+)$")
_STOP = re.compile(r"\s+(?:so|that|which|when|while|with|from|to|for|after|if|and|by|in|on|as)\s+.*$", re.I)


def verb_and_object(text: str) -> tuple[str, str]:
    """Leading verb and the phrase it governs, cut at the first connective: "Display five cards"."""
    m = _VERB_OBJECT.match(text.strip())
    if not m:
        return "", text.strip()
    rest = _STOP.sub("", m.group("rest")).strip(" ,.")
    return m.group("verb").lower(), rest or m.group("rest")


def sentence(text: str) -> str:
    text = text.strip().rstrip(".")
    return (text[:1].upper() + text[1:] + ".") if text else text


def lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text
