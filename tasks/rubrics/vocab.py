"""The offline rules' vocabularies (pure): each word table the rubric rules, the offline teacher and the
offline judge read, defined once here, with the small functions that read them.

Where two rules read a vocabulary differently, the difference is a named table derived from one base, never
a second copy: a plan's line says a control starts motion in whole words, "resume" included; a button's id
or label says so in part of a word (``btn-play``), and only the teacher counts a resume button as a start.

Run: ``says_start("Play starts the animation")``, ``id_stem("slider-length")``, ``is_number("-0.5")``.
"""
from __future__ import annotations

import re


def _words(alternatives: tuple[str, ...]) -> str:
    """A pattern for any one of ``alternatives`` (regex fragments) as a whole word."""
    return r"\b(" + "|".join(alternatives) + r")\b"


def _stems(words: tuple[str, ...]) -> tuple[str, ...]:
    """Each word with any ending: ``pause`` -> ``pause\\w*`` (pauses, paused)."""
    return tuple(w + r"\w*" for w in words)


# -- starting and stopping motion ---------------------------------------------------------------------------
START_WORDS = ("play", "start", "run", "animat")  # "animat" is a stem: animate, animation
RESUME_WORDS = ("resume",)  # starts again what a pause stopped
STOP_WORDS = ("pause", "stop")
# A line saying operating a control starts motion: whole words ("Play", "starts" is not "start").
_SAYS_START = re.compile(_words(START_WORDS[:3] + _stems(START_WORDS[3:]) + RESUME_WORDS), re.I)
# A button named for starting motion: its id or label holds the word ("btn-play", "startButton").
_START_NAME = re.compile("|".join(START_WORDS), re.I)
_START_OR_RESUME_NAME = re.compile("|".join(START_WORDS + RESUME_WORDS), re.I)
_STOP_NAME = re.compile("|".join(STOP_WORDS), re.I)
# Operating these changes nothing on a page just loaded: a reset, a pause, a return to the defaults.
NO_EFFECT = re.compile(_words(_stems(("reset", "restor", "clear") + STOP_WORDS) + ("undo", "default values?")), re.I)


def says_start(text: str) -> bool:
    """``text`` (a plan's line, a control's id and label) says operating it starts motion: play, run, resume."""
    return _SAYS_START.search(text) is not None


def start_name(name: str, resume: bool = False) -> bool:
    """A button's id or label names starting motion (``btn-play``); ``resume``: a resume button counts too
    (the teacher's buttons; a plan's motion is behind a play button, not behind a resume one)."""
    return (_START_OR_RESUME_NAME if resume else _START_NAME).search(name) is not None


def stop_name(name: str) -> bool:
    """A button's id or label names stopping motion (``btn-pause``)."""
    return _STOP_NAME.search(name) is not None


# -- the words of an id -------------------------------------------------------------------------------------
# The words of an id that say what kind of element it is, not what it is about: "slider-length" and
# "length-value" are both about the length.
ID_KIND_WORDS = frozenset("slider range input value val display label lbl readout output text txt span num number "
                          "field box".split())
# An id's kind from its own wording (``prompt_controls``), first kind whose words match wins: (kind, the words that
# start an id of that kind, the words that end one, the words anywhere in it). Those shared with ID_KIND_WORDS say
# the same of an id (a slider, a display); the others name kinds ``id_stem`` keeps as what an id is about.
ID_KIND_AFFIXES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    ("output", ("value", "label", "display", "readout", "result"),
     ("value", "display", "readout", "label", "output", "text"), ()),
    ("range", ("slider", "range"), ("slider", "range"), ()), ("button", ("btn", "button"), ("btn", "button"), ()),
    ("checkbox", ("checkbox", "chk", "cb", "check"), ("checkbox", "chk"), ()), ("radio", ("radio",), ("radio",), ()),
    ("select", ("select", "dropdown", "sel", "menu"), ("select", "dropdown"), ()), ("canvas", (), (), ("canvas",)),
    ("text", ("input", "text", "txt"), ("input", "textbox"), ()))
# Of those, the words saying a display shows a value ("length-value", "readout-speed").
SHOWS_VALUE_WORDS = frozenset({"value", "val", "display", "readout"})
# The words an output's id and a control's id share that do not pair them: the teacher leaves out the
# kind words a model writes in ids; a check finding a control's own output, only the slider's and value's.
TEACHER_PAIR_KIND_WORDS = frozenset({"value", "label", "display", "slider", "text", "output"})
CHECK_PAIR_KIND_WORDS = frozenset({"slider", "value"})
assert SHOWS_VALUE_WORDS | TEACHER_PAIR_KIND_WORDS | CHECK_PAIR_KIND_WORDS <= ID_KIND_WORDS
_ID_SEP = re.compile(r"[-_]")
_ID_PARTS = re.compile(r"[-_.:]+")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_ID_WORD = re.compile(r"[a-z0-9]+")
_STARS = re.compile(r"\*(?:[-_.:]\*)+")


def id_words(cid: str) -> set[str]:
    """The words of an id split at ``-`` and ``_``, as written: ``slider-ac`` -> {"slider", "ac"}."""
    return set(_ID_SEP.split(cid))


def shares_subject(a: str, b: str, kind_words: frozenset[str]) -> bool:
    """Ids ``a`` and ``b`` share a word other than ``kind_words`` (``value-ac`` and ``slider-ac``: "ac")."""
    return bool((id_words(a) - kind_words) & id_words(b))


def id_stem(cid: str) -> tuple[str, ...]:
    """What an id is about, without the words saying what kind of element it is: ``slider-length`` and
    ``length-value`` -> ``("length",)`` (camelCase split)."""
    words = _ID_PARTS.split(_CAMEL.sub(r"\1-\2", cid).lower())
    return tuple(w for w in words if w and w not in ID_KIND_WORDS)


def id_shape(cid: str) -> str:
    """An id with what it is about left out: ``label-radius`` -> ``label-*`` (displays named alike)."""
    starred = _ID_WORD.sub(lambda m: m.group(0) if m.group(0) in ID_KIND_WORDS else "*", cid.lower())
    return _STARS.sub("*", starred)


# -- motion that happens by itself --------------------------------------------------------------------------
# A short request's words for motion: it names it ("a bouncing logo", "falling snow").
MOTION_WORDS = (r"animat\w*", r"bounc\w*", r"orbit\w*", r"rotat(?:es|ing)", r"spin(?:s|ning)?", r"oscillat\w*",
                r"swing(?:s|ing)?", r"mov(?:e|es|ing)", r"drift\w*", r"bloom\w*", r"fly(?:ing)?", "flies",
                r"fall(?:s|ing)?", r"flow(?:s|ing)?", r"float\w*", r"scroll(?:s|ing)", r"pulse\w*", "pulsing",
                r"twinkl\w*", r"wav(?:es|ing)", r"rain\w*", r"snow\w*", r"swim\w*", r"run(?:s|ning)",
                r"count(?:s|ing)?\s+down", "ticking")
# In a plan, what moves by itself is said with a verb of motion ("the planet orbits"), not "animation" or a
# "continuous" render loop, which describe how the page is drawn.
PLAN_MOTION_VERBS = (r"mov(?:es|ing)", r"rotat(?:es|ing)", r"spin(?:s|ning)", r"orbit(?:s|ing)", r"bounc(?:es|ing)",
                     r"oscillat(?:es|ing)", r"swing(?:s|ing)", r"fall(?:s|ing)", r"flow(?:s|ing)", r"drift(?:s|ing)",
                     r"travel(?:s|ing|ling)", r"revolv(?:es|ing)", r"animat(?:es|ing)")
# An item's words for motion (the offline judge's): it says what is shown moves, in the items' own words.
ITEM_MOTION_WORDS = (r"animat\w*", "moves?", "moving", "movement", "motion", r"rotat\w*", r"spin\w*", r"bounc\w*",
                     r"orbit\w*", r"pulse\w*", "particles?", "continuous(ly)?")
# An item saying the motion needs no input; a query says it in more ways (on load, starts playing).
BY_ITSELF_WORDS = ("by itself", "on its own", "over time", "continuous(ly)?", "automatically")
QUERY_BY_ITSELF_WORDS = BY_ITSELF_WORDS + (r"automatic\w*", r"continuous\w*", r"on (?:page )?load",
                                           r"starts? (?:playing|running|moving)", r"immediately (?:starts?|begins?)")
MOTION = re.compile(_words(MOTION_WORDS), re.I)
PLAN_MOTION = re.compile(_words(PLAN_MOTION_VERBS), re.I)
ITEM_MOTION = re.compile(_words(ITEM_MOTION_WORDS), re.I)
BY_ITSELF = re.compile(_words(BY_ITSELF_WORDS), re.I)
QUERY_BY_ITSELF = re.compile(_words(QUERY_BY_ITSELF_WORDS), re.I)

# -- input: what a user does to a page --------------------------------------------------------------------
# The user's actions every reader below counts as input; each reader's table adds the words it reads besides.
INPUT_ACTION_WORDS = (r"click\w*", r"drag\w*")
# A plan's line describing a behaviour's trigger ("when the slider changes").
PLAN_TRIGGER_WORDS = INPUT_ACTION_WORDS + (
    "on", r"when(?:ever)?", "changing", r"changes?", r"press\w*", r"mov(?:es|ing)", "input", r"select\w*",
    r"toggl\w*", r"check\w*", r"uncheck\w*", r"switch\w*", r"adjust\w*", r"slid\w*", "interaction", "event",
    "handler", r"controls?", r"updates?", r"sets?")
# A plan's line (and its headings) saying motion answers input, so it is not motion by itself.
PLAN_PROMPTED_WORDS = INPUT_ACTION_WORDS + ("mouse", r"press\w*", "user", "slider", "input", "when", "while", "after",
                                            "once")
# An item (the judge's fallback, ``tasks/env/rubric_evidence.py``) saying its motion answers input.
ITEM_PROMPTED_WORDS = INPUT_ACTION_WORDS + ("mouse", r"press\w*", r"keys?", "keyboard", r"tap\w*", "when", "after",
                                            "user", r"select\w*", "input", r"type[sd]?", r"hover\w*", r"scroll\w*",
                                            "button", "arrow", r"touch\w*", r"submit\w*")
# A short request saying its page answers input: it is a game or a tool, or names a control or an action.
REQUEST_INPUT_WORDS = INPUT_ACTION_WORDS + (
    "mouse", "game", "clone", r"play(?:able|er)?", "interactive", r"control\w*", r"keys?", "keyboard", r"steer\w*",
    r"jump\w*", r"shoot\w*", r"flap\w*", r"tap\w*", r"touch\w*", r"draw(?:ing)?\s+tool", r"paint\w*",
    "simulator", "editor", "calculator", "piano", "drum")
PLAN_TRIGGER = re.compile(_words(PLAN_TRIGGER_WORDS), re.I)
PLAN_PROMPTED = re.compile(_words(PLAN_PROMPTED_WORDS), re.I)
ITEM_PROMPTED = re.compile(_words(ITEM_PROMPTED_WORDS), re.I)
REQUEST_ANSWERS_INPUT = re.compile(_words(REQUEST_INPUT_WORDS), re.I)
# An item of the rules saying the page answers input (``offline_items``' words, read back only for an item
# without fields).
ITEM_ANSWERS_INPUT = re.compile(r"\banswers input\b", re.I)

# -- where a drawing goes -----------------------------------------------------------------------------------
DRAWING_HOSTS = ("canvas", "p5", "three", "sketch")  # what a container holding a drawing is named for
DRAWING_LIBRARIES = ("plotly", r"chart\.js", "d3", "svg")  # what else a plan says a container holds
_HOST_NAME = re.compile("|".join(DRAWING_HOSTS), re.I)
# A plan's line saying a container holds a drawing: "the div that hosts the p5 canvas".
HOLDS_DRAWING = re.compile(r"\b(hold|contain|host|render|draw|creat|target|place|where)\w*\b[^.]{0,60}\b("
                           + "|".join(DRAWING_HOSTS + DRAWING_LIBRARIES) + r")\b", re.I)


def names_drawing_host(text: str) -> bool:
    """``text`` (a drawing area's id and evidence) names what holds the drawing: a canvas, p5, three.js."""
    return _HOST_NAME.search(text) is not None


# -- the role of a clause in a request written in sentences (``text.classify``) -------------------------
# Ordered: the first role whose pattern matches a clause decides its role and requirement type.
ROLE_RULES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (role, rtype, re.compile(pat, re.I)) for role, rtype, pat in [
        ("app", "output", r"^(?:build|create|make|design|develop|write|implement)\b"),
        ("feedback", "output", r"\b(feedback|highlight\w*|animat\w*|messages?|alerts?|notif\w*|reveal\w*|"
                               r"indicat\w*|reflected)\b"),
        ("timing", "rule", r"\b(timer|countdown|seconds?|minutes?|clock|stopwatch|interval|duration|speed)\b"),
        ("scoring", "calculation", r"\b(score|points?|accuracy|percentage|average|total|sum|statistics|stats|"
                                   r"calculat\w*|comput\w*|divided)\b"),
        ("input", "interaction", r"\b(select\w*|click\w*|choos\w*|enter|type|drag\w*|drop|add|remov\w*|delet\w*|"
                                 r"edit\w*|toggl\w*|submit\w*|upload|press\w*|tap|search\w*|filter\w*|sort\w*|"
                                 r"start|pause|reset|play|mov\w*|guess\w*|adjust\w*|slider|change|let the user|"
                                 r"open)\b"),
        ("validation", "rule", r"\b(valid\w*|correct|incorrect|wrong|rules?|constraints?|satisf\w*|errors?|"
                               r"reject\w*|prevent\w*|must not|never)\b"),
        ("persistence", "state", r"\b(sav\w*|persist\w*|localstorage|local storage|history|undo|redo|seed)\b"),
        ("display", "output", r"\b(display\w*|show\w*|render\w*|charts?|graphs?|plots?|lists?|tables?|views?|"
                              r"visual\w*|board|grid|maps?|cards?|panels?|lay out|layout|labels?|help text)\b"),
        ("state", "state", r"\b(track\w*|state|progress|modes?|levels?|difficulty|status|current|session)\b"),
        ("constraint", "constraint", r"\b(only|single|self-contained|no external|without|at most|at least|"
                                     r"up to|maximum|minimum|usable|responsive|simple)\b"),
    ])

# -- numbers ------------------------------------------------------------------------------------------------
NUMBER = r"-?\d+(?:\.\d+)?"  # a number as a query states it: 5, -0.25
_NUMBER = re.compile(NUMBER)


def is_number(text: str) -> bool:
    """``text`` is a number and nothing else (no spaces): "-0.25" yes, "0.25 m" no."""
    return _NUMBER.fullmatch(text) is not None


# The defaults the offline expansion (``tasks/rubrics/expansion.py``) writes into the expanded query, named: the rubric rules say of each whether a check can decide
# it (``tasks/rubrics/capabilities.py``).
SCORE_DEFAULT = "Each correct answer adds one point to the score."
TIMER_DEFAULT = "The timer counts down from 60 seconds."
ACCURACY_DEFAULT = "Accuracy is the number of correct answers divided by all answers, shown as a percentage."
SAVED_DEFAULT = "Saved data is kept in the browser's localStorage and restored on reload."
