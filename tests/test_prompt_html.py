"""Table tests of the HTML a query shows (issue #41): ``prompt_html`` parses it with tree-sitter-html and
``queries/prompt_html.scm``, ``prompt_controls.html_facts`` reads each id's tag, attributes, label, inner text and
options from it, and falls back on the prose rules for ids no parse ties to a tag. Each row is (snippet, id,
the facts expected)."""
from __future__ import annotations

import pytest

from tasks.rubrics.prompt_controls import _Facts, html_facts
from tasks.rubrics.prompt_html import fragments, line_starts, parse

# What the parse gives: the tag an id="..." is written in, its attributes, and the text of labels, elements and
# options.
PARSED = [
    ('<input type="range" id="mass" min="0" max="10" step="0.5" value="2">', "mass",
     _Facts("input", {"type": "range", "id": "mass", "min": "0", "max": "10", "step": "0.5", "value": "2"})),
    ("<INPUT Type=checkbox id='grid' checked>", "grid", _Facts("input", {"type": "checkbox", "id": "grid", "checked": ""})),
    ('<input type="number" id="n" value="5"/>', "n", _Facts("input", {"type": "number", "id": "n", "value": "5"})),
    # Where the regexes before tree-sitter read it wrong (main: no tag; an inner text under the data-id; a selected
    # option because its value says "selected"; the attributes after a ">" in a quoted value lost).
    ('<input type="range"\n       id="len" min="1">', "len", _Facts("input", {"type": "range", "id": "len", "min": "1"})),
    ('<span id="a" data-id="b">x</span>', "a", _Facts("span", {"id": "a", "data-id": "b"}, inner="x")),
    ('<select id="s"><option value="selected">Selected</option><option>B</option></select>', "s",
     _Facts("select", {"id": "s"}, options=["Selected", "B"])),
    ('<input id="x" title="a > b" type="range">', "x", _Facts("input", {"id": "x", "title": "a > b", "type": "range"})),
    ('<label for="mass">Mass (kg)</label> <input type="range" id="mass">', "mass",
     _Facts("input", {"type": "range", "id": "mass"}, label="Mass (kg)")),
    ('<label for="mass">\n  Mass\n</label>', "mass", _Facts(label="Mass")),
    ('<label for="mass">' + "x" * 81 + "</label>", "mass", None),
    ('<button class="big" id="go">Go!</button>', "go", _Facts("button", {"class": "big", "id": "go"}, inner="Go!")),
    ('<BUTTON ID="go">Go</BUTTON>', "go", _Facts(inner="Go")),
    ('<p id="out">Value: <span id="v">0</span></p>', "out", _Facts("p", {"id": "out"})),
    ('<p id="out">Value: <span id="v">0</span></p>', "v", _Facts("span", {"id": "v"}, inner="0")),
    ('<select id="m"><option value="e">Euler</option><option value="r" selected>RK4</option></select>', "m",
     _Facts("select", {"id": "m"}, options=["Euler", "RK4"], selected="RK4")),
    ('- `<select id="s">`\n  - `<option>A</option>`\n  - `<option selected>B</option>`\n- `</select>`', "s",
     _Facts("select", {"id": "s"}, options=["A", "B"], selected="B")),
    ('<select id="s"><option>A</option>', "s", _Facts("select", {"id": "s"})),
    ("Load p5 with a `<script>` tag.\n- `<canvas id=\"c\">`", "c", _Facts("canvas", {"id": "c"})),
    ('- `<script src="p5.js">` for the drawing\n- `<canvas id="c">`', "c", _Facts("canvas", {"id": "c"})),
    ('for (i = 0; i<n; i++) {}\n<button id="b">Go</button>', "b", _Facts("button", {"id": "b"}, inner="Go")),
    ('θ – <label for="a">Angle θ</label> `<input type="range" id="a">`', "a",
     _Facts("input", {"type": "range", "id": "a"}, label="Angle θ")),
]


@pytest.mark.parametrize("snippet,cid,facts", PARSED)
def test_html_facts_reads_the_parsed_html(snippet, cid, facts):
    assert html_facts(snippet).get(cid) == facts


# What prose gives an id no parse ties to a tag (``_prose_tag``): the last tag before it on its line, else a tag
# named without brackets just before it, with every word after it up to 80 characters read as an attribute.
PROSE = [
    ('A `<canvas>` element with `id="c"`.', "c", _Facts("canvas", {})),
    ('- `<input type="range">` with `id="slider-t"`', "slider-t", _Facts("input", {"type": "range"})),
    ('`input type="range" id="slider-a"`', "slider-a", _Facts("input", {"input": "", "type": "range", "id": "slider-a"})),
    ('`input` id="a" type="checkbox" checked', "a",
     _Facts("input", {"input": "", "id": "a", "type": "checkbox", "checked": ""})),
    ('A `<div>` with `id="plot"`.\n<canvas id="plot"></canvas>', "plot", _Facts("div", {})),
    ('`id="speed"`: the speed slider', "speed", _Facts()),
    ('`id="x"`: a `<div>` for the plot', "x", _Facts()),
    ('Redraw while x<y holds;\n`id="r"`: the speed slider', "r", _Facts()),
]


@pytest.mark.parametrize("snippet,cid,facts", PROSE)
def test_html_facts_falls_back_on_prose(snippet, cid, facts):
    assert html_facts(snippet)[cid] == facts


@pytest.mark.parametrize("snippet,ids", [
    ('<button class="big" id="go">Go!</button>', ["go"]), ('<label for="m">Mass</label>', ["m"]),
    ('<select name="s"><option>A</option></select>', []), ('<p>Mass: <span id="v">0</span></p>', ["v"])])
def test_html_facts_names_the_ids_it_reads_and_no_other_attribute(snippet, ids):
    assert list(html_facts(snippet)) == ids


FRAGMENTS = [
    ("intro\n- `<select id=\"s\">`\n  - `<option>A</option>`\n- `</select>`\nsee `x<y` here\nafter",
     ["intro\n- `<select id=\"s\">`\n  - `<option>A</option>`\n- `</select>`\n", "see `x<y` here\n"]),
    ("a `<b>` c\nd `<e>`", ["a `<b>` c\n", "d `<e>`"]),
    ("no tags\nat all", []),
    ("1. `<p>`\n\n<div>\nplain\n</div>", ["1. `<p>`\n\n<div>\nplain\n</div>"]),
]


@pytest.mark.parametrize("text,expected", FRAGMENTS)
def test_fragments_keep_a_tag_in_a_sentence_to_its_line(text, expected):
    assert [text[a:b] for a, b in fragments(text, line_starts(text))] == expected


def test_a_script_left_open_is_cut_at_its_line():
    text = '- `<script src="p5.js">`\n- `<canvas id="c">`'
    assert parse(text).raw_open == text.index("`\n")
    assert [t.name for t in parse('<script>x</script>\n<canvas id="c">').tags] == ["script", "canvas"]
