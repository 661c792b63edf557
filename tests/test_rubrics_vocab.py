"""The offline rules' vocabularies and patterns as data (issue #41): each vocabulary has one owner
(``tasks/rubrics/vocab.py``) and a table of what its reader says of a text; each pattern of the offline rules
is a named module-level constant with a table of snippets it matches and does not; no rule writes a pattern
inside a function body, and no vocabulary is written twice."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tasks.rubrics import vocab as V
from tasks.rubrics.prompt_controls import _Facts, _kind
from tasks.rubrics.text import classify

REPO = Path(__file__).resolve().parent.parent
# The offline rules: what the two rules below hold for.
RULE_FILES = sorted(str(p.relative_to(REPO)) for p in (REPO / "tasks" / "rubrics").glob("*.py")) + \
    ["tasks/sft/teacher.py", "tasks/env/rubric_evidence.py"]
PATTERN_FNS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}


# -- no pattern written inside a function -------------------------------------------------------------------
def _has_literal(node: ast.AST) -> bool:
    return any(isinstance(n, ast.JoinedStr) or isinstance(n, ast.Constant) and isinstance(n.value, str)
               for n in ast.walk(node))


def inline_patterns(source: str) -> list[int]:
    """Lines of a function body (or lambda) that compile a pattern, or call ``re`` with a pattern written
    there (a literal, or built from one). A pattern around an escaped value (``_BEFORE + re.escape(x)``) whose
    fixed parts are named module constants is not one."""
    out = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for c in ast.walk(fn):
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name) \
                    and c.func.value.id == "re" and c.func.attr in PATTERN_FNS \
                    and (c.func.attr == "compile" or c.args and _has_literal(c.args[0])):
                out.append(c.lineno)
    return sorted(set(out))


def test_no_pattern_is_written_inside_a_function():
    """On main before #41: 38 lines (43 calls): prompt_controls 14, prompt_spec 10, teacher 6, checks_offline 5,
    rubric_evidence 2, expansion 1."""
    found = {f: lines for f in RULE_FILES if (lines := inline_patterns((REPO / f).read_text(encoding="utf-8")))}
    assert found == {}, f"patterns written inside functions (make them named module constants): {found}"


# -- no vocabulary written twice ----------------------------------------------------------------------------
# Words that belong to one vocabulary of the table only: a module other than its owner that writes one
# in a word table or a pattern keeps a copy of that vocabulary.
SIGNATURES = {"start words": {"resume"}, "stop words": {"pause"}, "id kind words": {"lbl", "val"},
              "motion words": {"bounc", "oscillat", "orbit", "itself"}, "drawing hosts": {"p5", "plotly"}}
NUMBER_PATTERN = r"\d+(?:\.\d+)?"
HALF_STEP = 0.51


def _vocabulary_strings(tree: ast.Module) -> list[str]:
    """The strings of a module that hold words of a vocabulary: patterns (an alternation) and the strings of
    word tables (a set, or a tuple or list of three or more strings, or ``"a b c".split()``)."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and "|" in n.value:
            out.append(n.value)
        elif isinstance(n, (ast.Set, ast.Tuple, ast.List)):
            words = [e.value for e in n.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if isinstance(n, ast.Set) or len(words) >= 3:
                out += words
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "split" \
                and isinstance(n.func.value, ast.Constant) and isinstance(n.func.value.value, str):
            out.append(n.func.value.value)
    return out


def _word_sets(tree: ast.Module) -> list[frozenset[str]]:
    """The literal word sets of a module: ``{"a", "b", "c"}``, ``frozenset("a b c".split())``."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Set):
            out.append(frozenset(e.value for e in n.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("set", "frozenset") and n.args:
            arg = n.args[0]
            if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "split" \
                    and isinstance(arg.func.value, ast.Constant):
                out.append(frozenset(arg.func.value.value.split()))
    return [s for s in out if len(s) >= 3]


def vocabulary_copies(sources: dict[str, str]) -> list[str]:
    """Each copy of a vocabulary beyond the first: a signature word in a second module, the number pattern or
    the half step written a second time, two modules' word sets sharing three words."""
    trees = {f: ast.parse(s) for f, s in sources.items()}
    out = []
    for name, words in SIGNATURES.items():
        holders = [f for f, t in trees.items()
                   if words & {w for s in _vocabulary_strings(t) for w in re.findall(r"[a-z0-9]+", s.lower())}]
        out += [f"{name}: {f}" for f in holders[1:]]
    constants = [(f, n.value) for f, t in trees.items() for n in ast.walk(t) if isinstance(n, ast.Constant)]
    number = [f for f, v in constants if isinstance(v, str) and NUMBER_PATTERN in v]
    out += [f"the number pattern: {f}" for f in number[1:]]
    half = [f for f, v in constants if isinstance(v, float) and v == HALF_STEP]
    out += [f"half a step: {f}" for f in half[1:]]
    sets = [(f, s) for f, t in trees.items() for s in _word_sets(t)]
    out += [f"word set {sorted(a & b)}: {f} and {g}" for i, (f, a) in enumerate(sets) for g, b in sets[i + 1:]
            if f != g and len(a & b) >= 3]
    return out


def test_each_vocabulary_is_written_once():
    """On main before #41: 10 (start words in teacher; stop words in text and teacher; motion words in
    rubric_evidence; drawing hosts in teacher; the number pattern 3 more times; half a step once more; the id
    kind words' sets of prompt_spec and teacher)."""
    copies = vocabulary_copies({f: (REPO / f).read_text(encoding="utf-8") for f in RULE_FILES})
    assert copies == [], copies


# -- the vocabularies' readers ------------------------------------------------------------------------------
@pytest.mark.parametrize("text,says", [
    ("Play", True), ("btn-run", True), ("starts the animation", True), ("Resume", True), ("animate", True),
    ("restart", False), ("running", False), ("Reset", False), ("Pause", False), ("player", False)])
def test_says_start_reads_whole_words_resume_included(text, says):
    assert V.says_start(text) is says


@pytest.mark.parametrize("name,resume,says", [
    ("btn-play", False, True), ("startButton", False, True), ("restart", False, True), ("animateBtn", False, True),
    ("btn-resume", False, False), ("btn-resume", True, True), ("btn-reset", True, False), ("btn-pause", True, False)])
def test_start_name_reads_part_of_a_word(name, resume, says):
    assert V.start_name(name, resume=resume) is says


@pytest.mark.parametrize("name,says", [("btn-pause", True), ("stopBtn", True), ("btn-play", False), ("reset", False)])
def test_stop_name(name, says):
    assert V.stop_name(name) is says


@pytest.mark.parametrize("text,says", [
    ("btn-reset Reset", True), ("Pause", True), ("Restore defaults", True), ("clear-canvas", True), ("undo", True),
    ("Stopping", True), ("reset to default values", True), ("slider-speed", False), ("Start", False),
    ("default value", True), ("defaults", False)])
def test_no_effect_names_a_reset_or_a_pause(text, says):
    assert (V.NO_EFFECT.search(text) is not None) is says


@pytest.mark.parametrize("cid,stem", [
    ("slider-length", ("length",)), ("length-value", ("length",)), ("massSlider", ("mass",)),
    ("lbl_theta.val", ("theta",)), ("btn-reset", ("btn", "reset")), ("readout", ()), ("n2Input", ("n2",))])
def test_id_stem_leaves_out_the_kind_words(cid, stem):
    assert V.id_stem(cid) == stem


@pytest.mark.parametrize("cid,shape", [
    ("label-radius", "label-*"), ("value-a-b", "value-*"), ("Length-Display", "*-display"), ("speed", "*"),
    ("slider_mass", "slider_*")])
def test_id_shape_stars_what_the_id_is_about(cid, shape):
    assert V.id_shape(cid) == shape


@pytest.mark.parametrize("a,b,kind_words,shared", [
    ("value-ac", "slider-ac", V.TEACHER_PAIR_KIND_WORDS, True), ("value-display", "slider-value",
                                                                  V.TEACHER_PAIR_KIND_WORDS, False),
    ("slider-ac", "ac-value", V.CHECK_PAIR_KIND_WORDS, True), ("slider-ac", "value-display", V.CHECK_PAIR_KIND_WORDS,
                                                               False),
    ("label-mass", "slider-mass", V.CHECK_PAIR_KIND_WORDS, True), ("text-a", "text-b", V.TEACHER_PAIR_KIND_WORDS, False),
    ("text-a", "text-b", V.CHECK_PAIR_KIND_WORDS, True)])
def test_shares_subject_leaves_out_the_pairing_kind_words(a, b, kind_words, shared):
    assert V.shares_subject(a, b, kind_words) is shared


@pytest.mark.parametrize("text,says", [
    ("p5-container", True), ("threeContainer", True), ("sketch-holder", True), ("main-canvas", True),
    ("plot-area", False), ("svg-diagram", False)])
def test_names_drawing_host(text, says):
    assert V.names_drawing_host(text) is says


@pytest.mark.parametrize("text,says", [
    ("5", True), ("-0.25", True), ("10.0", True), ("0.25 m", False), (" 5", False), ("1e3", False), ("", False),
    (".5", False), ("5.", False)])
def test_is_number(text, says):
    assert V.is_number(text) is says


@pytest.mark.parametrize("text,role", [
    ("Build a Pomodoro timer app", "app"), ("Highlight the winning row", "feedback"),
    ("Count down from 25 minutes", "timing"), ("Compute the average of the marks", "scoring"),
    ("Pause the game on demand", "input"), ("Reject an invalid answer", "validation"),
    ("Save the history between visits", "persistence"), ("Display the board", "display"),
    ("Track the current level", "state"), ("Only one file", "constraint"), ("Be delightful", "behaviour")])
def test_role_rules_first_match_decides(text, role):
    assert classify(text)[0] == role


@pytest.mark.parametrize("cid,near,kind", [
    ("speed-value", "", "output"), ("slider-mass", "", "range"), ("btn-go", "", "button"), ("chk-grid", "", "checkbox"),
    ("radio-a", "", "radio"), ("menu-shape", "", "select"), ("mainCanvas", "", "canvas"), ("input-name", "", "text"),
    ("mass", "a slider for the mass", "range"), ("grid", "a toggle switch", "checkbox"), ("mode", "a drop-down", "select"),
    ("go", "the Go button", "button"), ("n", "a number input", "number"), ("name", "a text field", "text"),
    ("total", "displays the total", "output"), ("chart", "the plot of x", "area"), ("wrap", "layout", "container"),
    ("input-canvas", "", "canvas"), ("result-area", "", "output")])  # vocab.ID_KIND_AFFIXES: first kind wins
def test_an_elements_kind_from_its_id_else_the_words_around_it(cid, near, kind):
    assert _kind(cid, _Facts(), near, "") == kind


@pytest.mark.parametrize("reader", ["PLAN_TRIGGER", "PLAN_PROMPTED", "ITEM_PROMPTED", "REQUEST_ANSWERS_INPUT"])
@pytest.mark.parametrize("text", ["click the ball", "clicking", "drag the point", "dragging it"])
def test_every_reader_of_input_counts_the_users_actions(reader, text):
    """The four input-word tables share one base (``INPUT_ACTION_WORDS``), each adding the words it reads."""
    assert getattr(V, reader).search(text)


@pytest.mark.parametrize("query,fenced,code", [
    ("text\n```js\nx = 1\n```\nafter", {1: (4, True)}, ["x = 1"]),
    ("````\n```\ninner\n```\n````", {0: (5, True)}, ["```\ninner\n```"]),
    ("~~~\n```\n~~~", {0: (3, True)}, ["```"]),
    ("```\nunclosed", {0: (2, False)}, ["unclosed"]), ("```", {0: (1, False)}, []),
    ("- item\n  ```\n  code\n  ```", {1: (4, True)}, ["  code"]),
    ("no code `inline`", {}, []), ("    ```\n    indented", {}, [])])
def test_fenced_code_as_commonmark_reads_it(query, fenced, code):
    from tasks.rubrics.prompt_outline import fences, outline

    assert fences(query.splitlines()) == fenced
    assert outline(query).code == code


# -- every pattern: a table of what it matches and what it does not ------------------------------------------
PATTERNS = [  # (module, name, text, matches); module under tasks/, name a module constant (or NAME[key])
    ("rubrics.vocab", "_SAYS_START", "Play", True), ("rubrics.vocab", "_SAYS_START", "restart", False),
    ("rubrics.vocab", "_START_NAME", "btnPlay", True), ("rubrics.vocab", "_START_NAME", "btn-resume", False),
    ("rubrics.vocab", "_START_OR_RESUME_NAME", "btn-resume", True),
    ("rubrics.vocab", "_START_OR_RESUME_NAME", "btn-reset", False),
    ("rubrics.vocab", "_STOP_NAME", "btn-stop", True), ("rubrics.vocab", "_STOP_NAME", "btn-go", False),
    ("rubrics.vocab", "NO_EFFECT", "Reset", True), ("rubrics.vocab", "NO_EFFECT", "Play", False),
    ("rubrics.vocab", "_ID_SEP", "a-b", True), ("rubrics.vocab", "_ID_SEP", "a.b", False),
    ("rubrics.vocab", "_ID_PARTS", "a.b", True), ("rubrics.vocab", "_ID_PARTS", "ab", False),
    ("rubrics.vocab", "_CAMEL", "massSlider", True), ("rubrics.vocab", "_CAMEL", "mass-slider", False),
    ("rubrics.vocab", "_ID_WORD", "a1", True), ("rubrics.vocab", "_ID_WORD", "--", False),
    ("rubrics.vocab", "_STARS", "*-*", True), ("rubrics.vocab", "_STARS", "label-*", False),
    ("rubrics.vocab", "MOTION", "a bouncing DVD logo", True), ("rubrics.vocab", "MOTION", "falling snow", True),
    ("rubrics.vocab", "MOTION", "a timer that counts down", True), ("rubrics.vocab", "MOTION", "a countdown", False),
    ("rubrics.vocab", "MOTION", "a static bar chart", False),
    ("rubrics.vocab", "PLAN_MOTION", "the planet orbits the sun", True),
    ("rubrics.vocab", "PLAN_MOTION", "the ball travelling", True),
    ("rubrics.vocab", "PLAN_MOTION", "an animation loop", False),
    ("rubrics.vocab", "ITEM_MOTION", "particles drift", True), ("rubrics.vocab", "ITEM_MOTION", "the button is blue", False),
    ("rubrics.vocab", "BY_ITSELF", "it moves by itself over time", True),
    ("rubrics.vocab", "BY_ITSELF", "it starts on page load", False),
    ("rubrics.vocab", "QUERY_BY_ITSELF", "it starts on page load", True),
    ("rubrics.vocab", "QUERY_BY_ITSELF", "the ball starts moving", True),
    ("rubrics.vocab", "QUERY_BY_ITSELF", "when the user clicks", False),
    ("rubrics.vocab", "_HOST_NAME", "p5-holder", True), ("rubrics.vocab", "_HOST_NAME", "plot-area", False),
    ("rubrics.vocab", "HOLDS_DRAWING", "the div that hosts the p5 canvas", True),
    ("rubrics.vocab", "HOLDS_DRAWING", "contains the Plotly chart", True),
    ("rubrics.vocab", "HOLDS_DRAWING", "a container for the controls", False),
    ("rubrics.vocab", "_NUMBER", "-2.5", True), ("rubrics.vocab", "_NUMBER", "two", False),
    ("rubrics.check_locators", "_CSS_SPECIAL", "a.b", True), ("rubrics.check_locators", "_CSS_SPECIAL", "a-b_c", False),
    ("rubrics.check_locators", "_STARTS", "start quiz", True), ("rubrics.check_locators", "_STARTS", "restart", False),
    ("rubrics.expansion", "_DIGIT", "60 seconds", True), ("rubrics.expansion", "_DIGIT", "a minute", False),
    ("rubrics.expansion", "QUALITATIVE", "a random card", True), ("rubrics.expansion", "QUALITATIVE", "five cards", False),
    ("rubrics.prompt_controls", "ID_DECL", 'id="slider-mass"', True),
    ("rubrics.prompt_controls", "ID_DECL", "the mass slider", False),
    ("rubrics.prompt_controls", "_BARE_TAG", '`span id="x"`', True),
    ("rubrics.prompt_controls", "_BARE_TAG", 'a span with id "x"', False),
    ("rubrics.prompt_controls", "_BARE_ATTR", 'min="0"', True), ("rubrics.prompt_controls", "_BARE_ATTR", "= 0", False),
    ("rubrics.prompt_html", "_NON_ASCII", "θ", True), ("rubrics.prompt_html", "_NON_ASCII", "theta", False),
    ("rubrics.prompt_html", "_TAG_FIRST", "  - `<option>A</option>`", True),
    ("rubrics.prompt_html", "_TAG_FIRST", "a `<script>` tag", False),
    ("rubrics.prompt_controls", "_BUTTON_ON", "is active by default", True),
    ("rubrics.prompt_controls", "_BUTTON_ON", "becomes active when clicked", False),
    ("rubrics.prompt_controls", "_CHECKED_SAID", "default: unchecked", True),
    ("rubrics.prompt_controls", "_CHECKED_SAID", "toggles the grid", False),
    ("rubrics.prompt_controls", "_OPTION_SAID", 'default value: "Euler"', True),
    ("rubrics.prompt_controls", "_OPTION_SAID", "options: Euler, RK4", False),
    ("rubrics.prompt_controls", "_NUMBER_SAID", "initial value is 5", True),
    ("rubrics.prompt_controls", "_NUMBER_SAID", "initial value is five", False),
    ("rubrics.prompt_controls", "_TEXT_SAID", 'default text: "Hello"', True),
    ("rubrics.prompt_controls", "_TEXT_SAID", "default text: Hello", False),
    ("rubrics.prompt_controls", "_OUTPUT_TEXT_SAID", 'initial text: "0 m"', True),
    ("rubrics.prompt_controls", "_OUTPUT_TEXT_SAID", "initial text: 0", False),
    ("rubrics.prompt_controls", "_OUTPUT_NUMBER_SAID", "initial value: 0.5", True),
    ("rubrics.prompt_controls", "_OUTPUT_NUMBER_SAID", "value: 0.5", False),
    ("rubrics.prompt_controls", "_LABEL_SAID", 'label: "Mass (kg)"', True),
    ("rubrics.prompt_controls", "_LABEL_SAID", "label: Mass", False),
    ("rubrics.prompt_controls", "_BOUND_SAID[min]", "min: 0", True),
    ("rubrics.prompt_controls", "_BOUND_SAID[min]", "minimum of 0", False),
    ("rubrics.prompt_controls", "_BOUND_SAID[max]", "max=10", True),
    ("rubrics.prompt_controls", "_BOUND_SAID[max]", "max 10", False),
    ("rubrics.prompt_controls", "_BOUND_SAID[step]", "step size: 0.1", True),
    ("rubrics.prompt_controls", "_BOUND_SAID[step]", "steps: 0.1", False),
    ("rubrics.prompt_controls", "_RANGE_SAID", "range from 1 to 10", True),
    ("rubrics.prompt_controls", "_RANGE_SAID", "range of motion", False),
    ("rubrics.prompt_controls", "_OPTIONS_SAID", "options: A, B", True),
    ("rubrics.prompt_controls", "_OPTIONS_SAID", "optional", False),
    ("rubrics.prompt_controls", "_QUOTED_OPTION", '"Euler"', True), ("rubrics.prompt_controls", "_QUOTED_OPTION", "Euler", False),
    ("rubrics.prompt_controls", "_OPTION_SEP", "A or B", True), ("rubrics.prompt_controls", "_OPTION_SEP", "Border", False),
    ("rubrics.prompt_controls", "_DRAWN_ID", "plot-area", True), ("rubrics.prompt_controls", "_DRAWN_ID", "controls", False),
    ("rubrics.prompt_controls", "_LAYOUT_ID", "app-canvas", True),
    ("rubrics.prompt_controls", "_LAYOUT_ID", "canvas-wrap", False),
    ("rubrics.prompt_outline", "_HEADING", "## Controls", True), ("rubrics.prompt_outline", "_HEADING", "#id", False),
    ("rubrics.prompt_outline", "_BOLD_HEADING", "**Controls**:", True),
    ("rubrics.prompt_outline", "_BOLD_HEADING", "**Mass** sets the weight", False),
    ("rubrics.prompt_outline", "_BULLET", "  - item", True), ("rubrics.prompt_outline", "_BULLET", "-item", False),
    ("rubrics.prompt_outline", "_RULE", "---", True), ("rubrics.prompt_outline", "_RULE", "--", False),
    ("rubrics.prompt_outline", "_MARKUP", "**bold**", True), ("rubrics.prompt_outline", "_MARKUP", "plain", False),
    ("rubrics.prompt_formats", "_STATED", "a new line, formatted as: `s   code`", True),
    ("rubrics.prompt_formats", "_STATED", "the line format is s then code", False),
    ("rubrics.prompt_formats", "_NAMED", "appended to the `#output-results` element", True),
    ("rubrics.prompt_formats", "_NAMED", "appended to the results element", False),
    ("rubrics.prompt_tables", "_ID_HEADER", "Element ID", True), ("rubrics.prompt_tables", "_ID_HEADER", "Body", False),
    ("rubrics.prompt_tables", "COLUMNS[kind]", "Type", True), ("rubrics.prompt_tables", "COLUMNS[kind]", "Label", False),
    ("rubrics.prompt_tables", "COLUMNS[default]", "Default Value", True),
    ("rubrics.prompt_tables", "COLUMNS[default]", "Description", False),
    ("rubrics.prompt_tables", "COLUMNS[min]", "Minimum", True), ("rubrics.prompt_tables", "COLUMNS[min]", "Label", False),
    ("rubrics.prompt_tables", "COLUMNS[max]", "Max", True), ("rubrics.prompt_tables", "COLUMNS[max]", "Min", False),
    ("rubrics.prompt_tables", "COLUMNS[step]", "Step", True), ("rubrics.prompt_tables", "COLUMNS[step]", "Steps", False),
    ("rubrics.prompt_tables", "_CELL_MARKUP", "`range`", True), ("rubrics.prompt_tables", "_CELL_MARKUP", "range", False),
    ("rubrics.prompt_tables", "_TABLE_ID", "slider-rmsd", True),
    ("rubrics.prompt_tables", "_TABLE_ID", "jump to a residue", False),
    ("rubrics.prompt_spec", "FORMAT", "in a single HTML file", True), ("rubrics.prompt_spec", "FORMAT", "a Pong game", False),
    ("rubrics.vocab", "PLAN_TRIGGER", "when the slider changes", True),
    ("rubrics.vocab", "PLAN_TRIGGER", "The canvas is blue", False),
    ("rubrics.prompt_spec", "_INTERACTION_SECTION", "Interaction Logic", True),
    ("rubrics.prompt_spec", "_INTERACTION_SECTION", "Layout", False),
    ("rubrics.prompt_spec", "_DRAWING", "the canvas is redrawn", True),
    ("rubrics.prompt_spec", "_DRAWING", "the value label shows 5", False),
    ("rubrics.prompt_spec", "_TEXT", "its textContent", True), ("rubrics.prompt_spec", "_TEXT", "redraw the plot", False),
    ("rubrics.prompt_spec", "_GLOBAL", "any change to a slider's value", True),
    ("rubrics.prompt_spec", "_GLOBAL", "the mass slider", False),
    ("rubrics.prompt_spec", "_KEY", "press the space bar", True), ("rubrics.prompt_spec", "_KEY", "press Start", False),
    ("rubrics.vocab", "PLAN_PROMPTED", "when the user clicks", True),
    ("rubrics.vocab", "PLAN_PROMPTED", "it moves continuously", False),
    ("rubrics.vocab", "REQUEST_ANSWERS_INPUT", "a Flappy Bird game", True),
    ("rubrics.vocab", "REQUEST_ANSWERS_INPUT", "a bouncing DVD logo", False),
    ("rubrics.prompt_spec", "_KEYS_SUFFIX", "arrow keys", True), ("rubrics.prompt_spec", "_KEYS_SUFFIX", "keyboard", False),
    ("rubrics.prompt_spec", "_NAMED_UI", "a seed field", True), ("rubrics.prompt_spec", "_NAMED_UI", "the seed", False),
    ("rubrics.prompt_spec", "_LABELLED_BUTTONS", "Start and Stop buttons", True),
    ("rubrics.prompt_spec", "_LABELLED_BUTTONS", "two buttons", False),
    ("rubrics.prompt_spec", "_LABEL_LIST_SEP", "Start, Stop", True), ("rubrics.prompt_spec", "_LABEL_LIST_SEP", "Start", False),
    ("rubrics.prompt_spec", "_QUOTED", '"Start"', True), ("rubrics.prompt_spec", "_QUOTED", '"start"', False),
    ("rubrics.prompt_spec", "_SHOWS_VALUE", "shows the current value", True),
    ("rubrics.prompt_spec", "_SHOWS_VALUE", "a label for the slider", False),
    ("rubrics.prompt_spec", "_FORMAT_LEAD_IN", "a Pong game in a", True),
    ("rubrics.prompt_spec", "_FORMAT_LEAD_IN", "a Pong game", False),
    ("rubrics.prompt_spec", "_CALL", "calls `updatePlot()`", True), ("rubrics.prompt_spec", "_CALL", "update the plot", False),
    ("rubrics.prompt_spec", "_LEADING_CALL", "`updatePlot()`: redraws", True),
    ("rubrics.prompt_spec", "_LEADING_CALL", "no call here", False),
    ("rubrics.text", "_NON_WORD", "a, b", True), ("rubrics.text", "_NON_WORD", "ab", False),
    ("rubrics.text", "_ELLIPSIS", "a ... b", True), ("rubrics.text", "_ELLIPSIS", "a. b", False),
    ("rubrics.text", "_SENTENCE", "Done. Next", True), ("rubrics.text", "_SENTENCE", "e.g. next", False),
    ("rubrics.text", "_LEAD_INS", "It must", True), ("rubrics.text", "_LEAD_INS", "Show the score", False),
    ("rubrics.text", "_APP_SENTENCE", "Build a Pomodoro timer app", True),
    ("rubrics.text", "_APP_SENTENCE", "A Pomodoro timer", False),
    ("rubrics.text", "_CONDITIONAL", "when clicked", True), ("rubrics.text", "_CONDITIONAL", "always", False),
    ("rubrics.text", "_VERB_OBJECT", "Display five cards", True), ("rubrics.text", "_VERB_OBJECT", "Go", False),
    ("rubrics.text", "_STOP", "cards so that", True), ("rubrics.text", "_STOP", "five cards", False),
    ("sft.teacher", "_HAS_ID_SEP", "radio-a", True), ("sft.teacher", "_HAS_ID_SEP", "radio1", False),
    ("sft.teacher", "_LAST_ID_PART", "radio-euler-0", True), ("sft.teacher", "_LAST_ID_PART", "radio", False),
    ("sft.teacher", "_TRAILING_DIGITS", "step1", True), ("sft.teacher", "_TRAILING_DIGITS", "step", False),
    ("rubrics.vocab", "ITEM_PROMPTED", "after a click", True), ("rubrics.vocab", "ITEM_PROMPTED", "it spins", False),
    ("rubrics.vocab", "ITEM_ANSWERS_INPUT", "The scene answers input", True),
    ("rubrics.vocab", "ITEM_ANSWERS_INPUT", "The scene answers", False),
    ("env.rubric_evidence", "_SHOWN_ON_LOAD", "The page draws the scene when it loads", True),
    ("env.rubric_evidence", "_SHOWN_ON_LOAD", "The page draws the scene", False),
    ("env.rubric_evidence", "_ID", "the slider #mass", True), ("env.rubric_evidence", "_ID", "&#39;", False),
    ("env.rubric_evidence", "_LABELLED", 'a button labelled "Go"', True),
    ("env.rubric_evidence", "_LABELLED", "a button labelled Go", False),
    ("env.rubric_evidence", "_HEX", "ff00aa", True), ("env.rubric_evidence", "_HEX", "mass", False),
]

def _pattern(module: str, name: str) -> re.Pattern[str]:
    mod = importlib.import_module("tasks." + module)
    base, _, key = name.partition("[")
    value = getattr(mod, base)
    return value[key.rstrip("]")] if key else value


@pytest.mark.parametrize("module,name,text,matches", PATTERNS)
def test_each_pattern_matches_what_it_names(module, name, text, matches):
    m = _pattern(module, name).search(text)
    assert bool(m and m.group(0)) is matches  # an empty match (a pattern of optional parts) takes nothing


def test_every_pattern_of_the_rules_has_a_table():
    """Each pattern the rule modules define (a module constant, or a dict of them) has a matching and a
    non-matching row above."""
    defined = set()
    for f in RULE_FILES:
        module = f.removeprefix("tasks/").removesuffix(".py").replace("/", ".")
        for name, value in vars(importlib.import_module("tasks." + module)).items():
            if isinstance(value, re.Pattern) and re.search(rf"^{re.escape(name)}\b", (REPO / f).read_text(), re.M):
                defined.add((module, name))
            elif isinstance(value, dict) and value and all(isinstance(v, re.Pattern) for v in value.values()):
                defined |= {(module, f"{name}[{k}]") for k in value}
    rows: dict[tuple[str, str], set[bool]] = {}
    for module, name, _, matches in PATTERNS:
        rows.setdefault((module, name), set()).add(matches)
    assert [p for p in sorted(defined) if rows.get(p) != {True, False}] == []
